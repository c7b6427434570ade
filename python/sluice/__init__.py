"""sluice: deterministic, resumable speech and text data loading from C++ threads, handed to
Python zero-copy (docs/python.md).

    import sluice, torch
    loader = sluice.Loader("data", seed=1, features="fbank", num_mel_bins=80, max_frames=20000)
    for batch in loader:
        x = torch.from_dlpack(batch.features)      # [B, T, 80] float32, no copy
        n = torch.from_dlpack(batch.lengths)

sluice.load decodes one audio file (libsndfile + soxr, like shardify) to a [channels, frames]
array; sluice.features.fbank / spectrogram compute features of one waveform, sluice.augment.*
augments one as the loader does; sluice.shardify runs
the shardify command; sluice.TorchDataset (import torch first) adapts a Loader to
torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=0).
"""
from . import augment, errors, features
from ._sluice import Array, Batch, usable_cores
from .audio import load
from .errors import (CorruptionError, Error, InvalidArgumentError, IOError, NotFoundError,
                     ShardifyError, UnsupportedError)
from .loader import Loader, default_rank_world, default_threads
from .shardify import from_hf, shardify

__version__ = "0.1.0"

__all__ = [
    "Array", "Batch", "CorruptionError", "Error", "InvalidArgumentError", "IOError", "Loader",
    "NotFoundError", "ShardifyError", "TorchDataset", "UnsupportedError", "augment",
    "default_rank_world", "default_threads", "errors", "features", "from_hf", "load",
    "loader_keywords", "shardify", "to_torch", "usable_cores",
]


def loader_keywords():
    """[(keyword, type, help)]: every option sluice.Loader takes, under the CLI's names."""
    from ._sluice import loader_keywords as keywords

    return keywords()


def __getattr__(name):
    # The PyTorch adapter imports torch (seconds): only when asked for.
    if name in ("TorchDataset", "to_torch"):
        from . import pytorch

        return getattr(pytorch, name)
    raise AttributeError(f"module 'sluice' has no attribute {name!r}")
