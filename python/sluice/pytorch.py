"""The PyTorch adapter: a sluice.Loader as a torch IterableDataset, so an existing loop takes it
through ``torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=0)`` unchanged.

Batching, shuffling and the worker threads are the loader's: the DataLoader must neither batch
(batch_size=None) nor fork workers (num_workers=0). Each item is a dict of tensors viewing the
batch's memory (torch.from_dlpack, no copy) plus the keys and transcripts.
"""
import torch
import torch.utils.data

from .loader import Loader


def to_torch(batch):
    """A sluice.Batch as {"features", "lengths", "tokens", "token_lengths": tensors (no copy),
    "keys", "texts": lists of str, "epoch", "index": int}."""
    return {
        "features": None if batch.features is None else torch.from_dlpack(batch.features),
        "lengths": torch.from_dlpack(batch.lengths),
        "tokens": torch.from_dlpack(batch.tokens),
        "token_lengths": torch.from_dlpack(batch.token_lengths),
        "keys": batch.keys,
        "texts": batch.texts,
        "epoch": batch.epoch,
        "index": batch.index,
    }


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
        for batch in self.loader:
            yield to_torch(batch)

    def __len__(self):
        return len(self.loader)

    def set_epoch(self, epoch):
        self.loader.set_epoch(epoch)

    def state_dict(self):
        return self.loader.state_dict()

    def load_state_dict(self, state):
        self.loader.load_state_dict(state)
