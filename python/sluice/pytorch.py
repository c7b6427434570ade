"""The PyTorch adapter: a sluice.Loader as a torch IterableDataset, so an existing loop takes it
through ``torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=0)`` unchanged.

Batching, shuffling and the worker threads are the loader's: the DataLoader must neither batch
(batch_size=None) nor fork workers (num_workers=0). Each item is a dict of tensors viewing the
batch's memory (torch.from_dlpack, no copy) plus the keys and transcripts.
"""
import sys

import torch
import torch.utils.data

from .loader import Loader


def to_torch(batch):
    """A sluice.Batch as {"features", "lengths", "tokens", "token_lengths": tensors (no copy),
    "keys", "texts": lists of str, "epoch", "index": int}; packed batches add "positions",
    "doc_ids", "loss_mask", "cu_seqlens" and "row_cu_seqlens" (tensors, no copy), and a
    conversation dataset's audio turns "audio_features", "audio_lengths" and "audio_spans"."""
    packed = {name: torch.from_dlpack(getattr(batch, name))
              for name in ("positions", "doc_ids", "loss_mask", "cu_seqlens", "row_cu_seqlens",
                           "audio_features", "audio_lengths", "audio_spans")
              if getattr(batch, name, None) is not None}
    return {
        **packed,
        "features": None if batch.features is None else torch.from_dlpack(batch.features),
        "lengths": torch.from_dlpack(batch.lengths),
        "tokens": torch.from_dlpack(batch.tokens),
        "token_lengths": torch.from_dlpack(batch.token_lengths),
        "keys": batch.keys,
        "texts": batch.texts,
        "epoch": batch.epoch,
        "index": batch.index,
    }


def _collates(frame):
    """Whether the code that called iter() on the dataset is a DataLoader fetcher that collates
    items into batches (auto-collation: batch_size not None).

    DataLoader gives an IterableDataset to a fetcher (torch/utils/data/_utils/fetch.py, the same in
    torch 1.13 and 2.x), whose __init__ calls iter(dataset) after storing auto_collation, and whose
    fetch() then collates a list of items when auto_collation is set. So the caller's frame holds
    the fetcher as `self`. Nothing else DataLoader does shows its batch_size to the dataset: it
    calls no len() or __getitem__ on an IterableDataset before iterating. Another caller (a plain
    for loop, itertools, torch's datapipes) has no fetcher and is left alone; a torch without this
    fetcher class disables the check rather than refusing every use.
    """
    fetch = getattr(getattr(torch.utils.data, "_utils", None), "fetch", None)
    base = getattr(fetch, "_BaseDatasetFetcher", None)
    if frame is None or base is None:
        return False
    caller = frame.f_locals.get("self")
    return isinstance(caller, base) and bool(getattr(caller, "auto_collation", False))


class TorchDataset(torch.utils.data.IterableDataset):
    """``TorchDataset(loader)`` or ``TorchDataset(path, seed=..., **options)`` (a new Loader)."""

    def __init__(self, loader_or_path, **options):
        super().__init__()
        if isinstance(loader_or_path, Loader):
            if options:
                raise TypeError("TorchDataset(loader): options belong to the Loader")
            self.loader = loader_or_path
        else:
            self.loader = Loader(loader_or_path, **options)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is not None:
            raise RuntimeError("sluice.TorchDataset in a DataLoader worker: use num_workers=0 "
                               "(the loader's own threads decode; workers would each read the "
                               "whole epoch)")
        # A plain function, not a generator: the check runs when DataLoader asks for the
        # iterator, before any batch, with its caller's frame still on the stack.
        if _collates(sys._getframe(1) if hasattr(sys, "_getframe") else None):
            raise RuntimeError(
                "sluice.TorchDataset in a DataLoader that batches: pass batch_size=None, "
                "DataLoader(dataset, batch_size=None, num_workers=0). Its items are whole batches "
                "already; DataLoader's default batch_size=1 (or any batch_size, or a collate_fn "
                "with one) would put each in a list and collate it ([1, B, T, F] features, keys "
                "as tuples) or fail on batches of different shapes")
        return (to_torch(batch) for batch in self.loader)

    def __len__(self):
        return len(self.loader)

    def set_epoch(self, epoch):
        self.loader.set_epoch(epoch)

    def state_dict(self):
        return self.loader.state_dict()

    def load_state_dict(self, state):
        self.loader.load_state_dict(state)
