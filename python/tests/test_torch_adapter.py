"""sluice.TorchDataset in torch.utils.data.DataLoader(batch_size=None, num_workers=0)."""
import pytest
import torch
import torch.utils.data

import sluice
from conftest import SMALL


def test_dataloader_yields_the_loaders_batches_without_copies(dataset):
    ds = sluice.TorchDataset(dataset, seed=2, **SMALL)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    assert len(dl) == len(ds.loader)
    direct = sluice.Loader(dataset, seed=2, **SMALL)
    n = 0
    for item, batch in zip(dl, direct):
        assert torch.equal(item["features"], torch.from_dlpack(batch.features))
        assert torch.equal(item["lengths"], torch.from_dlpack(batch.lengths))
        assert torch.equal(item["tokens"], torch.from_dlpack(batch.tokens))
        assert item["keys"] == batch.keys and item["texts"] == batch.texts
        n += 1
    assert n == len(direct)


def test_set_epoch_and_state_dict_pass_through(dataset):
    ds = sluice.TorchDataset(sluice.Loader(dataset, seed=2, **SMALL))
    ds.set_epoch(1)
    dl = torch.utils.data.DataLoader(ds, batch_size=None)
    it = iter(dl)
    next(it)
    next(it)
    assert ds.state_dict() == {"epoch": 1, "batches": 2, "world": 1}


def test_worker_processes_are_refused(dataset):
    ds = sluice.TorchDataset(dataset, seed=2, **SMALL)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1)
    with pytest.raises(RuntimeError, match="num_workers=0"):
        next(iter(dl))


@pytest.mark.parametrize("kwargs", [dict(), dict(batch_size=1), dict(batch_size=4),
                                    dict(collate_fn=lambda items: items)])
def test_dataloader_that_would_batch_the_batches_is_refused(dataset, kwargs):
    # DataLoader's default batch_size=1 would wrap each batch in a list of one and collate it:
    # features [1, B, T, F], keys a list of 1-tuples; batch_size=None is the fix.
    ds = sluice.TorchDataset(dataset, seed=2, **SMALL)
    dl = torch.utils.data.DataLoader(ds, **kwargs)
    with pytest.raises(RuntimeError, match=r"batch_size=None.*whole batches"):
        next(iter(dl))
    item = next(iter(torch.utils.data.DataLoader(ds, batch_size=None)))
    assert item["features"].dim() == 3
