"""state_dict / load_state_dict: a loader restored mid-epoch yields exactly the rest of the
uninterrupted epoch, from the C++ ResumeState."""
import pytest

import sluice
from conftest import SMALL
from helpers import epoch_fingerprints, fingerprint


def test_len_is_the_epochs_batch_count(dataset):
    loader = sluice.Loader(dataset, seed=7, **SMALL)
    for epoch in (0, 3):
        loader.set_epoch(epoch)
        assert len(loader) == sum(1 for _ in loader)


def test_load_state_dict_mid_epoch_gives_exactly_the_rest(dataset):
    loader = sluice.Loader(dataset, seed=7, **SMALL)
    loader.set_epoch(2)
    full = epoch_fingerprints(loader)
    assert len(full) >= 8
    cut = len(full) // 2

    first = sluice.Loader(dataset, seed=7, **SMALL)
    first.set_epoch(2)
    for i, batch in enumerate(first):
        assert fingerprint(batch) == full[i]
        if i + 1 == cut:
            state = first.state_dict()
            break
    assert state == {"epoch": 2, "batches": cut, "world": 1}

    resumed = sluice.Loader(dataset, seed=7, **SMALL)
    resumed.load_state_dict(state)
    assert resumed.epoch == 2
    assert epoch_fingerprints(resumed) == full[cut:]
    # After the resumed part the state is the end of the epoch.
    assert resumed.state_dict() == {"epoch": 2, "batches": len(full), "world": 1}


def test_resume_at_the_end_and_past_it(dataset):
    loader = sluice.Loader(dataset, seed=7, **SMALL)
    n = len(loader)
    loader.load_state_dict({"epoch": 0, "batches": n, "world": 1})
    assert list(loader) == []
    loader.load_state_dict({"epoch": 0, "batches": n + 1, "world": 1})
    with pytest.raises(sluice.InvalidArgumentError, match="resume at batch"):
        list(loader)


def test_state_dict_before_any_iteration_and_after_set_epoch(dataset):
    loader = sluice.Loader(dataset, seed=7, **SMALL)
    assert loader.state_dict() == {"epoch": 0, "batches": 0, "world": 1}
    loader.set_epoch(5)
    assert loader.state_dict() == {"epoch": 5, "batches": 0, "world": 1}


@pytest.mark.parametrize("bad,error", [
    ({"epoch": 1}, ValueError),
    ({"epoch": -1, "batches": 0}, ValueError),
    ({"epoch": "1", "batches": 0}, ValueError),
    ({"epoch": 1, "batches": 0, "world": 0}, ValueError),
    ({"epoch": 1, "batches": 0, "world": 2, "earlier": [{"world": 2}]}, ValueError),
    ([1, 2], TypeError),
])
def test_bad_state_dict_raises(dataset, bad, error):
    loader = sluice.Loader(dataset, seed=7, **SMALL)
    with pytest.raises(error, match="state"):
        loader.load_state_dict(bad)
