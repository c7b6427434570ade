#!/usr/bin/python3
"""One loader epoch from Python next to the same epoch in C++ and the PyTorch DataLoader pipeline.

Three sides, each in its own process, one after the other, on the same dataset and cores:
  cpp      sluice-bench epoch DATASET --threads N --features fbank --num-mel-bins 80 --dither 0
  python   sluice.Loader with the same options in a Python process that imported torch; each
           batch's features and lengths become tensors (torch.from_dlpack) and are read
           (sum of the lengths), as a training step would take them
  torch    tools/bench/epoch_vs_torch.py's DataLoader (soundfile + torchaudio kaldi fbank + pad)
           with N worker processes over the corpus's manifest (needs torchaudio and soundfile,
           which CI does not install)

Each side runs twice: once for its speed, hours of audio per second (the best of --epochs
epochs for cpp and python, as epoch_vs_torch.py does for cpp; the DataLoader runs one epoch),
and once for its peak memory, the whole process tree sampled every 50 ms as the sum of PSS
(proportional set size: a page shared by the DataLoader's forked workers counts once in total,
not once per process) and as the sum of RSS. Apart, because reading /proc/PID/smaps_rollup
takes the process's memory-map lock and slowed the sampled side by a quarter.

With PyPI's torch: the benchmark venv (`./run.sh bench-venv`, docs/benchmarks.md) imports sluice
from build/python; with Debian's python3 (torch 1.13), PYTHONPATH=build/python does.

  build/venv-bench/bin/python tools/bench/epoch_python.py --manifest CORPUS/manifest.jsonl --dataset DIR
  PYTHONPATH=build/python /usr/bin/python3 tools/bench/epoch_python.py --manifest ... --dataset DIR
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def tree_pids(root):
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo.extend(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids


def tree_memory(root):
    """(PSS, RSS) of root and its descendants, bytes."""
    pss = rss = 0
    for pid in tree_pids(root):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1]) * 1024
        except OSError:
            pass
    return pss, rss


def run_measured(argv, sample):
    """Runs argv; returns (stdout, peak tree PSS, peak tree RSS) (zeros unless sample)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    if not sample:
        out = proc.communicate()[0]
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}")
        return out, 0, 0
    peak = [0, 0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            pss, rss = tree_memory(proc.pid)
            peak[0], peak[1] = max(peak[0], pss), max(peak[1], rss)
            time.sleep(0.05)

    t = threading.Thread(target=sample)
    t.start()
    out = proc.communicate()[0]
    done.set()
    t.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}")
    return out, peak[0], peak[1]


def python_side(args):
    """The child process of the python side: prints one JSON line per epoch."""
    import torch  # as a training script would have it loaded
    import sluice

    loader = sluice.Loader(args.dataset, seed=0, threads=args.threads, features="fbank",
                           num_mel_bins=80, dither=0.0, digest=args.digest)
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        t0 = time.perf_counter()
        frames = 0
        for batch in loader:
            x = torch.from_dlpack(batch.features)
            n = torch.from_dlpack(batch.lengths)
            frames += int(n.sum())
            del x
        wall = time.perf_counter() - t0
        s = loader.stats()
        print(json.dumps({"epoch": epoch, "wall_seconds": wall, "batches": s["batches"],
                          "frames": frames, "hours": s["audio_seconds"] / 3600,
                          "hours_per_second": s["audio_seconds"] / 3600 / wall,
                          "restarts": s["restarts"],
                          "digest": loader.digest() if args.digest else None}), flush=True)


def torch_side(args):
    sys.path.insert(0, HERE)
    import epoch_vs_torch

    ns = argparse.Namespace(manifest=args.manifest, workers=args.threads, batch_size=32,
                            limit=0)
    print(json.dumps(epoch_vs_torch.run_torch(ns)), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, help="a sluice dataset (shardify audio)")
    p.add_argument("--manifest", help="the corpus manifest it was made from (torch side)")
    p.add_argument("--bench", default="build/tools/sluice-bench", help="sluice-bench binary")
    p.add_argument("--threads", type=int, default=2, help="loader threads = DataLoader workers")
    p.add_argument("--epochs", type=int, default=3, help="epochs of cpp and python (best kept)")
    p.add_argument("--rounds", type=int, default=3, help="alternating speed runs of cpp, python")
    p.add_argument("--digest", action="store_true", help="python side: also the epoch digest")
    p.add_argument("--side", choices=["python", "torch"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side == "python":
        return python_side(args)
    if args.side == "torch":
        return torch_side(args)

    cpp_cmd = [args.bench, "epoch", args.dataset, "--epochs", str(args.epochs), "--threads",
               str(args.threads), "--features", "fbank", "--num-mel-bins", "80", "--dither", "0",
               "--json"]
    py_cmd = [sys.executable, os.path.abspath(__file__), "--side", "python", "--dataset",
              args.dataset, "--threads", str(args.threads), "--epochs", str(args.epochs)]
    if args.digest:
        py_cmd.append("--digest")
    results = {}
    sides = [("cpp", cpp_cmd), ("python", py_cmd)]
    if args.manifest:
        sides.append(("torch", [sys.executable, os.path.abspath(__file__), "--side", "torch",
                                "--dataset", args.dataset, "--manifest", args.manifest,
                                "--threads", str(args.threads)]))
    # Speed: cpp and python alternate for --rounds rounds (a shared machine's load comes and
    # goes; alternating exposes both to it alike); the best epoch of each is kept.
    runs = {name: [] for name, _ in sides}
    for r in range(args.rounds):
        for name, cmd in sides:
            if name == "torch" and r > 0:
                continue  # 45 s an epoch: once
            out, _, _ = run_measured(cmd, sample=False)
            runs[name] += [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    for name, cmd in sides:
        best = max(runs[name], key=lambda e: e["hours_per_second"])
        _, pss, rss = run_measured(cmd, sample=True)
        results[name] = dict(best, peak_pss_bytes=pss, peak_rss_bytes=rss, command=" ".join(cmd))
        if name == "python":
            results[name]["digests"] = [r["digest"] for r in runs[name]]

    cpp, py = results["cpp"], results["python"]
    print(f"dataset {args.dataset}: {cpp['hours']:.3f} h of audio, {cpp['batches']} batches, "
          f"{args.threads} threads; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    for name in ("cpp", "python", "torch"):
        r = results.get(name)
        if r is None:
            continue
        print(f"  {name:7s} {r['hours_per_second']:.4f} h/s ({r['wall_seconds']:.2f} s), peak "
              f"PSS {r['peak_pss_bytes'] / 1e6:.0f} MB, RSS {r['peak_rss_bytes'] / 1e6:.0f} MB")
    print(f"python / cpp: {py['hours_per_second'] / cpp['hours_per_second']:.1%} "
          f"(restarts {py['restarts']})")
    if "torch" in results:
        t = results["torch"]
        print(f"python / torch DataLoader: {py['hours_per_second'] / t['hours_per_second']:.1f}x "
              f"throughput; peak memory python / DataLoader: PSS "
              f"{py['peak_pss_bytes'] / t['peak_pss_bytes']:.2f}, RSS "
              f"{py['peak_rss_bytes'] / t['peak_rss_bytes']:.2f}")
    json.dump(results, sys.stderr)
    sys.stderr.write("\n")


if __name__ == "__main__":
    main()
