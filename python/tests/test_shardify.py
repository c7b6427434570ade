"""sluice.shardify runs the shardify command and returns its JSON summary."""
import json
import os

import pytest

import sluice
from conftest import tool


def test_shardify_text_and_info(tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("hello world\nsecond line here\nthird\n", encoding="utf-8")
    out = tmp_path / "text_ds"
    summary = sluice.shardify("text", input=[text], out=out, tokenizer="char",
                              binary=tool("shardify"))
    assert summary["records"] == 3 and summary["shards"] == 1 and summary["tokens"] > 0
    with open(out / "manifest.json", encoding="utf-8") as f:
        assert json.load(f)["records"] == 3
    info = sluice.shardify("info", out, binary=tool("shardify"))
    assert info["records"] == 3


def test_shardify_failure_raises_with_its_message(tmp_path):
    with pytest.raises(sluice.ShardifyError, match="manifest"):
        sluice.shardify("audio", manifest=tmp_path / "missing.jsonl", out=tmp_path / "o",
                        binary=tool("shardify"))


def test_verify_reports_corruption(dataset_copy):
    shard = os.path.join(dataset_copy, "shard-00000.sluice")
    with open(shard, "r+b") as f:
        f.seek(4096)
        f.write(b"\xff" * 8)
    with pytest.raises(sluice.CorruptionError, match="shard-00000"):
        sluice.shardify("verify", dataset_copy, binary=tool("shardify"))
