"""Waveform augmentation with the loader's kernels (docs/augment.md), on numpy arrays or torch
tensors of one channel: the functions sluice.Loader runs between decoding and features, for tests
and notebooks. Each returns a new float32 array; samples are floats in [-1, 1] (int16 PCM is
scaled as sluice.features does).

chain() is the loader's whole chain for one record (speed and tempo, which change the length,
first): with the loader's seed, the epoch, the
record's id, the clips of its noise_data and rir_data datasets in their order, the babble pool
(and, for a pool from the training data, its clips' record ids), and the same
keywords as sluice.Loader (gain_prob, noise_min_snr, codecs, ...), it returns the loader's row.
"""
import numpy as np

from . import _sluice
from .features import _samples


def _x(waveform):
    return _samples(waveform)[0]


def gain(waveform, db):
    """waveform times 10^(db / 20)."""
    return _sluice.augment_gain(_x(waveform), float(db))


def clipping(waveform, level):
    """Hard clipping at +-level times the waveform's peak |sample|."""
    return _sluice.augment_clipping(_x(waveform), float(level))


def add_noise(waveform, noise, snr_db, offset=0.0):
    """waveform plus an excerpt of noise (looped when shorter) scaled to an SNR of snr_db over the
    waveform; offset in [0, 1) picks where the excerpt starts."""
    return _sluice.augment_add_noise(_x(waveform), _x(noise), float(snr_db), float(offset))


def reverberate(waveform, rir, keep_level=True):
    """The convolution with rir from its direct path (largest |sample|) on, cut to the
    waveform's length; keep_level scales it to the waveform's energy."""
    return _sluice.augment_reverberate(_x(waveform), _x(rir), bool(keep_level))


def band_limit(waveform, sample_rate, rate):
    """Resampled (soxr) to rate Hz and back to sample_rate: nothing above rate / 2 is left."""
    return _sluice.augment_band_limit(_x(waveform), int(sample_rate), float(rate))


def codec(waveform, sample_rate, name, compression=0.5):
    """Encoded and decoded in memory by libsndfile: name is ulaw, alaw, gsm, vorbis, opus or mp3;
    compression in [0, 1] is libsndfile's compression level (1 = most compressed)."""
    return _sluice.augment_codec(_x(waveform), int(sample_rate), str(name), float(compression))


def speed(waveform, sample_rate, factor):
    """Played factor times faster by resampling (soxr, sox's "speed"): tempo and pitch move
    together; round(n / factor) samples. sample_rate above 0 and factor in [0.01, 100] (the
    loader's speed_factors range), else ValueError. The loader's speed_prob / speed_factors."""
    return _sluice.augment_speed(_x(waveform), int(sample_rate), float(factor))


def tempo(waveform, sample_rate, factor):
    """Played factor times faster at the same pitch (WSOLA, libsoundtouch); exactly
    round(n / factor) samples (SoundTouch's output cut or padded with zeros at the end to it).
    factor in [0.1, 10]. waveform in [-1, 1]: the loader's int16-scaled rows (raw, fbank) are
    this output times 32768, exactly. The loader's tempo_prob / tempo_factors."""
    return _sluice.augment_tempo(_x(waveform), int(sample_rate), float(factor))


def codec_draw(*, seed, epoch, record, **options):
    """The codec and compression level (name, level) the chain draws for this record with these
    keywords (sluice.Loader's), or None when it applies no codec: codec(x, rate, name, level) on
    the chain's input to the codec equals the chain's codec step, and so does libsndfile at that
    level through any binding (docs/augment.md)."""
    return _sluice.augment_codec_draw(int(seed), int(epoch), int(record), options)


def chain(waveform, sample_rate, *, seed, epoch, record, noise=(), rirs=(), babble=(),
          babble_records=(), full_scale=1.0, **options):
    """The loader's chain for one record. full_scale is the value of a full-scale sample in
    waveform: the loader's rows of features='raw' and 'fbank' are int16-scaled (32768.0), its
    spectrogram's in [-1, 1] (1.0). babble: the pool's utterances; babble_records: their record
    ids when the pool is the training data's (a record never babbles over itself), or empty for a
    babble_data pool. Keywords are sluice.Loader's (docs/augment.md)."""
    x = np.ascontiguousarray(waveform, dtype=np.float32)
    if x.ndim != 1:
        raise ValueError(f"waveform: expected one channel of samples (1-D), got {x.ndim} "
                         "dimensions")
    return _sluice.augment_chain(x, int(sample_rate), int(seed), int(epoch), int(record),
                                 [_x(n) for n in noise], [_x(r) for r in rirs],
                                 [_x(b) for b in babble], [int(i) for i in babble_records],
                                 float(full_scale), options)


__all__ = ["add_noise", "band_limit", "chain", "clipping", "codec", "codec_draw", "gain", "reverberate",
           "speed", "tempo"]
