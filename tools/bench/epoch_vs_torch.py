#!/usr/bin/python3
"""One epoch of sluice's loader next to the equivalent PyTorch pipeline, on the same corpus and cores.

PyTorch side (what a typical recipe does): a torch DataLoader with --workers worker processes
(one torch thread each, so workers = cores) over the corpus's JSONL manifest; each item is read
from the original WAV/FLAC with soundfile, downmixed, resampled to 16 kHz when needed
(torchaudio.functional.resample), turned into torchaudio.compliance.kaldi.fbank (80 bins,
dither 0), and batches are padded and collated ([B, T, 80] float32 + lengths), shuffled, fixed
batch size.

sluice side: `sluice-bench epoch DATASET --threads --workers --features fbank --num-mel-bins 80
--dither 0 --json` on the dataset shardify made from the same manifest.

Prints hours of audio per second for both and the ratio. Run with Debian's python3
(python3-torch, python3-torchaudio, python3-soundfile):

  /usr/bin/python3 tools/bench/epoch_vs_torch.py --manifest CORPUS/manifest.jsonl --dataset DIR
"""
import argparse
import json
import os
import subprocess
import sys
import time

import soundfile
import torch
import torchaudio


class Corpus(torch.utils.data.Dataset):
    def __init__(self, manifest, limit):
        self.base = os.path.dirname(os.path.abspath(manifest))
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
            wav = torchaudio.functional.resample(wav, rate, 16000)
        if wav.numel() < 400:
            return None
        feats = torchaudio.compliance.kaldi.fbank(
            wav.unsqueeze(0) * 32768, num_mel_bins=80, dither=0.0, sample_frequency=16000)
        return feats, wav.numel() / 16000.0, text


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
    loader = torch.utils.data.DataLoader(
        Corpus(args.manifest, args.limit), batch_size=args.batch_size, shuffle=True,
        num_workers=args.workers, collate_fn=collate, worker_init_fn=worker_init,
        prefetch_factor=2, persistent_workers=False)
    t0 = time.perf_counter()
    seconds = 0.0
    batches = 0
    for batch in loader:
        if batch is None:
            continue
        seconds += batch[3]
        batches += 1
    wall = time.perf_counter() - t0
    return {"hours": seconds / 3600, "wall_seconds": wall, "batches": batches,
            "hours_per_second": seconds / 3600 / wall}


def run_sluice(args, threads):
    cmd = [args.bench, "epoch", args.dataset, "--epochs", str(args.epochs), "--threads", str(threads),
           "--features", "fbank", "--num-mel-bins", "80", "--dither", "0", "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    epochs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return max(epochs, key=lambda e: e["hours_per_second"]), cmd  # best epoch (noisy machine)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--manifest", required=True, help="the corpus's JSONL manifest (original audio)")
    p.add_argument("--dataset", required=True, help="the sluice dataset shardify made from it")
    p.add_argument("--bench", default="build/tools/sluice-bench", help="sluice-bench binary")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers = sluice threads")
    p.add_argument("--batch-size", type=int, default=32, help="PyTorch batch size (utterances)")
    p.add_argument("--epochs", type=int, default=3, help="sluice epochs (the best is reported)")
    p.add_argument("--limit", type=int, default=0, help="PyTorch side: first N manifest lines only")
    args = p.parse_args()

    sluice, cmd = run_sluice(args, args.workers)
    sluice1, _ = run_sluice(args, 1)
    t = run_torch(args)
    ratio = sluice["hours_per_second"] / t["hours_per_second"]
    print(f"corpus: {args.manifest} ({t['hours']:.3f} h read by PyTorch)")
    print(f"PyTorch DataLoader, {args.workers} workers (soundfile + torchaudio kaldi fbank + pad): "
          f"{t['hours_per_second']:.4f} h/s ({t['wall_seconds']:.1f} s, {t['batches']} batches)")
    print(f"sluice loader, {args.workers} threads: {sluice['hours_per_second']:.4f} h/s "
          f"({sluice['wall_seconds']:.2f} s, {sluice['batches']} batches, "
          f"peak RSS {sluice['peak_rss_bytes'] / 1e6:.0f} MB)")
    print(f"sluice loader, 1 thread: {sluice1['hours_per_second']:.4f} h/s "
          f"(2 threads / 1 thread = {sluice['hours_per_second'] / sluice1['hours_per_second']:.2f}x)")
    print(f"ratio sluice / PyTorch at {args.workers} cores: {ratio:.1f}x")
    print("sluice command: " + " ".join(cmd))
    json.dump({"torch": t, "sluice": sluice, "sluice_1_thread": sluice1, "ratio": ratio},
              sys.stderr)
    sys.stderr.write("\n")


if __name__ == "__main__":
    main()
