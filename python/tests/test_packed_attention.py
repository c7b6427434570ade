"""Packed text batches in Python: positions, doc_ids, loss_mask, cu_seqlens and row_cu_seqlens
are zero-copy arrays consistent with each other, and the packed step of docs/python.md gives
each document the attention output it has when run alone."""
import numpy as np
import pytest
import torch

import sluice

from conftest import tool
from test_docs_loop import doc_block

PACKED = ("positions", "doc_ids", "loss_mask", "cu_seqlens", "row_cu_seqlens")


@pytest.fixture(scope="module")
def text_dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("packed")
    text = d / "docs.txt"
    # Documents of 4 to 80 characters: several per row of 64, some longer than a row (split).
    lines = [("word " * (i % 17)) + f"document {i}" for i in range(90)]
    text.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    sluice.shardify("text", input=[text], out=d / "ds", tokenizer="char", binary=tool("shardify"))
    return str(d / "ds")


@pytest.mark.parametrize("mode", ["concat", "first_fit", "best_fit"])
def test_packed_arrays_are_zero_copy_and_consistent(text_dataset, mode):
    loader = sluice.Loader(text_dataset, seed=1, seq_len=64, batch_size=4, pack_mode=mode)
    padding = 0
    for batch in loader:
        B, L = batch.size, batch.seq_len
        for name in PACKED:  # each a view of the batch's memory
            a = getattr(batch, name)
            assert np.from_dlpack(a).ctypes.data == a.data_ptr, name
        positions = np.from_dlpack(batch.positions)
        doc_ids = np.from_dlpack(batch.doc_ids)
        mask = np.from_dlpack(batch.loss_mask)
        tokens = np.from_dlpack(batch.tokens)
        assert positions.shape == doc_ids.shape == mask.shape == (B, L)
        assert (positions.dtype, doc_ids.dtype, mask.dtype) == (np.int32, np.int64, np.uint8)
        starts = np.flatnonzero(positions.reshape(-1) == 0)
        assert list(np.from_dlpack(batch.cu_seqlens)) == list(starts) + [B * L]
        row_cu = np.from_dlpack(batch.row_cu_seqlens)
        for r in range(B):
            s = list(np.flatnonzero(positions[r] == 0))
            assert list(row_cu[r]) == s + [L] * (L + 1 - len(s))
        # No loss on padding, nor where the next input belongs to another document.
        same_next = np.zeros((B, L), dtype=bool)
        same_next[:, :-1] = (doc_ids[:, 1:] == doc_ids[:, :-1]) & (positions[:, 1:] > 0)
        same_next[:, -1] = tokens[:, L] != 0
        assert not (mask.astype(bool) & ~((doc_ids >= 0) & same_next)).any()
        assert (tokens[:, :L][doc_ids < 0] == 0).all()
        padding += int((doc_ids < 0).sum())
    stats = loader.stats()
    assert stats["padding_tokens"] == padding
    assert (padding == 0) == (mode == "concat")
    assert loader.stats()["padding_waste"] == pytest.approx(padding / stats["input_columns"])


def test_batches_of_records_have_no_packed_arrays(text_dataset):
    batch = next(iter(sluice.Loader(text_dataset, seed=1)))
    assert all(getattr(batch, name) is None for name in PACKED)


def test_documented_packed_step_attends_within_each_document(text_dataset):
    scope = {"DATASET": text_dataset}
    exec(compile(doc_block("packed-attention"), "docs/python.md", "exec"), scope)
    batch, out, inputs = scope["batch"], scope["out"], scope["inputs"]
    attention, embed, pos_embed = scope["attention"], scope["embed"], scope["pos_embed"]
    wq, wk, wv = scope["wq"], scope["wk"], scope["wv"]
    assert int(inputs.max()) < embed.num_embeddings
    assert torch.isfinite(scope["loss"])
    doc_ids = torch.from_dlpack(batch.doc_ids)
    row_cu = torch.from_dlpack(batch.row_cu_seqlens)
    checked = 0
    with torch.no_grad():
        for r in range(batch.size):
            bounds = sorted(set(row_cu[r].tolist()))
            for s, e in zip(bounds, bounds[1:]):
                if doc_ids[r, s] < 0:
                    continue  # padding
                # The document alone: its ids from position 0, a causal mask and nothing else.
                x = embed(inputs[r:r + 1, s:e]) + pos_embed(torch.arange(e - s)[None])
                causal = torch.ones(e - s, e - s, dtype=torch.bool).tril()[None]
                alone = attention(wq(x), wk(x), wv(x), causal)
                torch.testing.assert_close(out[r:r + 1, s:e], alone, rtol=1e-5, atol=1e-5)
                checked += 1
    assert checked > batch.size, "rows of several documents"


def test_to_torch_carries_the_packed_tensors(text_dataset):
    from sluice.pytorch import to_torch
    batch = next(iter(sluice.Loader(text_dataset, seed=1, seq_len=64, batch_size=4,
                                    pack_mode="best_fit")))
    t = to_torch(batch)
    assert t["positions"].shape == (4, 64) and t["doc_ids"].dtype == torch.int64
    assert t["cu_seqlens"][-1].item() == 4 * 64
