#!/usr/bin/python3
"""Side by side, in one run: sluice.load against soundfile.read and torchaudio.load, on whole
files and on 5 s slices of a long file.

  PYTHONPATH=build/python python3 tools/bench/load_vs_others.py [--clips 40] [--seconds 10]
      [--long-minutes 30] [--slices 20] [--rounds 3] [--formats wav,flac,mp3]
  build/venv-bench/bin/python tools/bench/load_vs_others.py   # PyPI torchaudio (run.sh bench-venv)

Writes the files with soundfile (speech-like clips at 16 kHz mono, tools/bench/speech_clips.py;
the long file is those clips end to end), then --rounds times, taking turns, loads every file
with each reader, timing whole passes. A slice is `offset`/`duration` for sluice.load,
`start`/`stop` frames for soundfile.read and `frame_offset`/`num_frames` for torchaudio.load, at
seeded random offsets. Prints per format and task the files/s of each reader (fastest round) and
its time relative to sluice.load (> 1: slower than sluice). A reader that is not installed (or
that fails on a format, as torchaudio without FFmpeg does) is skipped saying why. Debian's
torchaudio 0.13 decodes a slice from the start of the file: its MP3 slices of a 30 min file take
seconds each, so keep --slices small with mp3.
"""
import argparse
import os
import random
import sys
import tempfile
import time

import numpy as np
import soundfile

from speech_clips import speech_like  # beside this script

import sluice

RATE = 16000


def readers():
    """{name: (whole(path), slice(path, offset_s, duration_s))} of what is installed, and
    {name: why} of what is not."""
    out = {
        "sluice.load": (lambda p: sluice.load(p),
                        lambda p, o, d: sluice.load(p, offset=o, duration=d)),
        "soundfile.read": (
            lambda p: soundfile.read(p, dtype="float32", always_2d=True),
            lambda p, o, d: soundfile.read(p, start=int(round(o * RATE)),
                                           stop=int(round((o + d) * RATE)), dtype="float32",
                                           always_2d=True)),
    }
    missing = {}
    try:
        import torchaudio

        out[f"torchaudio.load {torchaudio.__version__}"] = (
            lambda p: torchaudio.load(p),
            lambda p, o, d: torchaudio.load(p, frame_offset=int(round(o * RATE)),
                                            num_frames=int(round(d * RATE))))
    except Exception as e:  # noqa: BLE001 - any import failure means the column is skipped
        missing["torchaudio.load"] = f"{type(e).__name__}: {e}"
    return out, missing


def write(path, samples, fmt):
    subtype = {"wav": "PCM_16", "flac": "PCM_16", "mp3": "MPEG_LAYER_III", "ogg": "VORBIS"}[fmt]
    soundfile.write(path, samples, RATE, format="OGG" if fmt == "ogg" else fmt.upper(),
                    subtype=subtype)


def time_pass(fn, jobs):
    t = time.perf_counter()
    for job in jobs:
        fn(*job)
    return time.perf_counter() - t


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clips", type=int, default=40, help="whole files per format")
    p.add_argument("--seconds", type=float, default=10, help="length of each whole file")
    p.add_argument("--long-minutes", type=float, default=30, help="length of the long file")
    p.add_argument("--slices", type=int, default=20, help="5 s slices of the long file per pass")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--formats", default="wav,flac,mp3")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()

    found, missing = readers()
    clips = [speech_like(i, RATE, int(args.seconds * RATE)) for i in range(args.clips)]
    long = np.concatenate([speech_like(1000 + i, RATE, 30 * RATE)
                           for i in range(int(args.long_minutes * 2))])
    long_seconds = long.size / RATE
    pick = random.Random(args.seed)
    offsets = [pick.uniform(0, long_seconds - 5.0) for _ in range(args.slices)]

    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, soundfile "
          f"{soundfile.__version__} (libsndfile {soundfile.__libsndfile_version__}), sluice from "
          f"{os.path.dirname(sluice.__file__)}")
    for name, why in missing.items():
        print(f"{name}: skipped ({why})")
    print(f"{args.clips} files of {args.seconds:g} s and {args.slices} slices of 5 s of a "
          f"{long_seconds / 60:.0f} min file, 16 kHz mono, {args.rounds} rounds, fastest round")
    print(f"{'format':6} {'task':12} " + " ".join(f"{n:>28}" for n in found))
    with tempfile.TemporaryDirectory() as d:
        for fmt in args.formats.split(","):
            paths = []
            for i, c in enumerate(clips):
                paths.append(os.path.join(d, f"clip{i}.{fmt}"))
                write(paths[-1], c, fmt)
            long_path = os.path.join(d, f"long.{fmt}")
            write(long_path, long, fmt)
            tasks = {"whole files": [(p,) for p in paths],
                     "5 s slices": [(long_path, o, 5.0) for o in offsets]}
            for task, jobs in tasks.items():
                best = {}
                for _ in range(args.rounds):
                    for name, (whole, part) in found.items():
                        fn = whole if task == "whole files" else part
                        try:
                            t = time_pass(fn, jobs)
                        except Exception as e:  # noqa: BLE001 - reported, the column skipped
                            best[name] = f"fails: {type(e).__name__}"
                            continue
                        if not isinstance(best.get(name), str):
                            best[name] = min(best.get(name, t), t)
                base = best["sluice.load"]
                cells = []
                for name in found:
                    b = best[name]
                    if isinstance(b, str):
                        cells.append(f"{b:>28}")
                    else:
                        cells.append(f"{len(jobs) / b:10.1f}/s ({b / base:5.2f}x time)".rjust(28))
                print(f"{fmt:6} {task:12} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
