"""The toy speech-LLM step of docs/python.md runs as written on conversations of espeak-ng speech
(a spoken word, a text prompt, the word as the answer) and its loss falls over 50 steps."""
import json
import shutil
import subprocess

import pytest
import torch

import sluice

from conftest import tool
from test_docs_loop import doc_block

WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
PREFIX_USER, PREFIX_ASSISTANT, END, PLACEHOLDER = 900, 902, 901, 999


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng (Debian package)")
def test_documented_speech_llm_step_runs_and_its_loss_falls(tmp_path):
    lines = []
    for i in range(36):  # each word at three speeds
        word, speed = WORDS[i % len(WORDS)], 130 + 40 * (i // len(WORDS))
        subprocess.run(["espeak-ng", "-v", "en", "-s", str(speed), "-w", str(tmp_path / f"u{i}.wav"),
                        word], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lines.append(json.dumps({"id": f"c{i}", "turns": [
            {"role": "user", "audio": {"path": f"u{i}.wav"}, "text": "which word"},
            {"role": "assistant", "text": word}]}))
    (tmp_path / "chats.jsonl").write_text("\n".join(lines) + "\n")
    sluice.shardify("conversations", tmp_path / "chats.jsonl", out=tmp_path / "ds",
                    tokenizer="char", binary=tool("shardify"))
    template = {"roles": {"user": {"prefix": {"ids": [PREFIX_USER]}, "suffix": {"ids": [END]}},
                          "assistant": {"prefix": {"ids": [PREFIX_ASSISTANT]},
                                        "suffix": {"ids": [END]}}},
                "placeholder": {"ids": [PLACEHOLDER]}}
    (tmp_path / "t.json").write_text(json.dumps(template))

    scope = {"DATASET": str(tmp_path / "ds"), "TEMPLATE": str(tmp_path / "t.json"), "STEPS": 50}
    # One torch thread: the loader's two decode threads share the 2 cores of CI with it, and
    # torch's spinning workers beside them make each tiny step several times slower. Without
    # oneDNN: Debian's torch 1.13 gives other gradients run to run through its convolution (the
    # same batches, losses apart from the second step on), and the check should not be luck.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.backends.mkldnn.flags(enabled=False):
            exec(compile(doc_block("speech-llm-step"), "docs/python.md", "exec"), scope)
    finally:
        torch.set_num_threads(threads)
    losses = scope["losses"]
    assert len(losses) == 50
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < 0.7 * first, (first, last)
    # The batches had audio, whose spans the step filled after checking their lengths.
    batch = next(iter(scope["loader"]))
    assert batch.audio_features is not None and len(batch.audio_lengths) > 0

    # The documented encoder is the declared spec: its real output length for the fbank frames
    # of n samples (Kaldi framing: 25 ms every 10 ms) is the spec's count, for many n.
    ns = list(range(1360, 40000, 97))
    counted = subprocess.run(
        [tool("sluice-features"), "encoder-frames", "--encoder-frames", "sluice", *map(str, ns)],
        capture_output=True, text=True, check=True).stdout
    want = dict(tuple(map(int, line.split())) for line in counted.splitlines())
    with torch.no_grad():
        for n in ns:
            out = scope["encoder"](torch.zeros(1, 40, 1 + (n - 400) // 160))
            assert out.shape[2] == want[n], n
