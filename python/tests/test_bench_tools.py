"""The comparison scripts of tools/bench run and report what docs/benchmarks.md quotes. Nothing
here is timed: the figures are printed, never asserted (docs/benchmarks.md, "Method")."""
import json
import os
import shutil
import subprocess
import sys
import wave

import numpy as np
import pytest

from conftest import tool, write_wav

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench")


def test_plain_16k_corpus_makes_16k_mono_wav_of_every_clip(tmp_path):
    if shutil.which("sox") is None:
        pytest.skip("sox is not installed (run.sh installs it)")
    src = tmp_path / "src"
    src.mkdir()
    t = np.arange(22050) / 22050
    write_wav(src / "a.wav", 0.3 * np.sin(2 * np.pi * 220 * t), rate=22050)  # 1 s at 22.05 kHz
    # 0.5 s of stereo FLAC at 44.1 kHz, made by sox as make-sample-corpus makes its own
    write_wav(src / "b-mono.wav", 0.3 * np.sin(2 * np.pi * 330 * t[:11025]), rate=22050)
    subprocess.run(["sox", str(src / "b-mono.wav"), "-r", "44100", "-c", "2", str(src / "b.flac")],
                   check=True)
    with open(src / "manifest.jsonl", "w") as f:
        f.write(json.dumps({"audio_filepath": "a.wav", "text": "one", "id": "a"}) + "\n")
        f.write("{not json\n")  # a corpus made with --bad has such lines: skipped
        f.write(json.dumps({"audio_filepath": "b.flac", "text": "two", "id": "b"}) + "\n")
    out = tmp_path / "plain"
    r = subprocess.run([sys.executable, os.path.join(BENCH, "plain_16k_corpus.py"), "--manifest",
                        str(src / "manifest.jsonl"), "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(l) for l in open(out / "manifest.jsonl")]
    assert [(j["id"], j["text"], j["audio_filepath"]) for j in lines] == [
        ("a", "one", "audio/a.wav"), ("b", "two", "audio/b.wav")]
    for j, seconds in zip(lines, (1.0, 0.5)):
        with wave.open(str(out / j["audio_filepath"])) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
            assert abs(w.getnframes() / 16000 - seconds) < 0.01
        assert abs(j["duration"] - seconds) < 0.01


def test_epoch_vs_torch_interleaves_rounds_and_reports_medians(corpus, dataset):
    for module in ("torch", "torchaudio", "soundfile"):
        pytest.importorskip(module)
    r = subprocess.run([sys.executable, os.path.join(BENCH, "epoch_vs_torch.py"), "--manifest",
                        corpus, "--dataset", dataset, "--bench", tool("sluice-bench"),
                        "--rounds", "2", "--epochs", "1", "--batch-size", "16"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0].startswith("versions: python ") and " torch " in out[0]
    assert [l.split(":")[0] for l in out if l.startswith("round ")] == ["round 1", "round 2"]
    assert any(l.startswith("ratio sluice / PyTorch at 2 cores, median of 2 rounds: ") for l in out)
    assert any(l.startswith("ratio per core-second") for l in out)
    report = json.loads(r.stderr.strip().splitlines()[-1])
    assert len(report["rounds"]) == 2
    for g in report["rounds"]:
        # Both sides read the whole corpus: the same 80 clips, as hours of audio.
        assert g["torch"]["hours"] == pytest.approx(g["sluice"]["audio_seconds"] / 3600, rel=1e-3)
        assert g["ratio"] > 0 and g["ratio_per_core_second"] > 0


def test_load_vs_others_reports_each_reader_per_format_and_task():
    pytest.importorskip("soundfile", reason="the script compares with soundfile, not installed here")
    r = subprocess.run([sys.executable, os.path.join(BENCH, "load_vs_others.py"), "--clips", "2",
                        "--seconds", "1", "--long-minutes", "0.5", "--slices", "2", "--rounds",
                        "1", "--formats", "wav,flac"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    header = next(l for l in out if l.startswith("format "))
    assert "sluice.load" in header and "soundfile.read" in header
    rows = [l.split()[:3] for l in out if l.split()[:1] in (["wav"], ["flac"])]
    assert rows == [["wav", "whole", "files"], ["wav", "5", "s"], ["flac", "whole", "files"],
                    ["flac", "5", "s"]]
    # sluice.load is the baseline of every row's ratios.
    assert all("( 1.00x time)" in l for l in out if l.split()[:1] in (["wav"], ["flac"]))


def test_bench_pack_reports_the_three_modes_on_the_same_documents():
    out = subprocess.run([tool("sluice-bench"), "pack", "--documents", "20000", "--seq-len",
                          "2048", "--json"], check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    modes = {m["mode"]: m for m in report["modes"]}
    assert list(modes) == ["concat", "first_fit", "best_fit"]
    for m in modes.values():  # every token in a row: rows x L = tokens + padding
        assert m["rows"] * 2048 == report["tokens"] + m["padding_tokens"], m
    assert modes["best_fit"]["padding_tokens"] <= modes["first_fit"]["padding_tokens"]
    assert modes["concat"]["cut_documents"] > modes["best_fit"]["cut_documents"]


def test_bench_augment_runs_the_loader_with_the_chain_off_and_on_side_by_side(dataset):
    # Babble from the data itself and every other transform without a clip dataset, at
    # probability 1: both epochs hold the same records (speed changes their lengths a little).
    out = subprocess.run([tool("sluice-bench"), "augment", "--dataset", dataset, "--threads", "2",
                          "--consume-hours-per-second", "2.0", "--json"],
                         check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    off, on = report["off"], report["on"]
    assert off["batches"] > 0 and on["batches"] > 0
    assert on["audio_hours"] == pytest.approx(off["audio_hours"], rel=0.1)
    for r in (off, on):
        assert r["hours_per_second_per_core"] == pytest.approx(r["audio_hours"] / r["cpu_seconds"])
        assert r["cores_to_feed_one_gpu"] == pytest.approx(2.0 / r["hours_per_second_per_core"])
    # The codecs alone cost far more than fbank: not a timing bound, a sign the chain ran.
    assert on["cpu_seconds"] > off["cpu_seconds"]


def test_bench_augment_times_only_the_cases_asked_for_in_cpu_time():
    # --only picks cases by name prefix (the codec rows alone: --only codec_); each row is the
    # thread's CPU time (ms of one core), with the wall time beside it: on a loaded machine wall
    # time counts the waits for a core too, and the two part.
    out = subprocess.run([tool("sluice-bench"), "augment", "--only", "codec_ulaw,gain", "--clips",
                          "1", "--seconds", "0.5", "--passes", "1", "--json"],
                         check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    assert sorted(report["ms_per_hour_per_core"]) == ["codec_ulaw", "gain"]
    assert sorted(report["wall_ms_per_hour"]) == ["codec_ulaw", "gain"]
    assert all(v > 0 for v in report["ms_per_hour_per_core"].values())
    r = subprocess.run([tool("sluice-bench"), "augment", "--only", "aac", "--json"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "aac" in r.stderr and "codec_opus" in r.stderr, r.stderr


@pytest.mark.parametrize("flag, value, mode", [
    ("--only", "gain", "generated clips"),
    ("--rate", "8000", "generated clips"),
    ("--seconds", "1", "generated clips"),
    ("--clips", "2", "generated clips"),
    ("--passes", "2", "generated clips"),
    ("--rir-seconds", "0.1", "generated clips"),
    ("--noise-data", "x", "--dataset"),
    ("--rir-data", "x", "--dataset"),
    ("--threads", "1", "--dataset"),
    ("--prob", "0.5", "--dataset"),
    ("--codec-prob", "0.1", "--dataset"),
    ("--features", "raw", "--dataset"),
    ("--consume-hours-per-second", "1", "--dataset"),
])
def test_bench_augment_refuses_a_flag_of_the_other_mode(dataset, flag, value, mode):
    # Each mode has its own flags: one given to the other mode would be ignored, so it is
    # refused (exit 2) naming the flag and the mode it belongs to.
    with_dataset = mode == "generated clips"
    args = ["--dataset", dataset] if with_dataset else ["--clips", "1", "--seconds", "0.1",
                                                         "--passes", "1", "--only", "gain"]
    r = subprocess.run([tool("sluice-bench"), "augment", *args, flag, value, "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert flag in r.stderr and mode in r.stderr, r.stderr


def test_bench_augment_sets_the_codec_probability_apart(dataset):
    # --codec-prob: the codecs at their own probability in the "on" epoch, the rest at --prob
    # (docs/augment.md's "codecs at P = 0.1" row).
    out = subprocess.run([tool("sluice-bench"), "augment", "--dataset", dataset, "--threads", "1",
                          "--prob", "0.5", "--codec-prob", "0.1", "--json"],
                         check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    assert report["probability"] == 0.5 and report["codec_probability"] == 0.1
    assert report["on"]["batches"] > 0
