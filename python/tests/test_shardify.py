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


class _Dataset:
    """What from_hf reads of a datasets.Dataset: its cache files and its row selection."""

    def __init__(self, files, indices=None):
        self.cache_files = [{"filename": f} for f in files]
        self._indices = indices


def test_from_hf_is_reached_through_sluice_shardify():
    assert sluice.shardify.from_hf is sluice.from_hf


def test_from_hf_refuses_what_it_cannot_read_whole(tmp_path):
    with pytest.raises(ValueError, match="flatten_indices"):
        sluice.from_hf(_Dataset(["a.arrow"], indices=object()), out=tmp_path / "o")
    with pytest.raises(ValueError, match="to_parquet"):
        sluice.from_hf(_Dataset([]), out=tmp_path / "o")
    with pytest.raises(TypeError, match=r"splits \['test', 'train'\]"):
        sluice.from_hf({"train": None, "test": None}, out=tmp_path / "o")
    with pytest.raises(ValueError, match="without .parquet files"):
        sluice.from_hf(tmp_path, out=tmp_path / "o")


def test_from_hf_names_a_missing_pyarrow_or_column(tmp_path):
    # Either way shardify stops naming the file: without pyarrow in this interpreter, with a
    # HINT; with it, the file is not parquet.
    bogus = tmp_path / "train.parquet"
    bogus.write_bytes(b"not parquet")
    with pytest.raises(sluice.ShardifyError,
                       match=r"train\.parquet: (cannot read it|not a parquet)"):
        sluice.from_hf(bogus, out=tmp_path / "o", binary=tool("shardify"))
