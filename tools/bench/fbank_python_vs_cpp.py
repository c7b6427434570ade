#!/usr/bin/python3
"""Side by side, in one run: sluice.features.fbank from Python against the C++ kernel it calls.

  PYTHONPATH=... python3 tools/bench/fbank_python_vs_cpp.py [--seconds 16] [--clips 32]
      [--passes 3] [--rounds 5] [--bench build/tools/sluice-bench]

Writes the clips (sluice-bench's speech-like recipe, 16 kHz) as 16-bit WAV files, then, --rounds
times in turn, runs `sluice-bench features --features fbank --threads 1` on them (the kernel
alone, from decoded samples) and sluice.features.fbank on the same samples as float32 in [-1, 1]
(what soundfile.read gives), clip after clip. Taking turns, and the fastest pass of each over
all rounds, keeps a busy machine's load from favouring one side. Prints clips/s of each, the
ratio (Python / C++; 1.0 = no overhead) of the fastest passes and the median of each round's
ratio (the two sides measured seconds apart), and the Python call's overhead per clip.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

from speech_clips import speech_like  # beside this script

import sluice


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=16)
    p.add_argument("--clips", type=int, default=32)
    p.add_argument("--passes", type=int, default=3, help="timed passes per round and side")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--bench", default=os.path.join("build", "tools", "sluice-bench"))
    args = p.parse_args()
    if not os.path.exists(args.bench):
        sys.exit(f"{args.bench}: not found; build it (ninja -C build tools/sluice-bench) or pass "
                 "--bench")
    rate = 16000
    n = int(round(args.seconds * rate))
    with tempfile.TemporaryDirectory(prefix="sluice-fbank-") as tmp:
        paths, clips = [], []
        for i in range(args.clips):
            pcm = np.clip(np.round(speech_like(i, rate, n) * 32768), -32768, 32767).astype("<i2")
            path = os.path.join(tmp, f"{i:04d}.wav")
            with wave.open(path, "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(rate)
                w.writeframes(pcm.tobytes())
            paths.append(path)
            clips.append(pcm.astype(np.float32) / 32768.0)
        listing = os.path.join(tmp, "clips.list")
        with open(listing, "w") as f:
            f.write("\n".join(paths) + "\n")
        sluice.features.fbank(clips[0], rate)  # warm-up
        cpp_cps, best, ratios = 0.0, math.inf, []
        for _ in range(args.rounds):
            cpp = json.loads(subprocess.run(
                [args.bench, "features", "--features", "fbank", "--input", listing, "--threads",
                 "1", "--passes", str(args.passes), "--json"],
                check=True, capture_output=True, text=True).stdout)
            cpp_cps = max(cpp_cps, cpp["clips_per_second"])
            round_best = math.inf
            for _ in range(args.passes):
                t0 = time.perf_counter()
                for c in clips:
                    sluice.features.fbank(c, rate)
                round_best = min(round_best, time.perf_counter() - t0)
            best = min(best, round_best)
            ratios.append(args.clips / round_best / cpp["clips_per_second"])
    py_cps = args.clips / best
    print(f"fbank (80 bins): {args.clips} clips x {args.seconds:g} s, 1 thread, "
          f"fastest of {args.rounds} x {args.passes} passes")
    print(f"  C++ kernel (sluice-bench features) {cpp_cps:9.1f} clips/s")
    print(f"  sluice.features.fbank (Python)     {py_cps:9.1f} clips/s")
    print(f"  ratio {py_cps / cpp_cps:.3f} (fastest of each); median of the rounds' ratios "
          f"{statistics.median(ratios):.3f}; overhead {1e3 * (1 / py_cps - 1 / cpp_cps):.3f} ms "
          "per call")


if __name__ == "__main__":
    main()
