"""sluice.features computes the numbers of sluice-features (the same kernels), on numpy arrays and
torch tensors."""
import subprocess
import wave

import numpy as np
import pytest
import torch

import sluice
from conftest import tool


def read_wav(path):
    with wave.open(str(path), "rb") as w:
        rate = w.getframerate()
        samples = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    return samples.astype(np.float32) / 32768.0, rate  # libsndfile's scale


def cli(path, out, *flags):
    subprocess.run([tool("sluice-features"), str(path), "-o", str(out), *flags], check=True,
                   capture_output=True)
    return np.load(out)


@pytest.fixture(scope="module")
def clip(corpus):
    return corpus.replace("manifest.jsonl", "clip007.wav")


@pytest.mark.parametrize("flags,kwargs", [
    ([], {}),
    (["--num-mel-bins", "40", "--frame-length", "20", "--use-energy", "true"],
     dict(num_mel_bins=40, frame_length=20, use_energy=True)),
    (["--dither", "1.5", "--seed", "3", "--window-type", "hamming", "--snip-edges", "false"],
     dict(dither=1.5, seed=3, window_type="hamming", snip_edges=False)),
])
def test_fbank_equals_the_cli(clip, tmp_path, flags, kwargs):
    expected = cli(clip, tmp_path / "f.npy", "--features", "fbank", *flags)
    samples, rate = read_wav(clip)
    got = sluice.features.fbank(samples, rate, **kwargs)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)  # bit for bit: the same kernels, same input


def test_spectrogram_equals_the_cli(clip, tmp_path):
    expected = cli(clip, tmp_path / "s.npy", "--features", "spectrogram",
                   "--sample-frequency", "16000", "--n-fft", "512")
    samples, rate = read_wav(clip)
    got = sluice.features.spectrogram(samples, rate, n_fft=512)
    np.testing.assert_array_equal(got, expected)


def test_torch_in_torch_out_same_numbers(clip):
    samples, rate = read_wav(clip)
    ref = sluice.features.fbank(samples, rate)
    t = torch.from_numpy(samples.astype(np.float64)).unsqueeze(0)  # [1, N] float64, torchaudio's
    got = sluice.features.fbank(t, rate)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), ref)
    spec = sluice.features.spectrogram(torch.from_numpy(samples), rate)
    assert isinstance(spec, torch.Tensor) and spec.shape[1] == 161  # 20 ms at 16 kHz: n_fft 320


def test_loader_rows_equal_fbank_of_the_same_clip(dataset, corpus):
    """The loader's fbank rows are sluice.features.fbank of the decoded record."""
    loader = sluice.Loader(dataset, seed=1, max_frames=1500, threads=2)
    batch = next(iter(loader))
    key = batch.keys[0]
    samples, rate = read_wav(corpus.replace("manifest.jsonl", key))
    expected = sluice.features.fbank(samples, rate)
    row = torch.from_dlpack(batch.features)[0, : int(torch.from_dlpack(batch.lengths)[0])]
    np.testing.assert_array_equal(row.numpy(), expected)


def test_one_set_of_keywords_resolves_at_each_datasets_rate(corpus, dataset, tmp_path):
    """The loader resolves the feature keywords (milliseconds, the kind's defaults) at the
    dataset's own rate: the same keywords give 20 ms windows of 160 samples at 8 kHz and of 320
    at 16 kHz (n_fft / 2 + 1 bins), without the caller reading the dataset's manifest."""
    eight = tmp_path / "ds8"
    sluice.shardify("audio", manifest=corpus, out=eight, tokenizer="char", sample_rate=8000,
                    binary=tool("shardify"))
    for path, rate in ((str(eight), 8000), (dataset, 16000)):
        loader = sluice.Loader(path, seed=1, features="spectrogram", max_frames=1500)
        info = loader.feature_info
        assert (info["sample_rate"], info["dim"]) == (rate, rate // 50 // 2 + 1)
        assert info["frame_shift_seconds"] == pytest.approx(0.010)
        loader.close()
