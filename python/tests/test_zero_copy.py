"""Batches reach numpy and torch without a copy: the exported arrays are the batch buffer."""
import numpy as np
import pytest
import torch

import sluice
from conftest import SMALL


def test_tensor_data_ptr_is_the_batch_buffer(dataset):
    loader = sluice.Loader(dataset, seed=1, **SMALL)
    batch = next(iter(loader))
    for name in ("features", "lengths", "tokens", "token_lengths"):
        array = getattr(batch, name)
        t = torch.from_dlpack(array)
        n = np.from_dlpack(array)
        assert t.data_ptr() == array.data_ptr, name
        assert n.ctypes.data == array.data_ptr, name
        assert tuple(t.shape) == array.shape
    # The addresses are the pool's 256-byte aligned buffers, and distinct per array.
    ptrs = {getattr(batch, n).data_ptr for n in ("features", "lengths", "tokens", "token_lengths")}
    assert len(ptrs) == 4 and all(p % 256 == 0 for p in ptrs)


def test_torch_and_numpy_views_share_memory(dataset):
    loader = sluice.Loader(dataset, seed=1, **SMALL)
    batch = next(iter(loader))
    t = torch.from_dlpack(batch.features)
    n = np.from_dlpack(batch.features)
    b = np.asarray(batch.features)  # the buffer protocol: the same memory again
    t[0, 0, 0] = 12345.0
    assert n[0, 0, 0] == 12345.0 and b[0, 0, 0] == 12345.0


def test_shapes_dtypes_and_strings(dataset):
    loader = sluice.Loader(dataset, seed=1, **SMALL)
    batch = next(iter(loader))
    f = torch.from_dlpack(batch.features)
    lengths = torch.from_dlpack(batch.lengths)
    assert f.dtype == torch.float32 and f.shape == (batch.size, batch.frames, 80)
    assert lengths.dtype == torch.int32 and int(lengths.max()) == batch.frames
    # Padding is zeros after each row's length.
    for i in range(batch.size):
        assert torch.count_nonzero(f[i, int(lengths[i]):]) == 0
    tokens = torch.from_dlpack(batch.tokens)
    tl = torch.from_dlpack(batch.token_lengths)
    assert tokens.shape == (batch.size, batch.max_tokens) and int(tl.max()) == batch.max_tokens
    assert all(isinstance(k, str) and k.endswith(".wav") for k in batch.keys)
    assert all(isinstance(t, str) and t for t in batch.texts)
    # Char ids: one per character of the (lower-cased) transcript.
    assert [int(n) for n in tl] == [len(t) for t in batch.texts]


@pytest.mark.parametrize("dtype,torch_dtype", [("f16", torch.float16), ("bf16", torch.bfloat16)])
def test_half_dtypes_export_as_such(dataset, dtype, torch_dtype):
    ref = next(iter(sluice.Loader(dataset, seed=1, **SMALL)))
    ref32 = torch.from_dlpack(ref.features).clone()
    batch = next(iter(sluice.Loader(dataset, seed=1, dtype=dtype, **SMALL)))
    t = torch.from_dlpack(batch.features)
    assert t.dtype == torch_dtype and t.data_ptr() == batch.features.data_ptr
    assert batch.features.dtype == {"f16": "float16", "bf16": "bfloat16"}[dtype]
    assert torch.equal(t, ref32.to(torch_dtype))  # the same values, rounded once
