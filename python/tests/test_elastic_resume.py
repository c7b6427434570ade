"""Elastic resume from Python: state_dict() saved by every rank of a W-rank run and loaded by
every rank of a W'-rank run continues the epoch with the records the W ranks had not taken, each
exactly once (loader/resume.h, docs/loader.md "Elastic resume"), for a single dataset and for a
weighted mixture, through sluice.Loader and through the PyTorch adapter."""
import collections

import pytest
import torch.utils.data

import sluice
from conftest import SMALL

EPOCH = 1


def loaders(path, world, **options):
    out = []
    for rank in range(world):
        loader = sluice.Loader(path, seed=7, rank=rank, world=world, **SMALL, **options)
        loader.set_epoch(EPOCH)
        out.append(loader)
    return out


def rows(batch):
    """(record id, key) of every row, without the rows repeated to even out the ranks."""
    ids = list(zip(batch.record_ids, batch.keys))
    return ids[:len(ids) - batch.repeated]


def uninterrupted(path, world, **options):
    """Every row every rank of an uninterrupted W-rank epoch takes, as a multiset."""
    return collections.Counter(r for loader in loaders(path, world, **options)
                               for batch in loader for r in rows(batch))


def take(loader, n):
    """The rows of loader's first n batches, and its state_dict after them."""
    taken = []
    for i, batch in enumerate(loader):
        taken += rows(batch)
        if i + 1 == n:
            break
    return taken, loader.state_dict()


def resume_elsewhere(path, world, new_world, cut, **options):
    """(rows taken before, rows after, per-rank batch counts after, the state saved, a state
    after the resume)"""
    before, states = [], []
    for loader in loaders(path, world, **options):
        taken, state = take(loader, cut)
        before += taken
        states.append(state)
    # A checkpoint is taken at the same step on every rank: the states are one state.
    assert all(s == states[0] for s in states)
    after, counts = [], []
    resumed = loaders(path, new_world, **options)
    for loader in resumed:
        loader.load_state_dict(states[0])
        n = 0
        for batch in loader:
            after += rows(batch)
            n += 1
        counts.append(n)
    return before, after, counts, states[0], resumed[0].state_dict()


@pytest.mark.parametrize("world,new_world,cut", [(2, 1, 2), (2, 3, 2), (3, 2, 1), (2, 3, 1)])
def test_another_world_size_takes_the_rest_of_the_epoch_exactly_once(dataset, world, new_world,
                                                                     cut):
    before, after, counts, saved, state = resume_elsewhere(dataset, world, new_world, cut)
    assert len(set(counts)) == 1, f"uneven batch counts over the new ranks: {counts}"
    seen = collections.Counter(before + after)
    twice = sorted(r for r, n in seen.items() if n > 1)
    assert not twice, f"{len(twice)} records taken twice: {twice[:5]}"
    everything = uninterrupted(dataset, world)
    lost = sorted(set(everything) - set(seen))
    assert not lost, f"{len(lost)} of {len(everything)} records lost: {lost[:5]}"
    assert set(seen) == set(everything)
    assert saved == {"epoch": EPOCH, "batches": cut, "world": world}
    # The state after the resumed stretch keeps the one before it.
    assert state == {"epoch": EPOCH, "batches": counts[0], "world": new_world,
                     "earlier": [{"world": world, "batches": cut}]}


@pytest.mark.parametrize("world,new_world", [(2, 1), (2, 3), (3, 2)])
def test_a_mixture_resumed_at_another_world_size_takes_the_rest_exactly_once(
        dataset, dataset_copy, world, new_world):
    mix = {dataset: 1, dataset_copy: 2}
    before, after, counts, _, _ = resume_elsewhere(mix, world, new_world, 1, mix_records=50)
    assert len(set(counts)) == 1, f"uneven batch counts over the new ranks: {counts}"
    # A mixture may draw a record more than once (a source that runs out repeats): the resumed
    # epoch holds the uninterrupted one's draws, each draw once.
    assert collections.Counter(before + after) == uninterrupted(mix, world, mix_records=50)


def test_a_resumed_state_resumes_again_at_a_third_world_size(dataset):
    """2 -> 3 -> 1: the second resume keeps the first stretch (the state's "earlier")."""
    before, states = [], []
    for loader in loaders(dataset, 2):
        taken, state = take(loader, 1)
        before += taken
        states.append(state)
    middle, middle_states = [], []
    for loader in loaders(dataset, 3):
        loader.load_state_dict(states[0])
        taken, state = take(loader, 1)
        middle += taken
        middle_states.append(state)
    assert middle_states[0]["earlier"] == [{"world": 2, "batches": 1}]
    (last,) = loaders(dataset, 1)
    last.load_state_dict(middle_states[0])
    after = [r for batch in last for r in rows(batch)]
    seen = collections.Counter(before + middle + after)
    assert max(seen.values()) == 1
    assert set(seen) == set(uninterrupted(dataset, 1))


def test_the_torch_adapter_under_torchrun_resumes_on_fewer_ranks(dataset, monkeypatch):
    """Two torchrun ranks (RANK/WORLD_SIZE) checkpoint through TorchDataset; one rank resumes."""
    before, states = [], []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        ds = sluice.TorchDataset(dataset, seed=7, **SMALL)
        ds.set_epoch(EPOCH)
        it = iter(torch.utils.data.DataLoader(ds, batch_size=None))
        for _ in range(2):
            before += next(it)["keys"]
        states.append(ds.state_dict())
    assert states[0] == states[1]
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    ds = sluice.TorchDataset(dataset, seed=7, **SMALL)
    ds.load_state_dict(states[0])
    after = [k for item in torch.utils.data.DataLoader(ds, batch_size=None) for k in item["keys"]]
    twice = [k for k, n in collections.Counter(before + after).items() if n > 1]
    assert not twice, f"{len(twice)} rows trained twice"
    assert sorted(set(before + after)) == sorted(k for _, k in uninterrupted(dataset, 1))
    assert states[0] == {"epoch": EPOCH, "batches": 2, "world": 2}


def test_a_state_without_world_that_took_batches_is_refused(dataset):
    loader = sluice.Loader(dataset, seed=7, rank=0, world=3, **SMALL)
    with pytest.raises(ValueError, match=r'no "world".*HINT: add "world"'):
        loader.load_state_dict({"epoch": 0, "batches": 2})
    # Nothing taken yet: the state means the same at any world size.
    loader.load_state_dict({"epoch": 2, "batches": 0})
    assert loader.state_dict() == {"epoch": 2, "batches": 0}
    assert len(list(loader)) == len(loader)
