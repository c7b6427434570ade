"""sluice.augment.codec equals the same codec through soundfile (the same libsndfile) byte for
byte: every codec sluice offers, at the rates it takes and a few drawn compression levels, on
speech-like clips and on noise, with clipping beyond +-1 included (docs/augment.md, codec)."""
import io

import numpy as np
import pytest

import sluice

# The reference (Debian's python3-soundfile 0.12.1, which run.sh installs): the same libsndfile
# as sluice's, so the encoders and decoders are the same code.
soundfile = pytest.importorskip("soundfile")

# (sluice's name, soundfile format, subtype): the container sluice encodes each codec in
# (features/codec_degrade.cc, SndfileFormat).
CODECS = {
    "ulaw": ("WAV", "ULAW"),
    "alaw": ("WAV", "ALAW"),
    "gsm": ("WAV", "GSM610"),
    "vorbis": ("OGG", "VORBIS"),
    "opus": ("OGG", "OPUS"),
    "mp3": ("MP3", "MPEG_LAYER_III"),
}
# libsndfile's SFC_SET_COMPRESSION_LEVEL (sndfile.h), the one encoder setting sluice makes.
SFC_SET_COMPRESSION_LEVEL = 0x1301
# Rates each codec is asked for: telephone and wideband; Opus takes 8, 12, 16, 24, 48 kHz only.
RATES = {"ulaw": [8000, 16000], "alaw": [8000, 16000], "gsm": [8000, 16000],
         "vorbis": [16000, 22050], "opus": [16000, 48000], "mp3": [16000, 22050]}
# A few levels drawn as CodecOptions draws them (uniform in [min, max]), plus both ends.
LEVELS = [0.0, 1.0] + [round(float(v), 6) for v in np.random.default_rng(30).uniform(0, 1, 2)]


def clip(kind, rate, seconds=0.6, seed=0):
    """Speech-like (a gliding harmonic source under a syllable envelope), or white noise that
    goes past +-1 so that sluice's clamp is exercised too."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    if kind == "noise":
        return (0.6 * rng.standard_normal(t.size)).astype(np.float32)
    f0 = 120 + 30 * np.sin(2 * np.pi * 1.5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = np.clip(np.sin(2 * np.pi * 3 * t), 0, None) ** 0.5
    return (0.25 * envelope * voiced + 0.01 * rng.standard_normal(t.size)).astype(np.float32)


def through_soundfile(x, rate, name, level):
    """What sluice does (features/codec_degrade.cc, CodecRoundTrip), through soundfile: clamp to
    +-1, encode mono float32 at `level` into memory, decode as float32, cut or zero-pad to the
    input's length. soundfile 0.12 has no compression_level keyword (0.13 added it), so the level
    is set with sf_command on the open SoundFile, through soundfile's private _snd and _file:
    undocumented, but the very call sluice makes, before the first sample is written. Decoded
    with SoundFile.read from the start, not soundfile.read: that one seeks to frame 0 first,
    and after a seek libsndfile 1.2.0's MP3 decoder (mpg123) gives other float32 samples (up to
    6e-8 apart on thousands of samples) than a straight decode, which is what sluice does."""
    fmt, subtype = CODECS[name]
    y = np.clip(x, -1.0, 1.0).astype(np.float32)
    buf = io.BytesIO()
    with soundfile.SoundFile(buf, "w", samplerate=rate, channels=1, format=fmt,
                             subtype=subtype) as f:
        value = soundfile._ffi.new("double*", level)
        soundfile._snd.sf_command(f._file, SFC_SET_COMPRESSION_LEVEL, value,
                                  soundfile._ffi.sizeof("double"))
        f.write(y)
    buf.seek(0)
    with soundfile.SoundFile(buf) as f:
        assert f.samplerate == rate and f.channels == 1
        # As sluice does: one read of up to n frames (a WAV of GSM 6.10 is not seekable, so
        # soundfile cannot count the rest itself).
        decoded = f.read(x.size, dtype="float32", always_2d=True)
    out = np.zeros(x.size, dtype=np.float32)
    m = min(x.size, decoded.shape[0])
    out[:m] = decoded[:m, 0]
    return out


def first_difference(a, b):
    diff = np.flatnonzero(a.view(np.uint32) != b.view(np.uint32))
    if diff.size == 0:
        return "none"
    i = int(diff[0])
    return (f"{diff.size} of {a.size} samples differ, first at {i}: sluice {a[i]!r} vs "
            f"soundfile {b[i]!r}; max |diff| {float(np.max(np.abs(a - b))):.3g}")


@pytest.mark.parametrize("name", sorted(CODECS))
def test_codec_equals_soundfile_round_trip(name):
    for rate in RATES[name]:
        for kind, seed in (("speech", 1), ("noise", 2)):
            x = clip(kind, rate, seed=seed)
            for level in LEVELS:
                got = sluice.augment.codec(x, rate, name, level)
                want = through_soundfile(x, rate, name, level)
                assert got.dtype == np.float32 and got.shape == x.shape
                assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (
                    f"{name} at {rate} Hz, {kind}, level {level}: "
                    f"{first_difference(got, want)}")


@pytest.mark.parametrize("name", ["vorbis", "opus", "mp3"])
def test_compression_level_changes_the_output(name):
    """The level reaches the encoder in both paths (else the equality above would be vacuous for
    the level): the two ends decode to different samples."""
    rate = RATES[name][0]
    x = clip("speech", rate, seed=3)
    lo = sluice.augment.codec(x, rate, name, 0.0)
    hi = sluice.augment.codec(x, rate, name, 1.0)
    assert not np.array_equal(lo, hi)
    assert not np.array_equal(through_soundfile(x, rate, name, 0.0),
                              through_soundfile(x, rate, name, 1.0))


@pytest.mark.parametrize("name", sorted(CODECS))
def test_loader_codec_step_equals_soundfile_at_the_drawn_level(name):
    """The loader's chain (codec degradation alone) on records whose level it draws: redone
    through soundfile at the level codec_draw reports, byte for byte."""
    rate = RATES[name][0]
    options = dict(codec_prob=1.0, codecs=[name], codec_min_compression=0.1,
                   codec_max_compression=0.9)
    levels = set()
    for record in range(3):
        x = clip("speech", rate, seed=10 + record)
        drawn = sluice.augment.codec_draw(seed=7, epoch=2, record=record, **options)
        assert drawn is not None and drawn[0] == name and 0.1 <= drawn[1] <= 0.9
        levels.add(drawn[1])
        got = sluice.augment.chain(x, rate, seed=7, epoch=2, record=record, **options)
        want = through_soundfile(x, rate, name, drawn[1])
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (
            f"{name} at {rate} Hz, record {record}, level {drawn[1]}: "
            f"{first_difference(got, want)}")
    assert len(levels) == 3


def test_codec_draw_is_none_when_no_codec_is_applied():
    assert sluice.augment.codec_draw(seed=1, epoch=0, record=0) is None
    assert sluice.augment.codec_draw(seed=1, epoch=0, record=0, codec_prob=0.0) is None
    with pytest.raises(ValueError, match="codec_prob"):
        sluice.augment.codec_draw(seed=1, epoch=0, record=0, codec_prob=2.0)
