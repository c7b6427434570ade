"""sluice.load: the samples equal soundfile's (the same libsndfile) for every format, a slice
equals the same slice of the whole, bytes equal the file, channels are picked or averaged as
asked, resampling equals python-soxr's (the reference venv's), and every
error names the file and the reason."""
import os
import subprocess

import numpy as np
import pytest

import sluice

# The reference reader (Debian's python3-soundfile, which run.sh installs): the same libsndfile.
soundfile = pytest.importorskip("soundfile")

RATE = 48000  # Opus's own rate, so every format keeps it
REFERENCE_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                                "venv-tools", "bin", "python")
# (file name, soundfile format, subtype): the containers sluice.load promises.
FORMATS = [
    ("a.wav", "WAV", "PCM_16"),
    ("a.flac", "FLAC", "PCM_16"),
    ("a.ogg", "OGG", "VORBIS"),
    ("a.opus", "OGG", "OPUS"),
    ("a.mp3", "MP3", "MPEG_LAYER_III"),
]


def signal(seconds, channels, rate=RATE, seed=0):
    """[frames, channels] float in [-0.5, 0.5]: a tone per channel plus noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    cols = [0.3 * np.sin(2 * np.pi * (220 + 110 * c) * t) + 0.05 * rng.standard_normal(t.size)
            for c in range(channels)]
    return np.stack(cols, axis=1)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("load")
    x = signal(3.0, 2)
    out = {}
    for name, fmt, subtype in FORMATS:
        path = str(d / name)
        soundfile.write(path, x, RATE, format=fmt, subtype=subtype)
        out[name] = path
    return out


def same_samples(name, got, want):
    """Equal sample for sample; Opus after a seek within float rounding (1.5e-8 seen): libopus
    restarts its decoder at the seek point, with a pre-roll, so the last bits of its float
    output differ from those of a decode that ran from the start."""
    if got.shape != want.shape:
        return False
    if name.endswith(".opus"):
        return np.max(np.abs(got - want)) <= 1e-6
    return np.array_equal(got, want)


def reference(path):
    """soundfile's float32 samples as [channels, frames]."""
    data, rate = soundfile.read(path, dtype="float32", always_2d=True)
    return np.ascontiguousarray(data.T), rate


@pytest.mark.parametrize("name", [f[0] for f in FORMATS])
def test_each_format_equals_soundfile(files, name):
    want, want_rate = reference(files[name])
    got, rate = sluice.load(files[name])
    assert rate == want_rate == RATE
    assert got.dtype == np.float32 and got.shape == want.shape and got.shape[0] == 2
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name", [f[0] for f in FORMATS])
def test_bytes_equal_the_file(files, name):
    with open(files[name], "rb") as f:
        data = f.read()
    whole, _ = sluice.load(files[name])
    for buffer in (data, bytearray(data), memoryview(data)):
        got, rate = sluice.load(buffer)
        assert rate == RATE
        assert np.array_equal(got, whole)
    part, _ = sluice.load(data, offset=1.0, duration=0.5)
    assert same_samples(name, part, whole[:, RATE:RATE + RATE // 2])


@pytest.mark.parametrize("name", [f[0] for f in FORMATS])
def test_a_slice_equals_the_same_slice_of_the_whole(files, name):
    whole, _ = sluice.load(files[name])
    for offset, duration in ((0.0, 0.25), (1.0, 0.5), (2.5, None)):
        got, _ = sluice.load(files[name], offset=offset, duration=duration)
        start = int(round(offset * RATE))
        stop = whole.shape[1] if duration is None else start + int(round(duration * RATE))
        assert same_samples(name, got, whole[:, start:stop]), (offset, duration)


def test_channels_are_picked_or_averaged(files):
    whole, _ = sluice.load(files["a.wav"])
    one, _ = sluice.load(files["a.wav"], channel=1)
    assert np.array_equal(one, whole[1:2])
    mean, _ = sluice.load(files["a.wav"], channel="mean")
    assert mean.shape == (1, whole.shape[1])
    assert np.array_equal(mean[0], (whole[0] + whole[1]) * np.float32(0.5))


def test_int16_wav_gives_the_integers_over_32768(tmp_path):
    pcm = (signal(0.5, 1)[:, 0] * 32767).astype(np.int16)
    path = str(tmp_path / "pcm.wav")
    soundfile.write(path, pcm, 16000, subtype="PCM_16")
    got, rate = sluice.load(path)
    assert rate == 16000
    assert np.array_equal(got[0], pcm.astype(np.float32) / 32768)


def resampled_by_python_soxr(tmp_path, x, in_rate, out_rate):
    """python-soxr's HQ resampling of the rows of x, in the reference venv (run.sh's
    REFERENCE_PIP); the test skips, saying why, without it."""
    if not os.access(REFERENCE_PYTHON, os.X_OK):
        pytest.skip(f"{REFERENCE_PYTHON} is missing: ./run.sh test makes the reference venv")
    probe = subprocess.run([REFERENCE_PYTHON, "-c", "import soxr"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"python-soxr is not installed in {REFERENCE_PYTHON}: {probe.stderr.strip()}")
    src, dst = str(tmp_path / "in.npy"), str(tmp_path / "out.npy")
    np.save(src, x)
    code = ("import sys, numpy as np, soxr\n"
            "x = np.load(sys.argv[1])\n"
            "y = np.stack([soxr.resample(r, int(sys.argv[3]), int(sys.argv[4]), quality='HQ')"
            " for r in x])\n"
            "np.save(sys.argv[2], y.astype(np.float32))\n")
    subprocess.run([REFERENCE_PYTHON, "-c", code, src, dst, str(in_rate), str(out_rate)],
                   check=True)
    return np.load(dst)


@pytest.mark.parametrize("out_rate", [16000, 22050, 96000])
def test_resampling_equals_python_soxr(files, tmp_path, out_rate):
    whole, _ = sluice.load(files["a.flac"])
    got, rate = sluice.load(files["a.flac"], sample_rate=out_rate)
    assert rate == out_rate
    want = resampled_by_python_soxr(tmp_path, whole, RATE, out_rate)
    # The same soxr recipe (HQ, float32, the whole clip at once) gives the same samples and the
    # same length: equal, not close (python-soxr carries its own build of libsoxr 0.1.3).
    assert got.shape == want.shape and got.shape[0] == 2
    assert np.array_equal(got, want), np.max(np.abs(got - want))


def test_resampling_a_slice_equals_resampling_its_samples(files):
    # The slice is decoded, then resampled: the same as resampling what sluice.load gives for it.
    part, _ = sluice.load(files["a.wav"], offset=1.0, duration=1.0, channel=0)
    got, _ = sluice.load(files["a.wav"], offset=1.0, duration=1.0, channel=0, sample_rate=16000)
    assert got.shape == (1, 16000)
    # A double-precision check of the pitch: the 220 Hz tone's peak in the spectrum stays put.
    spectrum = np.abs(np.fft.rfft(got[0].astype(np.float64)))
    assert abs(np.argmax(spectrum) * 16000 / got.shape[1] - 220) <= 1
    spectrum = np.abs(np.fft.rfft(part[0].astype(np.float64)))
    assert abs(np.argmax(spectrum) * RATE / part.shape[1] - 220) <= 1


def test_errors_name_the_file_and_the_reason(files, tmp_path):
    missing = str(tmp_path / "missing.wav")
    with pytest.raises(FileNotFoundError, match="missing.wav: cannot open"):
        sluice.load(missing)
    with pytest.raises(sluice.CorruptionError, match=r"<9 bytes>: not a readable audio file"):
        sluice.load(b"not audio")
    with pytest.raises(sluice.InvalidArgumentError, match=r"a\.wav: offset 9\.000 s is at or"):
        sluice.load(files["a.wav"], offset=9.0)
    with pytest.raises(sluice.InvalidArgumentError, match=r"a\.wav: segment offset .* past the"):
        sluice.load(files["a.wav"], offset=2.0, duration=5.0)
    with pytest.raises(ValueError, match=r"a\.wav: channel=2, but the audio has 2 channels"):
        sluice.load(files["a.wav"], channel=2)
    with pytest.raises(ValueError, match="sample_rate=0"):
        sluice.load(files["a.wav"], sample_rate=0)
    with pytest.raises(ValueError, match="offset=-1.0"):
        sluice.load(files["a.wav"], offset=-1)
    with pytest.raises(ValueError, match="duration=0"):
        sluice.load(files["a.wav"], duration=0)
    with pytest.raises(TypeError, match="source: expected a path or the file's bytes"):
        sluice.load(12)


def test_torch_takes_the_array_without_a_copy(files):
    torch = pytest.importorskip("torch")
    x, _ = sluice.load(files["a.wav"])
    t = torch.from_numpy(x)
    assert t.shape == (2, 3 * RATE) and t.dtype == torch.float32
    assert t.data_ptr() == x.ctypes.data
