#!/usr/bin/python3
"""Side by side, in one run: sluice's features against torchaudio on the same clips.

  /usr/bin/python3 tools/bench/features_vs_torchaudio.py [--features fbank|spectrogram|both]
      [--seconds 16] [--clips 32] [--threads 1] [--bench build/tools/sluice-bench]

Writes the clips as 16-bit WAV files (16 kHz for fbank, 8 kHz for the spectrogram) into a temporary
folder. torchaudio.compliance.kaldi.fbank (80 bins, dither 0) or torch.stft (DeepSpeech2: n_fft 160,
hop 80, periodic Hamming, |X|, log1p, normalised) runs on them clip after clip with
torch.set_num_threads(T); then sluice-bench runs on the same files with --threads T (a clip per
thread, as the loader does). Both start from decoded samples and report their fastest pass.
Prints clips/s for each and the ratio, after a line of versions to quote with them. Runs with
PyPI's torch in the benchmark venv (build/venv-bench/bin/python, `./run.sh bench-venv`) or with
Debian's python3 (python3-torch 1.13, python3-torchaudio, python3-soundfile).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from speech_clips import speech_like  # beside this script
import soundfile
import torch
import torchaudio
import torchaudio.compliance.kaldi as kaldi


def time_best(fn, clips, passes):
    fn(clips[0])  # warm-up: plans, allocator
    best = math.inf
    for _ in range(passes):
        t0 = time.perf_counter()
        for c in clips:
            fn(c)
        best = min(best, time.perf_counter() - t0)
    return best


def torch_fbank(x):
    return kaldi.fbank(x, num_mel_bins=80, dither=0.0, energy_floor=0.0)


WINDOW = torch.hamming_window(160, periodic=True)


def torch_spectrogram(x):
    spec = torch.stft(x, n_fft=160, hop_length=80, win_length=160, window=WINDOW, center=True,
                      pad_mode="reflect", return_complex=True).abs().log1p()
    return (spec - spec.mean()) / spec.std()


def run(kind, args, tmp):
    rate = 16000 if kind == "fbank" else 8000
    n = int(round(args.seconds * rate))
    paths, tensors = [], []
    for i in range(args.clips):
        pcm = np.clip(np.round(speech_like(i, rate, n) * 32768), -32768, 32767).astype(np.int16)
        path = os.path.join(tmp, f"{kind}-{i:04d}.wav")
        soundfile.write(path, pcm, rate, subtype="PCM_16")
        paths.append(path)
        if kind == "fbank":
            tensors.append(torch.from_numpy(pcm.astype(np.float32)).unsqueeze(0))  # int16 range
        else:
            tensors.append(torch.from_numpy(pcm.astype(np.float32) / 32768.0))
    listing = os.path.join(tmp, f"{kind}.list")
    with open(listing, "w") as f:
        f.write("\n".join(paths) + "\n")

    torch.set_num_threads(args.threads)
    fn = torch_fbank if kind == "fbank" else torch_spectrogram
    with torch.inference_mode():
        torch_wall = time_best(fn, tensors, args.passes)
    torch_cps = args.clips / torch_wall

    out = subprocess.run([args.bench, "features", "--features", kind, "--input", listing,
                          "--threads", str(args.threads), "--passes", str(args.passes), "--json"],
                         check=True, capture_output=True, text=True).stdout
    ours = json.loads(out)
    ratio = ours["clips_per_second"] / torch_cps
    name = "torchaudio kaldi.fbank" if kind == "fbank" else "torch.stft"
    print(f"{kind}: {args.clips} clips x {args.seconds:g} s, {args.threads} thread(s)")
    print(f"  {name:24s} {torch_cps:9.1f} clips/s  ({torch_wall * 1e6 * args.threads / ours['frames']:.3f} us/frame/core)")
    print(f"  {'sluice':24s} {ours['clips_per_second']:9.1f} clips/s  ({ours['us_per_frame_per_core']:.3f} us/frame/core)")
    print(f"  ratio {ratio:.1f}x")
    return {"kind": kind, "threads": args.threads, "torch_clips_per_second": torch_cps,
            "sluice_clips_per_second": ours["clips_per_second"], "ratio": ratio}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--features", choices=["fbank", "spectrogram", "both"], default="both")
    p.add_argument("--seconds", type=float, default=16)
    p.add_argument("--clips", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--bench", default=os.path.join("build", "tools", "sluice-bench"),
                   help="the sluice-bench binary")
    p.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    args = p.parse_args()
    if not os.path.exists(args.bench):
        sys.exit(f"{args.bench}: not found; build it (ninja -C build tools/sluice-bench) or pass --bench")
    kinds = ["fbank", "spectrogram"] if args.features == "both" else [args.features]
    # What the figures were measured with: quote this line with them.
    print(f"versions: python {sys.version.split()[0]}, torch {torch.__version__}, torchaudio "
          f"{torchaudio.__version__}, numpy {np.__version__}; {os.cpu_count()} cores, load "
          f"average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="sluice-vs-torch-") as tmp:
        results = [run(k, args, tmp) for k in kinds]
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
