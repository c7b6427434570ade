"""sluice.augment: the loader's waveform augmentation on arrays. chain() with a record's key and
the clips of the loader's noise and RIR datasets equals the loader's raw row; the single
transforms keep their contracts (SNR, length, level)."""
import os
import wave

import numpy as np
import pytest

import sluice
from conftest import make_corpus, tool


def clips_of(corpus_dir):
    """The corpus' WAV clips in manifest order (shardify keeps it), as float in [-1, 1]."""
    out = []
    names = sorted(n for n in os.listdir(corpus_dir) if n.endswith(".wav"))
    for name in names:
        with wave.open(os.path.join(corpus_dir, name), "rb") as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        out.append(pcm.astype(np.float32) / np.float32(32768))
    return out


@pytest.fixture(scope="module")
def clip_sets(tmp_path_factory):
    """A noise and an RIR dataset, each shardified like any audio, with their clips."""
    out = {}
    for name, count, seed in (("noise", 3, 7), ("rir", 2, 8)):
        corpus_dir = tmp_path_factory.mktemp(name + "_corpus")
        manifest = make_corpus(corpus_dir, count=count, seed=seed)
        ds = tmp_path_factory.mktemp(name) / "ds"
        sluice.shardify("audio", manifest=manifest, out=ds, binary=tool("shardify"))
        out[name] = (str(ds), clips_of(corpus_dir))
    return out


CHAIN = dict(reverb_prob=0.5, noise_prob=0.5, noise_min_snr=0.0, noise_max_snr=15.0,
             gain_prob=0.5, clip_prob=0.3, band_limit_prob=0.3, codec_prob=0.3,
             codecs=["ulaw", "gsm"])


def test_chain_equals_the_loaders_rows(dataset, corpus, clip_sets):
    noise_dir, noise = clip_sets["noise"]
    rir_dir, rirs = clip_sets["rir"]
    speech = clips_of(os.path.dirname(corpus))
    loader = sluice.Loader(dataset, seed=3, features="raw", threads=2, noise_data=noise_dir,
                           rir_data=rir_dir, **CHAIN)
    loader.set_epoch(1)
    rows = changed = 0
    for batch in loader:
        x = np.from_dlpack(batch.features)
        n = np.from_dlpack(batch.lengths)
        for i, (key, record) in enumerate(zip(batch.keys, batch.record_ids)):
            clean = speech[int(key.removeprefix("clip").removesuffix(".wav"))] * np.float32(32768)
            want = sluice.augment.chain(clean, 16000, seed=3, epoch=1, record=record,
                                        noise=noise, rirs=rirs, full_scale=32768.0, **CHAIN)
            assert n[i] == want.size
            np.testing.assert_array_equal(x[i, :n[i]].reshape(-1), want, err_msg=key)
            rows += 1
            changed += not np.array_equal(want, clean)
    assert rows == 80
    assert changed > 40


def test_babble_from_the_training_data_equals_the_loaders_rows(dataset, corpus):
    # The pool: babble_pool records evenly spaced over the dataset (ids floor(i * N / P)), with
    # their record ids, so that chain() excludes the record itself as the loader does.
    speech = clips_of(os.path.dirname(corpus))
    pool_ids = [i * len(speech) // 5 for i in range(5)]
    options = dict(babble_prob=0.9, babble_min_speakers=1, babble_max_speakers=3, babble_pool=5)
    loader = sluice.Loader(dataset, seed=4, features="raw", threads=2, **options)
    loader.set_epoch(2)
    rows = changed = 0
    for batch in loader:
        x = np.from_dlpack(batch.features)
        n = np.from_dlpack(batch.lengths)
        for i, (key, record) in enumerate(zip(batch.keys, batch.record_ids)):
            clean = speech[int(key.removeprefix("clip").removesuffix(".wav"))] * np.float32(32768)
            want = sluice.augment.chain(clean, 16000, seed=4, epoch=2, record=record,
                                        babble=[speech[j] for j in pool_ids],
                                        babble_records=pool_ids, full_scale=32768.0, **options)
            np.testing.assert_array_equal(x[i, :n[i]].reshape(-1), want, err_msg=key)
            rows += 1
            changed += not np.array_equal(want, clean)
    assert rows == len(speech)
    assert changed > rows // 2


def test_speed_in_the_chain_equals_the_older_keywords(dataset):
    # speed_prob=1 is speed_perturb=True: the same batches, byte for byte.
    def epoch(**keywords):
        loader = sluice.Loader(dataset, seed=2, threads=2, **keywords)
        loader.set_epoch(1)
        return [(tuple(b.keys), np.from_dlpack(b.features).tobytes()) for b in loader]

    older = epoch(speed_perturb=True, speed_factors=[0.85, 1.15])
    assert older == epoch(speed_prob=1.0, speed_factors=[0.85, 1.15])
    assert older != epoch()
    assert older != epoch(speed_prob=0.5, speed_factors=[0.85, 1.15])


def test_add_noise_meets_the_snr():
    rng = np.random.default_rng(1)
    x = (0.3 * rng.standard_normal(16000)).astype(np.float32)
    noise = (0.01 * rng.standard_normal(5000)).astype(np.float32)
    for snr in (-5.0, 0.0, 12.5, 30.0):
        y = sluice.augment.add_noise(x, noise, snr, offset=0.4)
        measured = 10 * np.log10(np.sum(x.astype(np.float64) ** 2) /
                                 np.sum((y.astype(np.float64) - x) ** 2))
        assert abs(measured - snr) < 0.1


def test_transforms_keep_the_length_and_refuse_nonsense():
    rng = np.random.default_rng(2)
    x = (0.3 * rng.standard_normal(8000)).astype(np.float32)
    rir = np.zeros(900, np.float32)
    rir[100] = 1.0
    np.testing.assert_allclose(sluice.augment.reverberate(x, rir, keep_level=False), x, atol=1e-6)
    assert sluice.augment.band_limit(x, 16000, 8000).shape == x.shape
    assert sluice.augment.codec(x, 16000, "ulaw").shape == x.shape
    np.testing.assert_array_equal(sluice.augment.gain(x, 20 * np.log10(2)), 2 * x)
    assert np.abs(sluice.augment.clipping(x, 0.5)).max() == pytest.approx(0.5 * np.abs(x).max())
    with pytest.raises(sluice.InvalidArgumentError, match="unknown codec 'aac'"):
        sluice.augment.codec(x, 16000, "aac")
    with pytest.raises(TypeError, match="gain_prb"):
        sluice.augment.chain(x, 16000, seed=1, epoch=0, record=0, gain_prb=0.5)


@pytest.mark.parametrize("rate, factor, match", [
    (0, 1.1, r"sample_rate 0 .*above 0"),
    (-16000, 1.1, r"sample_rate -16000 .*above 0"),
    (16000, 1e-6, r"factor 1e-06 .*\[0\.01, 100\.0\]"),
    (16000, 1000.0, r"factor 1000\.0 .*\[0\.01, 100\.0\]"),
    (16000, float("nan"), r"factor nan .*\[0\.01, 100\.0\]"),
])
def test_speed_refuses_a_rate_or_factor_the_loader_would(rate, factor, match):
    # The loader's speed_factors range (features/waveform_augment_options.h): a rate of 0 made a
    # NaN length and a factor of 1e-6 a million samples out per sample in.
    with pytest.raises(ValueError, match=match):
        sluice.augment.speed(np.zeros(16, np.float32), rate, factor)
    assert sluice.augment.speed(np.zeros(16, np.float32), 16000, 0.01).size == 1600
