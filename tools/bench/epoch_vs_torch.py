#!/usr/bin/python3
"""One epoch of sluice's loader next to the equivalent PyTorch pipeline, on the same corpus and cores.

PyTorch side (what a typical recipe does): a torch DataLoader with --workers worker processes
(one torch thread each, so workers = cores) over the corpus's JSONL manifest; each item is read
from the original WAV/FLAC with soundfile, downmixed, resampled to 16 kHz when needed
(torchaudio.transforms.Resample, one per source rate; --resample functional: the slower
torchaudio.functional.resample per clip, as the figures before torch 2.11 were taken), turned
into torchaudio.compliance.kaldi.fbank (80 bins, dither 0), and batches are padded and collated
([B, T, 80] float32 + lengths), shuffled, fixed batch size.

sluice side: `sluice-bench epoch DATASET --threads --workers --features fbank --num-mel-bins 80
--dither 0 --json` on the dataset shardify made from the same manifest, with --workers threads and
with 1 thread.

Interleaved, in one run: --rounds rounds, each running both sides back to back (which goes first
alternates), and the ratio taken within each round. A round's sluice figure is the median of its
--epochs epochs; the DataLoader runs one epoch per round. Prints each round (with the CPU
utilisation of each side: far below the core count means another process had the cores), then
the median, minimum and maximum over the rounds, and a line of versions to quote with them. The
ratio per core-second divides each side's h/s by its CPU utilisation: audio per second of CPU it
got, less moved by other processes than the wall-clock ratio.

Runs with PyPI's torch in the benchmark venv (`./run.sh bench-venv`, docs/benchmarks.md) or with
Debian's python3 (python3-torch 1.13, python3-torchaudio, python3-soundfile):

  build/venv-bench/bin/python tools/bench/epoch_vs_torch.py --manifest CORPUS/manifest.jsonl --dataset DIR
  /usr/bin/python3 tools/bench/epoch_vs_torch.py --manifest CORPUS/manifest.jsonl --dataset DIR
"""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import numpy
import soundfile
import torch
import torchaudio


class Corpus(torch.utils.data.Dataset):
    def __init__(self, manifest, limit, resample="kernel"):
        self.base = os.path.dirname(os.path.abspath(manifest))
        self.resample = resample
        self.resamplers = {}  # source rate -> torchaudio.transforms.Resample, per worker
        self.items = []
        with open(manifest, encoding="utf-8") as f:
            for line in f:
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if "audio_filepath" not in j or "text" not in j:
                    continue
                path = j["audio_filepath"]
                if not os.path.isabs(path):
                    path = os.path.join(self.base, path)
                self.items.append((path, j["text"]))
        if limit:
            self.items = self.items[:limit]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, text = self.items[i]
        try:
            audio, rate = soundfile.read(path, dtype="float32", always_2d=True)
        except Exception:  # the corpus's deliberately broken files: skip, as shardify rejects them
            return None
        wav = torch.from_numpy(audio).mean(dim=1)
        if rate != 16000:
            wav = self.to_16k(wav, rate)
        if wav.numel() < 400:
            return None
        feats = torchaudio.compliance.kaldi.fbank(
            wav.unsqueeze(0) * 32768, num_mel_bins=80, dither=0.0, sample_frequency=16000)
        return feats, wav.numel() / 16000.0, text


    def to_16k(self, wav, rate):
        if self.resample == "functional":  # builds the sinc kernel again for every clip
            return torchaudio.functional.resample(wav, rate, 16000)
        # The kernel once per source rate, as torchaudio's documentation advises for repeated use:
        # the same output to 1e-4, 2-3x faster for 22.05 and 44.1 kHz clips.
        if rate not in self.resamplers:
            self.resamplers[rate] = torchaudio.transforms.Resample(rate, 16000)
        return self.resamplers[rate](wav)


def collate(items):
    items = [x for x in items if x is not None]
    if not items:
        return None
    lengths = torch.tensor([f.shape[0] for f, _, _ in items], dtype=torch.int32)
    feats = torch.nn.utils.rnn.pad_sequence([f for f, _, _ in items], batch_first=True)
    seconds = sum(s for _, s, _ in items)
    return feats, lengths, [t for _, _, t in items], seconds


def worker_init(_):
    torch.set_num_threads(1)  # one core per worker: workers = cores


def run_torch(args):
    torch.set_num_threads(1)
    corpus = Corpus(args.manifest, args.limit, getattr(args, "resample", "kernel"))
    loader = torch.utils.data.DataLoader(
        corpus, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
        collate_fn=collate, worker_init_fn=worker_init, prefetch_factor=2,
        persistent_workers=False)
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    seconds = 0.0
    batches = 0
    for batch in loader:
        if batch is None:
            continue
        seconds += batch[3]
        batches += 1
    wall = time.perf_counter() - t0
    # Without persistent_workers the exhausted iterator has joined its workers, so their CPU
    # time is in RUSAGE_CHILDREN now.
    return {"hours": seconds / 3600, "wall_seconds": wall, "batches": batches,
            "hours_per_second": seconds / 3600 / wall,
            "cpu_utilisation": (cpu_seconds() - cpu0) / wall}


def cpu_seconds():
    """CPU time of this process and its reaped children (the DataLoader's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_sluice(args, threads):
    cmd = [args.bench, "epoch", args.dataset, "--epochs", str(args.epochs), "--threads", str(threads),
           "--features", "fbank", "--num-mel-bins", "80", "--dither", "0", "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    epochs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    # The median epoch: the round's figure (the best one only says what a quiet moment gives).
    epochs.sort(key=lambda e: e["hours_per_second"])
    return epochs[len(epochs) // 2], cmd


def versions():
    """What the figures were measured with: quote this line with them."""
    v = {"python": platform.python_version(), "torch": torch.__version__,
         "torchaudio": torchaudio.__version__, "numpy": numpy.__version__,
         "soundfile": soundfile.__version__, "cores": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            v["cpu"] = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return v


def spread(values):
    """(median, min, max) of a list of figures."""
    return statistics.median(values), min(values), max(values)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--manifest", required=True, help="the corpus's JSONL manifest (original audio)")
    p.add_argument("--dataset", required=True, help="the sluice dataset shardify made from it")
    p.add_argument("--bench", default="build/tools/sluice-bench", help="sluice-bench binary")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers = sluice threads")
    p.add_argument("--batch-size", type=int, default=32, help="PyTorch batch size (utterances)")
    p.add_argument("--epochs", type=int, default=3,
                   help="sluice epochs per round (the round's figure is their median)")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds of sluice and PyTorch, alternating which goes first")
    p.add_argument("--limit", type=int, default=0, help="PyTorch side: first N manifest lines only")
    p.add_argument("--resample", choices=["kernel", "functional"], default="kernel",
                   help="PyTorch side: a transforms.Resample per source rate (kernel made once), "
                        "or functional.resample per clip (kernel made per clip)")
    args = p.parse_args()

    v = versions()
    print("versions: " + ", ".join(f"{k} {x}" for k, x in v.items()), flush=True)
    # Interleaved: each round runs both sides back to back, the first side alternating, so that
    # the load of a shared machine falls on both alike; the ratio is taken within a round.
    rounds = []
    for r in range(args.rounds):
        order = ["sluice", "torch"] if r % 2 == 0 else ["torch", "sluice"]
        got = {}
        for side in order:
            if side == "torch":
                got["torch"] = run_torch(args)
            else:
                got["sluice"], cmd = run_sluice(args, args.workers)
                got["sluice_1_thread"], _ = run_sluice(args, 1)
        got["ratio"] = got["sluice"]["hours_per_second"] / got["torch"]["hours_per_second"]
        # Audio per core-second: what each side did with the CPU it got, which a shared machine's
        # load moves less than wall-clock throughput.
        per_core = lambda r: r["hours_per_second"] / max(r["cpu_utilisation"], 1e-9)
        got["ratio_per_core_second"] = per_core(got["sluice"]) / per_core(got["torch"])
        got["load_average"] = os.getloadavg()[0]
        t, s, s1 = got["torch"], got["sluice"], got["sluice_1_thread"]
        print(f"round {r + 1}: PyTorch {t['hours_per_second']:.4f} h/s ({t['wall_seconds']:.1f} s, "
              f"cpu {t['cpu_utilisation']:.0%}); sluice {args.workers} threads "
              f"{s['hours_per_second']:.4f} h/s ({s['wall_seconds']:.2f} s, "
              f"cpu {s['cpu_utilisation']:.0%}), 1 thread {s1['hours_per_second']:.4f} h/s; "
              f"sluice / PyTorch {got['ratio']:.1f}x, per core-second "
              f"{got['ratio_per_core_second']:.1f}x; load average {got['load_average']:.1f}",
              flush=True)
        rounds.append(got)

    t = rounds[0]["torch"]
    s = rounds[0]["sluice"]
    print(f"corpus: {args.manifest} ({t['hours']:.3f} h read by PyTorch, {t['batches']} batches of "
          f"{args.batch_size}); dataset {args.dataset} ({s['batches']} batches, peak RSS "
          f"{s['peak_rss_bytes'] / 1e6:.0f} MB)")
    fmt = lambda m: f"{m[0]:.4g} (min {m[1]:.4g}, max {m[2]:.4g})"
    print(f"PyTorch DataLoader, {args.workers} workers (soundfile, {args.resample} resampling, "
          f"torchaudio kaldi fbank, pad), "
          f"h/s: " + fmt(spread([g["torch"]["hours_per_second"] for g in rounds])))
    print(f"sluice loader, {args.workers} threads, h/s: "
          + fmt(spread([g["sluice"]["hours_per_second"] for g in rounds])))
    print("sluice loader, 1 thread, h/s: "
          + fmt(spread([g["sluice_1_thread"]["hours_per_second"] for g in rounds])))
    print(f"ratio sluice / PyTorch at {args.workers} cores, median of {args.rounds} rounds: "
          + fmt(spread([g["ratio"] for g in rounds])))
    print(f"ratio per core-second (h/s over CPU utilisation), median of {args.rounds} rounds: "
          + fmt(spread([g["ratio_per_core_second"] for g in rounds])))
    print("sluice command: " + " ".join(cmd))
    json.dump({"versions": v, "rounds": rounds}, sys.stderr)
    sys.stderr.write("\n")


if __name__ == "__main__":
    main()
