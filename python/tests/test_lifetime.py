"""An exported tensor stays valid and unchanged for as long as it lives, whatever the loader does
next: later batches, a new epoch, the loader's destruction."""
import gc

import torch

import sluice
from conftest import SMALL


def test_tensor_outlives_its_batch_and_the_rest_of_the_epoch(dataset):
    loader = sluice.Loader(dataset, seed=3, consumer_batches=2, digest=True, **SMALL)
    it = iter(loader)
    first = next(it)
    kept = torch.from_dlpack(first.features)
    kept_lengths = torch.from_dlpack(first.lengths)
    copy, copy_lengths = kept.clone(), kept_lengths.clone()
    del first
    rest = sum(1 for _ in it)  # every later batch goes through the pool
    assert rest >= 5
    assert torch.equal(kept, copy) and torch.equal(kept_lengths, copy_lengths)
    # The pool had to restart once to leave the kept batch alone ...
    assert loader.stats()["restarts"] == 1
    # ... and the epoch is still exactly the uninterrupted one.
    clean = sluice.Loader(dataset, seed=3, consumer_batches=2, digest=True, **SMALL)
    for _ in clean:
        pass
    assert loader.digest() == clean.digest()


def test_holding_every_batch_keeps_each_one_intact(dataset):
    loader = sluice.Loader(dataset, seed=4, consumer_batches=2, digest=True, **SMALL)
    held, copies = [], []
    for batch in loader:
        t = torch.from_dlpack(batch.features)
        held.append(t)
        copies.append(t.clone())
    assert len(held) == len(loader)
    for t, c in zip(held, copies):
        assert torch.equal(t, c)
    # Distinct memory for each batch kept.
    assert len({t.data_ptr() for t in held}) == len(held)
    clean = sluice.Loader(dataset, seed=4, digest=True, **SMALL)
    for _ in clean:
        pass
    assert loader.digest() == clean.digest()


def test_a_typical_loop_never_restarts(dataset):
    loader = sluice.Loader(dataset, seed=5, **SMALL)
    for epoch in range(2):
        loader.set_epoch(epoch)
        for batch in loader:
            x = torch.from_dlpack(batch.features)
            _ = x.sum()
        # The previous epoch's last batch is still bound to `batch` when the next one starts:
        # a restart at the epoch boundary, none within an epoch.
        assert loader.stats()["restarts"] <= epoch


def test_tensor_outlives_a_new_epoch_and_the_loader(dataset):
    loader = sluice.Loader(dataset, seed=6, **SMALL)
    batch = next(iter(loader))
    kept = torch.from_dlpack(batch.features)
    copy = kept.clone()
    del batch
    loader.set_epoch(1)
    for _ in loader:
        pass
    assert torch.equal(kept, copy)
    del loader
    gc.collect()
    # The pool is gone; the kept batch's memory is not, and nobody wrote to it.
    assert torch.equal(kept, copy)
    assert float(kept.sum()) == float(copy.sum())


def test_unconsumed_dlpack_capsule_is_freed_without_harm(dataset):
    loader = sluice.Loader(dataset, seed=1, **SMALL)
    batch = next(iter(loader))
    for _ in range(100):
        capsule = batch.features.__dlpack__()
        del capsule
    assert torch.from_dlpack(batch.features).shape[0] == batch.size


def test_pin_hooks_register_every_batch_buffer(dataset):
    registered, unregistered = {}, []

    def register(address, nbytes):
        registered[address] = nbytes

    def unregister(address):
        unregistered.append(address)

    loader = sluice.Loader(dataset, seed=1, pin_memory=(register, unregister), **SMALL)
    count = 0
    for batch in loader:
        for name in ("features", "lengths", "tokens", "token_lengths"):
            a = getattr(batch, name)
            assert any(p <= a.data_ptr and a.data_ptr + a.nbytes <= p + n
                       for p, n in registered.items()), name
        count += 1
    assert count == len(loader)
    del batch, a  # the last batch's lease
    loader.close()
    # Every block the pool freed was unregistered first, and only registered blocks were.
    assert unregistered and set(unregistered) <= set(registered)
    assert len(set(unregistered)) == len(registered)


def test_a_restart_reuses_the_pool_memory_it_does_not_hold(dataset):
    loader = sluice.Loader(dataset, seed=8, **SMALL)
    for batch in loader:
        pass
    _, _, allocated = loader._core.memory_blocks()
    loader.set_epoch(1)
    it = iter(loader)
    first = next(it)  # `batch` of epoch 0 was still bound at the start: a restart
    assert loader.stats()["restarts"] == 1
    _, held, allocated_after = loader._core.memory_blocks()
    # Only the held batch's four arrays were kept out of the new pool, and only they were
    # allocated anew: the rest of the old pool's memory was taken back.
    assert held == 4 and allocated_after - allocated == 4
    del batch, first, it


def test_next_releases_the_gil_while_it_waits(dataset):
    """Another Python thread runs while next() waits for the C++ pipeline. With a switch interval
    of an hour the interpreter never takes the GIL from a thread: the counter thread only runs
    when the main thread gives the GIL up, which next() must do while it waits."""
    import sys
    import threading
    import time

    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0)  # gives the GIL back to a main thread that wants it

    loader = sluice.Loader(dataset, seed=2, **SMALL)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(3600)
    thread = threading.Thread(target=count)
    thread.start()
    try:
        during = 0
        it = iter(loader)
        while True:
            before = counter[0]
            batch = next(it, None)
            during += counter[0] - before
            if batch is None:
                break
    finally:
        stop.set()
        sys.setswitchinterval(interval)
        thread.join()
    assert during > 0
