"""Mistakes a new user makes are refused with the fix, never accepted and ignored: an option of
another kind of dataset, a misspelled keyword, a file or a foreign directory given as a dataset,
a damaged state_dict; and the default thread count shares a node's cores between its ranks."""
import json
import os

import numpy as np
import pytest

import sluice
from conftest import tool


@pytest.fixture(scope="module")
def text_dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("text")
    text = d / "a.txt"
    text.write_text("".join(f"line {i} of some text to pack\n" for i in range(40)),
                    encoding="utf-8")
    sluice.shardify("text", input=[text], out=d / "ds", tokenizer="char", binary=tool("shardify"))
    return str(d / "ds")


# --- an option that does not apply to the dataset's kind names the one that does -------------
@pytest.mark.parametrize("kwargs,match", [
    # packing's sequences per batch on padded audio batches: the cap on rows is max_batch_size
    (dict(batch_size=4), r"batch_size=.*audio.*use max_batch_size"),
    (dict(pack_window=8), r"pack_window=.*use shuffle_window"),
    # a spectrogram option with the default fbank features, and the reverse
    (dict(n_fft=512), r"n_fft=.*features='spectrogram'"),
    (dict(features="spectrogram", num_mel_bins=40), r"num_mel_bins=.*features='fbank'"),
    # feature options with raw samples as features
    (dict(features="raw", frame_shift=20.0), r"frame_shift=.*features='fbank' or 'spectrogram'"),
])
def test_an_option_of_another_kind_is_refused_on_audio(dataset, kwargs, match):
    with pytest.raises(sluice.InvalidArgumentError, match=match):
        sluice.Loader(dataset, seed=1, **kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_mel_bins=40), r"num_mel_bins=.*audio datasets.*is a text dataset"),
    (dict(spec_augment=True), r"spec_augment=.*audio datasets"),
    (dict(batch_size=4), r"batch_size=.*packed.*seq_len"),
    # padded batching's cap under packing: rows per batch are batch_size
    (dict(seq_len=16, max_batch_size=4), r"max_batch_size=.*packing.*use batch_size"),
    (dict(seq_len=16, max_frames=100), r"max_frames=.*packing"),
])
def test_an_option_of_another_kind_is_refused_on_text(text_dataset, kwargs, match):
    with pytest.raises(sluice.InvalidArgumentError, match=match):
        sluice.Loader(text_dataset, seed=1, **kwargs)


def test_options_of_the_datasets_kind_are_accepted(dataset, text_dataset):
    sluice.Loader(dataset, seed=1, max_batch_size=4, num_mel_bins=40, shuffle=False)
    sluice.Loader(dataset, seed=1, features="spectrogram", n_fft=512)
    packed = sluice.Loader(text_dataset, seed=1, seq_len=16, batch_size=2, pack_window=4)
    assert next(iter(packed)).tokens.shape == (2, 17)
    sluice.Loader(text_dataset, seed=1, max_batch_size=4, max_frames=100)


# --- a misspelled keyword gets "did you mean" --------------------------------------------------
def test_misspelled_loader_keyword_suggests_the_right_one(dataset):
    with pytest.raises(TypeError, match="'max_frame'.*did you mean 'max_frames'"):
        sluice.Loader(dataset, seed=1, max_frame=100)
    with pytest.raises(TypeError, match="'pin_memroy'.*did you mean 'pin_memory'"):
        sluice.Loader(dataset, seed=1, pin_memroy=False)
    with pytest.raises(TypeError, match="'num_mel_bin'.*did you mean 'num_mel_bins'"):
        sluice.TorchDataset(dataset, seed=1, num_mel_bin=40)
    # a renamed keyword still names its new name
    with pytest.raises(TypeError, match="keyword 'buckets' was renamed 'num_buckets'"):
        sluice.Loader(dataset, seed=1, buckets=4)


def test_misspelled_feature_keyword_suggests_the_right_one():
    wav = np.zeros(16000, np.float32)
    with pytest.raises(TypeError, match="fbank.*'num_mel_bin'.*did you mean 'num_mel_bins'"):
        sluice.features.fbank(wav, 16000, num_mel_bin=40)
    with pytest.raises(TypeError, match="spectrogram.*'nfft'.*did you mean 'n_fft'"):
        sluice.features.spectrogram(wav, 16000, nfft=512)


def test_misspelled_shardify_keyword_suggests_the_flag(tmp_path):
    with pytest.raises(TypeError, match="'tokenizr'.*did you mean 'tokenizer'"):
        sluice.shardify("audio", manifest=tmp_path / "m.jsonl", out=tmp_path / "o",
                        tokenizr="char", binary=tool("shardify"))


# --- a file, or a directory shardify never wrote, is not "re-run shardify with --resume" -------
def test_a_file_given_as_the_dataset_says_so(dataset):
    with pytest.raises(sluice.Error) as e:
        sluice.Loader(os.path.join(dataset, "manifest.json"), seed=1)
    message = str(e.value)
    assert "is a file" in message and "--resume" not in message
    assert f"HINT: give its directory, {dataset}" in message


def test_a_directory_shardify_never_wrote_says_so(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(sluice.NotFoundError) as e:
        sluice.Loader(tmp_path, seed=1)
    message = str(e.value)
    assert "not a dataset directory" in message and "--resume" not in message


def test_an_unfinished_shardify_output_still_says_resume(tmp_path):
    (tmp_path / ".shardify-journal.jsonl").write_text("{}\n")
    with pytest.raises(sluice.NotFoundError, match="did not finish.*--resume"):
        sluice.Loader(tmp_path, seed=1)


# --- a bad field of a state names the field -----------------------------------------------------
@pytest.mark.parametrize("bad,match", [
    ({"epoch": 1, "batches": "3", "world": 1}, r'state\[\'batches\'\]: expected an int >= 0, got "3"'),
    ({"epoch": 1, "batch": 3, "world": 1}, r"state\['batches'\]: missing"),
    ({"epoch": -1, "batches": 0}, r"state\['epoch'\]: expected an int >= 0, got -1"),
    ({"epoch": 1, "batches": 0, "world": 0}, r"state\['world'\]: expected .*>= 1, got 0"),
    ({"epoch": 1, "batches": 2, "world": 2, "earlier": [{"world": 2, "batches": 1.5}]},
     r"state\['earlier'\]\[0\]\['batches'\]: expected an int >= 0, got 1.5"),
])
def test_a_bad_state_field_is_named(dataset, bad, match):
    loader = sluice.Loader(dataset, seed=1)
    with pytest.raises(ValueError, match=match):
        loader.load_state_dict(bad)


# --- default threads under torchrun: the node's cores shared by its local ranks -----------------
def resolved_threads(dataset):
    loader = sluice.Loader(dataset, seed=1, max_frames=1500)
    next(iter(loader))
    threads = loader.stats()["threads"]
    loader.close()
    return threads


def test_default_threads_share_the_cores_between_local_ranks(dataset, monkeypatch):
    for name in ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                 "SLURM_NTASKS_PER_NODE"):
        monkeypatch.delenv(name, raising=False)
    cores = sluice.usable_cores()
    assert resolved_threads(dataset) == cores
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert resolved_threads(dataset) == max(1, cores // 2)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(4 * cores))  # more ranks than cores: one each
    assert resolved_threads(dataset) == 1
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2")  # mpirun's name for it
    assert resolved_threads(dataset) == max(1, cores // 2)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "x")
    with pytest.raises(ValueError, match="LOCAL_WORLD_SIZE='x'"):
        sluice.Loader(dataset, seed=1)
    # threads= given wins
    loader = sluice.Loader(dataset, seed=1, threads=3, max_frames=1500)
    next(iter(loader))
    assert loader.stats()["threads"] == 3


# --- int16 samples are PCM, not [-1, 1] floats -----------------------------------------------------
def test_int16_samples_are_read_as_pcm_and_other_integers_are_refused():
    import torch

    rng = np.random.default_rng(3)
    pcm = (rng.standard_normal(16000) * 3000).astype(np.int16)
    as_float = pcm.astype(np.float32) / 32768.0  # soundfile.read's scale
    for fn in (sluice.features.fbank, sluice.features.spectrogram):
        expected = fn(as_float, 16000)
        np.testing.assert_array_equal(fn(pcm, 16000), expected)
        np.testing.assert_array_equal(fn(torch.from_numpy(pcm), 16000).numpy(), expected)
        for dtype in (np.int32, np.uint8):
            with pytest.raises(TypeError, match=f"{np.dtype(dtype).name}.*int16 PCM or float"):
                fn(pcm.astype(dtype), 16000)


def test_a_state_of_numpy_or_tensor_counts_loads_and_another_object_is_named(dataset):
    import torch

    loader = sluice.Loader(dataset, seed=1, max_frames=1500)
    it = iter(loader)
    next(it)
    next(it)
    saved = loader.state_dict()
    # a checkpoint's state can come back with numpy or tensor counts (np.savez, torch.save)
    loader.load_state_dict({"epoch": np.int64(saved["epoch"]), "batches": torch.tensor(2),
                            "world": np.int32(1)})
    assert loader.state_dict() == saved
    with pytest.raises(TypeError, match=r"state\['batches'\]: expected an int, got object"):
        loader.load_state_dict({"epoch": 0, "batches": object(), "world": 1})
