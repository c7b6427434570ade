"""Weighted mixing from Python: sluice.Loader({path: weight, ...}, mix_records=N) is the C++
mixture (sluice-bench epoch --data DIR:WEIGHT --mix-records N), resumable mid-epoch."""
import json
import subprocess

import pytest

import sluice
from conftest import SMALL, tool
from helpers import epoch_fingerprints


def bench_mix_digest(*flags):
    out = subprocess.run([tool("sluice-bench"), "epoch", "--json", "--seed", "9",
                          "--max-frames", "1500", "--threads", "2", *flags],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[0])


def test_a_mixture_is_the_clis_and_draws_by_weight(dataset, dataset_copy):
    loader = sluice.Loader({dataset: 3, dataset_copy: 1}, mix_records=40, seed=9, digest=True,
                           **SMALL)
    rows = sum(batch.size for batch in loader)
    assert rows == 40
    sources = loader.stats()["sources"]
    assert [s["records"] for s in sources] == [30, 10]
    cli = bench_mix_digest("--data", f"{dataset}:3", "--data", f"{dataset_copy}:1",
                           "--mix-records", "40")
    assert cli["digest"] == loader.digest()
    # The pair form is the same mixture.
    pairs = sluice.Loader([(dataset, 3), (dataset_copy, 1.0)], mix_records=40, seed=9,
                          digest=True, **SMALL)
    list(pairs)
    assert pairs.digest() == loader.digest()


def test_a_mixture_resumes_mid_epoch(dataset, dataset_copy):
    mix = {dataset: 1, dataset_copy: 2}
    full = epoch_fingerprints(sluice.Loader(mix, mix_records=50, seed=5, **SMALL))
    cut = len(full) // 2
    first = sluice.Loader(mix, mix_records=50, seed=5, **SMALL)
    it = iter(first)
    for _ in range(cut):
        next(it)
    state = first.state_dict()
    resumed = sluice.Loader(mix, mix_records=50, seed=5, **SMALL)
    resumed.load_state_dict(state)
    assert epoch_fingerprints(resumed) == full[cut:]


def test_a_bad_mixture_is_refused_by_name(dataset, dataset_copy):
    with pytest.raises(ValueError, match="empty mixture"):
        sluice.Loader({}, seed=1)
    with pytest.raises(TypeError, match=r"path\[1\] weight"):
        sluice.Loader([(dataset, 1), (dataset_copy, "x")], seed=1)
    with pytest.raises(ValueError, match="mix_records"):
        sluice.Loader(dataset, mix_records=-1, seed=1)
    with pytest.raises(sluice.InvalidArgumentError, match="weight"):
        sluice.Loader({dataset: 1, dataset_copy: 0}, seed=1)
