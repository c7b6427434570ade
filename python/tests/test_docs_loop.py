"""The CTC training loop of docs/python.md runs as written on the test dataset, and learns."""
import os
import re

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "python.md")


def doc_block(marker):
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- test: " + marker + r" -->\n```python\n(.*?)\n```", text, re.S)
    assert m, f"docs/python.md: no python block after <!-- test: {marker} -->"
    return m.group(1)


def test_documented_ctc_loop_runs_and_its_loss_falls(dataset, capsys):
    scope = {"DATASET": dataset}
    exec(compile(doc_block("ctc-loop"), "docs/python.md", "exec"), scope)
    losses = scope["losses"]
    per_epoch = len(scope["loader"])
    first, last = losses[:per_epoch], losses[-per_epoch:]
    assert len(losses) == 6 * per_epoch
    assert sum(last) / len(last) < 0.7 * sum(first) / len(first), (first, last)
    assert "epoch 5: loss" in capsys.readouterr().out
