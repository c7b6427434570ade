#!/usr/bin/python3
"""Kill/resume soak of sluice-train and sluice-bench epoch (docs/testing.md, "Soak").

Runs a program once uninterrupted (the reference), then again and again with SIGKILL at seeded
random moments, resuming after each kill the way a user would, until --kills kills have landed.
Every time a run reaches its end, what it leaves must equal the reference byte for byte:

  train  sluice-train --device cpu --preset tiny, a checkpoint after every step written over one
         file (--checkpoint-every 1); a killed run is resumed with --resume FILE (or started
         again when no checkpoint was written yet). Compared: the final checkpoint's bytes.
  bench  sluice-bench epoch --journal FILE, a line per batch taken (the batch's digest and the
         loader state after it) and per epoch end; a killed run is resumed from the state of
         the journal's last whole line (a torn last line is cut off first). Compared: the
         journal's bytes, i.e. every batch of every epoch, in order, by digest; so every epoch's
         digest (a function of its batches in order) equals the reference's too.

After a run ends the next cycle starts from nothing. Exit status 0 when every comparison held.

  tests/soak/soak.py --build build --program train --kills 50 --seed 1 --work /tmp/soak
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def log(msg):
    print(msg, flush=True)


class Train:
    """sluice-train, resumed from its one checkpoint file."""

    name = "train"

    def __init__(self, a, dataset):
        self.tool = os.path.join(a.build, "tools", "sluice-train")
        # Two replicas and two loader threads, dropout and SpecAugment on: every source of
        # non-determinism a resume has to reproduce (masks keyed by seed, step and record).
        self.args = [self.tool, dataset, "--device", "cpu", "--preset", "tiny", "--replicas", "2",
                     "--threads", "2", "--max-frames", "1500", "--seed", "3", "--spec-augment",
                     "--epochs", str(a.epochs), "--checkpoint-every", "1", "--log-every", "1",
                     "--eval-examples", "0"]

    def reset(self, d):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)

    def command(self, d):
        ckpt = os.path.join(d, "run.ckpt")
        cmd = self.args + ["--checkpoint", ckpt]
        return cmd + ["--resume", ckpt] if os.path.exists(ckpt) else cmd

    def where(self, d, out):
        """What the killed run had done: its last step line and what is on disk."""
        steps = re.findall(r"^step +(\d+)/", out, re.M)
        ckpt = os.path.join(d, "run.ckpt")
        parts = ["last step printed %s" % (steps[-1] if steps else "none")]
        parts.append("checkpoint %s" % ("present" if os.path.exists(ckpt) else "absent"))
        if os.path.exists(ckpt + ".tmp"):
            parts.append("a half-written %s.tmp of %d bytes left" %
                         (os.path.basename(ckpt), os.path.getsize(ckpt + ".tmp")))
        return ", ".join(parts)

    def started(self, out):
        m = re.search(r"resumed at step (\d+)", out)
        return "resumed at step " + m.group(1) if m else "from the start"

    def result(self, d):
        with open(os.path.join(d, "run.ckpt"), "rb") as f:
            return f.read()


class Bench:
    """sluice-bench epoch, resumed from its journal."""

    name = "bench"

    def __init__(self, a, dataset):
        self.tool = os.path.join(a.build, "tools", "sluice-bench")
        self.epochs = a.epochs
        # --step-ms: a trainer's step per batch, so that kills land inside epochs rather than in
        # the start-up; two decode threads, the default shuffle.
        self.args = [self.tool, "epoch", dataset, "--threads", "2", "--max-frames", "1500",
                     "--seed", "5", "--step-ms", "15", "--json"]

    def reset(self, d):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)

    def _journal(self, d):
        return os.path.join(d, "journal.jsonl")

    def _lines(self, d, cut):
        """The journal's whole lines; with cut, a torn last line is removed from the file."""
        path = self._journal(d)
        if not os.path.exists(path):
            return [], 0
        with open(path, "rb") as f:
            data = f.read()
        whole = data[:data.rfind(b"\n") + 1]
        torn = len(data) - len(whole)
        if torn and cut:
            with open(path, "r+b") as f:
                f.truncate(len(whole))
        return [json.loads(l) for l in whole.decode().splitlines()], torn

    def command(self, d):
        lines, _ = self._lines(d, cut=True)
        cmd = self.args + ["--journal", self._journal(d)]
        if not lines:
            return cmd + ["--epochs", str(self.epochs)]
        last = lines[-1]
        epoch = last["state"]["epoch"]
        if last.get("end"):
            if epoch + 1 >= self.epochs:
                return None  # killed after the last epoch's end was journaled: nothing left
            return cmd + ["--first-epoch", str(epoch + 1), "--epochs",
                          str(self.epochs - epoch - 1)]
        return cmd + ["--resume-state", json.dumps(last["state"]), "--epochs",
                      str(self.epochs - epoch)]

    def where(self, d, out):
        lines, torn = self._lines(d, cut=False)
        if not lines:
            s = "no batch journaled"
        else:
            st = lines[-1]["state"]
            s = "journal at epoch %d batch %d%s" % (st["epoch"], st["batches"],
                                                    " (end)" if lines[-1].get("end") else "")
        return s + (", a torn line of %d bytes" % torn if torn else "")

    def started(self, out):
        return ""

    def result(self, d):
        with open(self._journal(d), "rb") as f:
            return f.read()

    def reference_digests(self, out):
        return [json.loads(l)["digest"] for l in out.splitlines() if l.startswith("{")]


def make_dataset(a, work):
    """A small espeak-ng corpus shardified with character ids, made once under --work."""
    dataset = os.path.join(work, "dataset")
    if os.path.exists(os.path.join(dataset, "manifest.json")):
        return dataset
    corpus = os.path.join(work, "corpus")
    subprocess.run([os.path.join(ROOT, "tools", "make-sample-corpus"), "--out", corpus,
                    "--count", str(a.clips), "--jobs", "2"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([os.path.join(a.build, "tools", "shardify"), "audio", "-m",
                    os.path.join(corpus, "manifest.jsonl"), "-o", dataset, "--tokenizer", "char"],
                   check=True, stdout=subprocess.DEVNULL)
    return dataset


def run(cmd, d, kill_after, timeout):
    """Runs cmd in d; SIGKILL after kill_after seconds (None: never). (status, seconds, stdout):
    status 'killed', 'done' or 'failed'."""
    out_path = os.path.join(d, "stdout.txt")
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(os.path.join(d, "stderr.txt"), "ab") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=d)
        try:
            p.wait(timeout=kill_after if kill_after is not None else timeout)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            p.wait()
            if kill_after is None:
                raise SystemExit("soak: %s did not end within %.0f s" % (cmd[0], timeout))
    seconds = time.monotonic() - t0
    with open(out_path, errors="replace") as f:
        stdout = f.read()
    if p.returncode == -signal.SIGKILL:
        return "killed", seconds, stdout
    return ("done" if p.returncode == 0 else "failed"), seconds, stdout


def soak(a, prog, work):
    ref_dir = os.path.join(work, prog.name + "-reference")
    prog.reset(ref_dir)
    status, ref_seconds, ref_out = run(prog.command(ref_dir), ref_dir, None, a.timeout)
    if status != "done":
        with open(os.path.join(ref_dir, "stderr.txt")) as f:
            raise SystemExit("soak: the reference %s run failed:\n%s" % (prog.name, f.read()))
    reference = prog.result(ref_dir)
    log("%s: reference run %.2f s, result %d bytes, sha256 %s" %
        (prog.name, ref_seconds, len(reference), hashlib.sha256(reference).hexdigest()[:16]))
    if isinstance(prog, Bench):
        log("%s: reference epoch digests %s" %
            (prog.name, " ".join(prog.reference_digests(ref_out))))

    rng = random.Random("%s:%d" % (prog.name, a.seed))
    d = os.path.join(work, prog.name + "-soak")
    kills = cycles = failures = 0
    while kills < a.kills:
        cycles += 1
        prog.reset(d)
        runs = 0
        while True:
            cmd = prog.command(d)
            if cmd is None:
                status, seconds, out = "done", 0.0, ""
            else:
                runs += 1
                # Uniform over 90% of the reference's duration, start-up included (a run from
                # the start is killed almost always); a resumed run has less left to do, so the
                # later runs of a cycle tend to finish.
                delay = rng.uniform(0, 0.9 * ref_seconds) if kills < a.kills else None
                status, seconds, out = run(cmd, d, delay, a.timeout)
            if status == "killed":
                kills += 1
                log("kill %3d/%d  cycle %d run %d (%s): SIGKILL after %.3f s; %s" %
                    (kills, a.kills, cycles, runs, prog.started(out) or "started",
                     seconds, prog.where(d, out)))
                continue
            if status == "failed":
                with open(os.path.join(d, "stderr.txt")) as f:
                    err = f.read()
                log("FAIL cycle %d run %d: %s exited non-zero after a resume:\n%s" %
                    (cycles, runs, prog.name, err[-2000:]))
                failures += 1
                break
            same = prog.result(d) == reference
            log("cycle %d: %d run(s), %s: %s" %
                (cycles, runs, "final result identical to the reference" if same else
                 "FAIL: the final result differs from the reference", prog.started(out) or "ok"))
            failures += 0 if same else 1
            break
    log("%s: %d kills over %d cycles, %d failure(s)" % (prog.name, kills, cycles, failures))
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="meson build directory with tools/")
    ap.add_argument("--program", choices=["train", "bench", "both"], default="both")
    ap.add_argument("--kills", type=int, default=5, help="SIGKILLs to deliver per program")
    ap.add_argument("--seed", type=int, default=1, help="seeds the kill moments")
    ap.add_argument("--epochs", type=int, default=3, help="epochs of each run")
    ap.add_argument("--clips", type=int, default=24, help="clips of the sample corpus")
    ap.add_argument("--work", help="scratch directory, kept (default: a temporary one, removed "
                    "when every comparison held)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a run may take")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="sluice-soak-")
    os.makedirs(work, exist_ok=True)
    dataset = make_dataset(a, work)
    progs = {"train": [Train], "bench": [Bench], "both": [Train, Bench]}[a.program]
    failures = sum(soak(a, p(a, dataset), work) for p in progs)
    if failures:
        log("soak: failed; the runs' files are in " + work)
        return 1
    if not a.work:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
