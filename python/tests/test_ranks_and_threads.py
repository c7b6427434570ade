"""The determinism and partition contracts seen from Python, checked against the C++ tools."""
import json
import subprocess

import pytest

import sluice
from conftest import SMALL, tool


def bench_digest(dataset, *flags):
    out = subprocess.run([tool("sluice-bench"), "epoch", dataset, "--json", "--seed", "9",
                          "--max-frames", "1500", *flags],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[0])


def python_epoch(dataset, **kw):
    loader = sluice.Loader(dataset, seed=9, digest=True, **kw)
    keys = [k for batch in loader for k in batch.keys]
    return loader, keys


def test_digest_is_the_same_with_one_and_two_threads_and_equals_the_cli(dataset):
    one, _ = python_epoch(dataset, max_frames=1500, threads=1)
    two, _ = python_epoch(dataset, max_frames=1500, threads=2)
    assert one.digest() == two.digest()
    cli = bench_digest(dataset, "--threads", "2")
    assert cli["digest"] == two.digest()
    assert cli["batches"] == len(two)


def test_two_ranks_partition_the_epoch_as_the_cpp_loader(dataset):
    _, all_keys = python_epoch(dataset, **SMALL)
    ranks = [python_epoch(dataset, rank=r, world=2, **SMALL) for r in (0, 1)]
    (l0, k0), (l1, k1) = ranks
    assert len(l0) == len(l1)  # every rank the same number of batches
    assert not set(k0) & set(k1)  # disjoint ...
    assert sorted(k0 + k1) == sorted(all_keys)  # ... and together the epoch
    for r, (loader, _) in enumerate(ranks):
        cli = bench_digest(dataset, "--threads", "2", "--rank", str(r), "--world", "2")
        assert cli["digest"] == loader.digest(), f"rank {r}"


def test_rank_and_world_default_to_the_launchers_variables(dataset, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert sluice.default_rank_world() == (1, 2)
    loader = sluice.Loader(dataset, seed=9, **SMALL)
    assert (loader.rank, loader.world) == (1, 2)
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(sluice.InvalidArgumentError, match="RANK"):
        sluice.default_rank_world()
