#!/usr/bin/env python3
"""Import throughput of `shardify audio` per input format, on one corpus.

1. tools/make-sample-corpus writes --count espeak clips (WAV and FLAC, some 44.1 kHz stereo).
2. The same clips are written in each format by its producer: a NeMo JSONL manifest (no
   "duration", so every clip is read whole), lhotse's cuts.jsonl.gz (trim_to_supervisions of
   whole-recording supervisions), lhotse Shar (to_shar of those cuts, FLAC members), a Kaldi
   data directory (wav.scp of paths + text), one webdataset TarWriter tar and two parquet
   files of datasets' to_parquet (an Audio column of the files' bytes).
3. `shardify audio [--from F] INPUT -j 1` runs --repeat times per format; the best run's CPU
   time (user + sys) and wall time give hours of audio per CPU-second (per core) and per second.

Run with the venv of the tests' references (lhotse, webdataset, datasets; ./run.sh makes it):
  build/venv-tools/bin/python tools/bench/import_throughput.py --shardify build/tools/shardify \
      --work /tmp/import-bench
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import datasets
from lhotse import CutSet, Recording, RecordingSet, SupervisionSegment, SupervisionSet
import webdataset


def prepare(work, count, corpus_tool):
    corpus = os.path.join(work, "corpus")
    if not os.path.exists(os.path.join(corpus, "manifest.jsonl")):
        subprocess.run([corpus_tool, "--out", corpus, "--count", str(count), "--jobs", "2"],
                       check=True, capture_output=True)
    lines = [json.loads(l) for l in open(os.path.join(corpus, "manifest.jsonl"))]
    recs, sups, nemo = [], [], []
    os.makedirs(os.path.join(work, "kaldi"), exist_ok=True)
    with open(os.path.join(work, "kaldi", "wav.scp"), "w") as wav, \
            open(os.path.join(work, "kaldi", "text"), "w") as text, \
            webdataset.TarWriter(os.path.join(work, "all.tar")) as tar:
        for j in lines:
            path = os.path.abspath(os.path.join(corpus, j["audio_filepath"]))
            r = Recording.from_file(path, recording_id=j["id"])
            recs.append(r)
            sups.append(SupervisionSegment(
                id=j["id"], recording_id=j["id"], start=0, duration=r.duration,
                channel=r.channel_ids if len(r.channel_ids) > 1 else 0, text=j["text"]))
            nemo.append({"audio_filepath": path, "text": j["text"], "id": j["id"]})
            wav.write(f"{j['id']} {path}\n")
            text.write(f"{j['id']} {j['text']}\n")
            tar.write({"__key__": j["id"], os.path.splitext(path)[1][1:]: open(path, "rb").read(),
                       "txt": j["text"]})
    cuts = CutSet.from_manifests(recordings=RecordingSet.from_recordings(recs),
                                 supervisions=SupervisionSet.from_segments(sups)) \
        .trim_to_supervisions()
    cuts.to_file(os.path.join(work, "cuts.jsonl.gz"))
    shar = os.path.join(work, "shar")
    if not os.path.isdir(shar):
        os.makedirs(shar)
        cuts.to_shar(shar, fields={"recording": "flac"}, shard_size=1000)
    datasets.disable_progress_bars()
    ds = datasets.Dataset.from_dict(
        {"id": [e["id"] for e in nemo], "text": [e["text"] for e in nemo],
         "audio": [{"bytes": open(e["audio_filepath"], "rb").read(),
                    "path": os.path.basename(e["audio_filepath"])} for e in nemo]}
    ).cast_column("audio", datasets.Audio(decode=False))
    for k in range(2):
        ds.shard(2, k, contiguous=True).to_parquet(os.path.join(work, f"train-{k}.parquet"))
    with open(os.path.join(work, "nemo.jsonl"), "w") as f:
        f.writelines(json.dumps(e) + "\n" for e in nemo)
    return sum(r.duration for r in recs) / 3600


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shardify", default="build/tools/shardify")
    ap.add_argument("--corpus-tool", default="tools/make-sample-corpus")
    ap.add_argument("--work", required=True)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    hours = prepare(a.work, a.count, a.corpus_tool)
    print(f"corpus: {a.count} clips, {hours:.4f} h; shardify -j 1, best of {a.repeat}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    inputs = {
        "nemo": ["-m", os.path.join(a.work, "nemo.jsonl")],
        "lhotse": ["--from", "lhotse", os.path.join(a.work, "cuts.jsonl.gz")],
        "kaldi": ["--from", "kaldi", os.path.join(a.work, "kaldi")],
        "shar": ["--from", "lhotse", os.path.join(a.work, "shar")],
        "wds": ["--from", "wds", os.path.join(a.work, "all.tar")],
        # The parquet rows are read by this Python's pyarrow (its CPU time counts: shardify
        # waits for the reader, so it is among the children's).
        "hf": ["--from", "hf", "--python", sys.executable,
               os.path.join(a.work, "train-0.parquet"), os.path.join(a.work, "train-1.parquet")],
    }
    print("| format | CPU s | wall s | h of audio per CPU-second | h of audio per second |")
    print("| --- | --- | --- | --- | --- |")
    for name, args in inputs.items():
        best_cpu = best_wall = float("inf")
        for _ in range(a.repeat):
            out = os.path.join(a.work, "out-" + name)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            subprocess.run([a.shardify, "audio", *args, "-o", out, "-j", "1", "--quiet",
                            "--overwrite"], check=True, capture_output=True)
            wall = time.monotonic() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
        print(f"| {name} | {best_cpu:.2f} | {best_wall:.2f} | {hours / best_cpu:.3f} | "
              f"{hours / best_wall:.3f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
