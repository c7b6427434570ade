"""Tempo perturbation (sluice.augment.tempo, the loader's tempo_prob / tempo_factors) against
references computed here with numpy: its length is round(n / factor), a tone keeps its pitch
(speed's moves by the factor), the energy envelope is time-scaled by 1 / factor, and the
loader's rows are sluice.augment.chain's."""
import os

import numpy as np
import pytest

import sluice
from test_augment import clips_of

RATE = 16000


def peak_hz(y):
    """The frequency of the largest bin of y's spectrum (Hann window), and the bin width."""
    spectrum = np.abs(np.fft.rfft(y.astype(np.float64) * np.hanning(y.size)))
    return np.argmax(spectrum) * RATE / y.size, RATE / y.size


def tone(hz, seconds, start=0.0, stop=None, total=None):
    """A sine at hz between start and stop (5 ms raised-cosine ramps), in a clip of total s."""
    total = total or seconds
    t = np.arange(int(total * RATE)) / RATE
    stop = seconds if stop is None else stop
    gate = np.clip(np.minimum(t - start, stop - t) / 0.005, 0, 1)
    gate = 0.5 - 0.5 * np.cos(np.pi * gate)
    return (0.5 * np.sin(2 * np.pi * hz * t) * gate).astype(np.float32)


@pytest.mark.parametrize("factor", [0.5, 0.8, 0.9, 1.1, 1.25, 2.0])
def test_length_is_n_over_factor_rounded(factor):
    rng = np.random.default_rng(1)
    for n in (1, 100, 777, 16000, 40001):
        x = (0.3 * rng.standard_normal(n)).astype(np.float32)
        y = sluice.augment.tempo(x, RATE, factor)
        assert y.dtype == np.float32
        assert y.size == int(np.floor(n / factor + 0.5)), (n, factor)


def test_pitch_stays_while_speed_moves_it():
    x = tone(437.0, 1.0)
    for factor in (0.8, 0.9, 1.1, 1.25):
        hz, bin_hz = peak_hz(sluice.augment.tempo(x, RATE, factor))
        assert abs(hz - 437.0) <= bin_hz, (factor, hz)
        hz, bin_hz = peak_hz(sluice.augment.speed(x, RATE, factor))
        assert abs(hz - 437.0 * factor) <= bin_hz, (factor, hz)


def band_envelope(y, hz):
    """Energy near hz per 5 ms hop (20 ms Hann frames), normalised to a peak of 1."""
    frame, hop = 320, 80
    k = int(round(hz * frame / RATE))
    frames = np.lib.stride_tricks.sliding_window_view(y.astype(np.float64), frame)[::hop]
    spectrum = np.abs(np.fft.rfft(frames * np.hanning(frame), axis=1)) ** 2
    env = spectrum[:, k - 2:k + 3].sum(axis=1)
    return env / env.max()


def edges(env):
    """Seconds of the first and last hop whose frame centre is above half the peak."""
    above = np.flatnonzero(env > 0.5)
    return (above[0] * 80 + 160) / RATE, (above[-1] * 80 + 160) / RATE


def test_energy_envelope_time_scales_by_one_over_factor():
    # 300 Hz from 0.25 to 0.75 s, then 1200 Hz from 1.0 to 1.6 s.
    x = tone(300.0, 0.75, start=0.25, total=2.0) + tone(1200.0, 1.6, start=1.0, total=2.0)
    for factor in (0.8, 1.25):
        y = sluice.augment.tempo(x, RATE, factor)
        for hz, (start, stop) in ((300.0, (0.25, 0.75)), (1200.0, (1.0, 1.6))):
            got = edges(band_envelope(y, hz))
            want = edges(band_envelope(x, hz))
            # WSOLA moves each splice by at most its seek window (15 ms), plus a hop.
            assert abs(got[0] - want[0] / factor) < 0.025, (factor, hz, got, want)
            assert abs(got[1] - want[1] / factor) < 0.025, (factor, hz, got, want)
            # The whole envelope: the input's, read at t * factor.
            env_y = band_envelope(y, hz)
            t_y = (np.arange(env_y.size) * 80 + 160) / RATE
            env_x = band_envelope(x, hz)
            scaled = np.interp(t_y * factor, (np.arange(env_x.size) * 80 + 160) / RATE, env_x)
            assert np.corrcoef(env_y, scaled)[0, 1] > 0.95, (factor, hz)
            # And the tone inside keeps its pitch.
            inside = y[int(start / factor * RATE) + 800:int(stop / factor * RATE) - 800]
            hz_got, bin_hz = peak_hz(inside)
            assert abs(hz_got - hz) <= bin_hz, (factor, hz, hz_got)


def test_same_input_same_bytes_whatever_came_before():
    rng = np.random.default_rng(3)
    x = (0.3 * rng.standard_normal(12345)).astype(np.float32)
    first = sluice.augment.tempo(x, RATE, 1.25).tobytes()
    sluice.augment.tempo(rng.standard_normal(5000).astype(np.float32), RATE, 0.8)
    sluice.augment.tempo(x[:7000], 8000, 1.1)
    assert sluice.augment.tempo(x, RATE, 1.25).tobytes() == first
    np.testing.assert_array_equal(sluice.augment.tempo(x, RATE, 1.0), x)
    with pytest.raises(ValueError, match=r"outside SoundTouch's \[0.1, 10\]"):
        sluice.augment.tempo(x, RATE, 20.0)


def test_loader_rows_are_the_chain_with_tempo(dataset, corpus):
    # Speed and tempo, drawn independently (a record may get both), then gain: the loader's rows
    # and lengths are chain()'s, so the plan counted the perturbed length exactly. The raw rows
    # are int16-scaled and chain() runs on [-1, 1] samples: tempo's splice points do not depend
    # on the scale, so the two are equal up to it, exactly (32768 is a power of two).
    options = dict(tempo_prob=0.7, tempo_factors=[0.8, 1.25], speed_prob=0.4,
                   speed_factors=[0.9, 1.1], gain_prob=0.5)
    speech = clips_of(os.path.dirname(corpus))
    loader = sluice.Loader(dataset, seed=6, features="raw", threads=2, **options)
    loader.set_epoch(1)
    rows = stretched = 0
    for batch in loader:
        x = np.from_dlpack(batch.features)
        n = np.from_dlpack(batch.lengths)
        for i, (key, record) in enumerate(zip(batch.keys, batch.record_ids)):
            clean = speech[int(key.removeprefix("clip").removesuffix(".wav"))]
            want = sluice.augment.chain(clean, RATE, seed=6, epoch=1, record=record, **options)
            assert n[i] == want.size, key
            np.testing.assert_array_equal(x[i, :n[i]].reshape(-1) / np.float32(32768), want,
                                          err_msg=key)
            rows += 1
            stretched += want.size != clean.size
    assert rows == len(speech)
    assert stretched > rows // 2


def test_loader_spectrogram_rows_are_tempo_of_the_unit_scale_clip(dataset, corpus):
    # The spectrogram kind feeds the chain [-1, 1] samples, as sluice.augment.tempo takes them:
    # each row is the spectrogram of tempo() of the stored clip, at the drawn factor.
    factors = [0.8, 1.25]
    speech = clips_of(os.path.dirname(corpus))
    loader = sluice.Loader(dataset, seed=4, features="spectrogram", threads=2, tempo_prob=1.0,
                           tempo_factors=factors)
    loader.set_epoch(0)
    rows = 0
    for batch in loader:
        x = np.from_dlpack(batch.features)
        n = np.from_dlpack(batch.lengths)
        for i, (key, record) in enumerate(zip(batch.keys, batch.record_ids)):
            clean = speech[int(key.removeprefix("clip").removesuffix(".wav"))]
            chained = sluice.augment.chain(clean, RATE, seed=4, epoch=0, record=record,
                                           tempo_prob=1.0, tempo_factors=factors)
            factor = [f for f in factors if chained.size == int(np.floor(clean.size / f + 0.5))]
            assert len(factor) == 1, key
            y = sluice.augment.tempo(clean, RATE, factor[0])
            np.testing.assert_array_equal(y, chained, err_msg=key)
            want = sluice.features.spectrogram(y, RATE)
            assert n[i] == want.shape[0], key
            np.testing.assert_array_equal(x[i, :n[i]], want, err_msg=key)
            rows += 1
    assert rows == len(speech)
