"""Errors: the C++ messages (file, block, offset) as Python exceptions; bad arguments named."""
import json
import os
import struct

import numpy as np
import pytest

import sluice
from conftest import SMALL


def test_corrupted_shard_raises_with_shard_and_offset(dataset_copy):
    shard = os.path.join(dataset_copy, "shard-00000.sluice")
    with open(shard, "r+b") as f:  # flip bytes inside the first block's payload
        f.seek(4096)
        b = f.read(16)
        f.seek(4096)
        f.write(bytes(x ^ 0xFF for x in b))
    loader = sluice.Loader(dataset_copy, seed=1, **SMALL)
    with pytest.raises(sluice.CorruptionError) as e:
        for _ in loader:
            pass
    message = str(e.value)
    assert "shard-00000.sluice" in message and "offset" in message and "checksum" in message
    # corrupt="skip" keeps going and counts the lost records instead.
    skipping = sluice.Loader(dataset_copy, seed=1, corrupt="skip", **SMALL)
    assert sum(1 for _ in skipping) == len(skipping)
    assert skipping.stats()["skipped_records"] > 0
    assert skipping.stats()["storage"]["requests"] == 0  # a local directory: no requests


def test_missing_dataset_is_not_found(tmp_path):
    with pytest.raises(sluice.NotFoundError, match="nothing: no such directory") as e:
        sluice.Loader(tmp_path / "nothing", seed=1)
    assert isinstance(e.value, FileNotFoundError)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(num_mel_bins="80"), TypeError, "num_mel_bins: expected int, got str"),
    (dict(num_mel_bins=0), ValueError, r"num_mel_bins=0: out of range \[1, 10000\]"),
    (dict(max_frames=-5), ValueError, "max_frames=-5: out of range"),
    (dict(threads=2.5), TypeError, "threads: expected int, got float"),
    (dict(spec_augment=1), TypeError, "spec_augment: expected bool, got int"),
    (dict(dtype="f64"), ValueError, "dtype='f64': expected one of float32, f32"),
    (dict(features="mfcc"), ValueError, "features='mfcc'"),
    (dict(speed_factors=[0.9, "x"]), TypeError, r"speed_factors\[1\]: expected float"),
    (dict(window_type="nope"), ValueError, "features.window_type 'nope': unknown window"),
    (dict(features="precomputed"), ValueError, "kind precomputed: the dataset has no"),
    (dict(num_mel_bin=80), TypeError, "unexpected keyword argument 'num_mel_bin'"),
    (dict(rank=1), ValueError, "rank and world"),
])
def test_bad_loader_arguments_raise_naming_them(dataset, kwargs, error, match):
    with pytest.raises(error, match=match):
        sluice.Loader(dataset, seed=1, **kwargs)


@pytest.mark.parametrize("old,new", [("tokens", "blocks_in_flight"), ("buckets", "num_buckets"),
                                     ("ready", "ready_batches"),
                                     ("tokens_in_flight", "blocks_in_flight")])
def test_a_former_keyword_is_refused_naming_the_new_one(dataset, old, new):
    # tokens= meant blocks in flight where a batch's tokens are its token ids: never read.
    with pytest.raises(TypeError, match=f"keyword '{old}' was renamed '{new}'"):
        sluice.Loader(dataset, seed=1, **{old: 4})


def test_feature_errors_name_the_table_key_not_a_flag(dataset):
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.Loader(dataset, seed=1, features="spectrogram", n_fft=256)  # < the 320-sample window
    assert "features.spectrogram options (at 16000 Hz)" in str(e.value)
    assert "--" not in str(e.value)


def test_bad_path_and_seed_types(dataset):
    with pytest.raises(TypeError, match="path"):
        sluice.Loader(42, seed=1)
    with pytest.raises(TypeError, match="seed: expected int"):
        sluice.Loader(dataset, seed="1")
    with pytest.raises(TypeError):
        sluice.Loader(dataset)  # seed is required
    with pytest.raises(ValueError, match="rank"):
        sluice.Loader(dataset, seed=1, rank=2, world=2)


def test_options_the_dataset_cannot_satisfy(dataset):
    with pytest.raises(sluice.Error, match="seq_len|packing|text"):
        list(sluice.Loader(dataset, seed=1, seq_len=16))


def test_feature_argument_errors():
    wav = np.zeros(16000, np.float32)
    with pytest.raises(TypeError, match="waveform"):
        sluice.features.fbank("x", 16000)
    with pytest.raises(ValueError, match="waveform"):
        sluice.features.fbank(np.zeros((2, 100), np.float32), 16000)
    with pytest.raises(ValueError, match="too short"):
        sluice.features.fbank(np.zeros(10, np.float32), 16000)
    with pytest.raises(TypeError, match="sample_rate"):
        sluice.features.fbank(wav, 16000.0)
    with pytest.raises(ValueError, match="sample_rate"):
        sluice.features.fbank(wav, 0)
    with pytest.raises(TypeError, match="n_fft"):
        sluice.features.fbank(wav, 16000, n_fft=512)  # a spectrogram keyword
    with pytest.raises(ValueError, match="num_mel_bins"):
        sluice.features.fbank(wav, 16000, num_mel_bins=-1)
