#!/usr/bin/python3
"""Exhaustive fault injection (docs/testing.md, "Fault injection").

Every file access of sluice goes through base/sysio.h, whose injector fails the N-th call of a
process when SLUICE_FAULT_INJECT=N[:KIND[:MATCH]] is set. For each scenario this script runs the
program once undisturbed with a trace of its calls (the reference), then once per call N:

  error  the N-th call fails (EIO; ENOSPC for a write). The program must exit non-zero (or, if it
         exits 0, have produced the reference exactly), print an error naming the file of the
         failed call, and leave nothing half-written under a final name: every final file present
         equals the reference's (an append-only log such as rejects.jsonl is a prefix of it).
         Then a rerun the way a user would do it (--resume, the same command, a checkpoint
         resume) must succeed and produce the reference byte for byte.
  eio    the same with EIO for writes, at every write call.
  short  the N-th read or write moves half the bytes asked: the program must succeed with the
         reference output (short transfers are retried, never taken for an end of file).

Scenarios: features (sluice-features writing one .npy), shardify (audio with a tokenizer: shards,
rejects, journal, tokenizer file, manifest), part (one --part of two: the part.json marker), merge
(linking parts into one dataset), loader (sluice-bench epoch: every batch digest of a failed run
is a prefix of the reference's, never a wrong batch), cache (the block cache's files: a failure
there must cost a fetch, never an epoch or a batch), train (sluice-train's checkpoint saves,
counted on the checkpoint's files only, and the read of the checkpoint a run resumes from),
export (shardify export --to nemo: the dataset's reads, every audio file and the manifest; the
rerun adds --overwrite, as a user would after a failure that left the manifest), import (shardify
audio --from lhotse on a cuts.jsonl.gz and --from wds on a tar of the same clips: the importers'
reads of gzip and tar input, then the shared ingest's writes), conversations (shardify
conversations with a tokenizer on a JSONL of audio and text turns over the corpus's clips, WAV
and FLAC, with a rejected line: the audio decodes, shards, rejects, journal and manifest; the
rerun adds --resume).

  tests/faults/fault_sweep.py --build build [--scenario NAME ...] [--work DIR] [--stride K]

Exit status 0 when every fault point held; the summary line counts the fault points exercised.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def log(msg):
    print(msg, flush=True)


def run(cmd, fault=None, cwd=None, extra_env=None):
    env = dict(os.environ)
    env.update(extra_env or {})
    env.pop("SLUICE_FAULT_INJECT", None)
    if fault:
        env["SLUICE_FAULT_INJECT"] = fault
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def files(d):
    """name -> sha256 of every file in d (not recursive)."""
    out = {}
    if not os.path.isdir(d):
        return out
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            out[name] = files_hash(p)
    return out


def files_hash(p):
    return hashlib.sha256(read(p)).hexdigest()


def read(p):
    with open(p, "rb") as f:
        return f.read()


def trace(cmd, work, match=None, cwd=None, extra_env=None):
    """The calls of an undisturbed run: [(call, path)]. Also checks that it succeeds."""
    t = os.path.join(work, "trace.txt")
    if os.path.exists(t):
        os.remove(t)
    code, out, err = run(cmd, "trace:" + t, cwd, extra_env)
    if code != 0:
        raise SystemExit("reference run failed (%d): %s\n%s%s" % (code, " ".join(cmd), out, err))
    calls = []
    with open(t) as f:
        for line in f:
            _, call, path = line.rstrip("\n").split(" ", 2)
            if match is None or match in path:
                calls.append((call, path))
    return calls


class Sweep:
    """Counts fault points and collects failures."""

    def __init__(self, a):
        self.a = a
        self.points = 0
        self.failures = []

    def fail(self, scenario, n, kind, call, why):
        msg = "%s: fault %d:%s (%s %s): %s" % (scenario, n, kind, call[0], call[1], why)
        self.failures.append(msg)
        log("FAIL " + msg)

    def fired(self, scenario, n, kind, call, err):
        """The injector announced call n: a run it missed would pass for the wrong reason."""
        if "fault injection: call %d (" % n in err:
            return True
        self.fail(scenario, n, kind, call, "the injector did not fire:\n" + err)
        return False

    def check_reported(self, scenario, n, kind, call, code, err):
        """A failed run printed an error naming the file of the failed call."""
        if not self.fired(scenario, n, kind, call, err):
            return False
        base = os.path.basename(call[1].rstrip("/"))
        others = "\n".join(l for l in err.splitlines() if "fault injection:" not in l)
        if code == 0:
            return True
        if base not in others:
            self.fail(scenario, n, kind, call, "the error does not name %s:\n%s" % (base, others))
            return False
        return True

    def report(self, name, calls):
        """One line per scenario: its calls and the fault points of each kind."""
        kinds = {k: len(self.strided(self.indices(calls, k))) for k in ("error", "eio", "short")}
        log("%s: %d calls in the reference run; fault points: %d error, %d eio (writes), "
            "%d short (transfers)" % (name, len(calls), kinds["error"], kinds["eio"],
                                       kinds["short"]))

    def indices(self, calls, kind):
        """The fault points of a sweep: every call, or every write (eio), or every transfer."""
        if kind == "short":
            ns = [i for i, c in enumerate(calls, 1) if c[0] in ("read", "write")]
            # "short" counts only reads and writes: renumber.
            return [(k, calls[i - 1]) for k, i in enumerate(ns, 1)]
        if kind == "eio":
            return [(i, c) for i, c in enumerate(calls, 1) if c[0] == "write"]
        return list(enumerate(calls, 1))

    def strided(self, pts):
        return pts[:: self.a.stride] if self.a.stride > 1 else pts


def final_files_ok(out_dir, ref, logs=("rejects.jsonl",), ignore=lambda name: False):
    """What a failed run left: each file under a final name equals the reference's (append-only
    logs: a prefix of it). Returns "" or why not."""
    if not os.path.isdir(out_dir):
        return ""
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".tmp") or ignore(name):
            continue
        p = os.path.join(out_dir, name)
        if name not in ref["hashes"]:
            return "left %s, which the reference does not have" % name
        if name in logs:
            if not ref["bytes"][name].startswith(read(p)):
                return "%s is not a prefix of the reference's" % name
        elif files_hash(p) != ref["hashes"][name]:
            return "left %s under its final name, not equal to the reference's" % name
    return ""


def reference(d):
    return {"hashes": files(d),
            "bytes": {n: read(os.path.join(d, n)) for n in os.listdir(d)
                      if os.path.isfile(os.path.join(d, n))}}


def working_file(name):
    """shardify's journal (how a rerun continues) and its lock file, which a run whose flock
    failed cannot remove (another run may hold it): not outputs (docs/shardify.md)."""
    return name.startswith(".shardify-journal") or name == ".shardify.lock"


def dataset_scenario(sw, name, make_cmd, rerun_extra, work, ignore=working_file, prepare=None,
                     subdirs=()):
    """A program that writes a dataset directory: shardify, a part, a merge. `subdirs`: folders
    of the output whose files are outputs too (export's audio/), checked the same way."""
    out = os.path.join(work, name + "-out")
    ref_dir = os.path.join(work, name + "-ref")
    shutil.rmtree(ref_dir, ignore_errors=True)
    if prepare:
        prepare(ref_dir)
    # The calls as the faulty runs make them: in `out`, not in the reference's directory.
    calls = [(c, path.replace(ref_dir, out)) for c, path in trace(make_cmd(ref_dir), work)]
    ref = reference(ref_dir)
    ref_sub = {sd: reference(os.path.join(ref_dir, sd)) for sd in subdirs}
    top_ignore = ignore
    ignore = lambda n: n in subdirs or top_ignore(n)  # noqa: E731

    def outputs(d):
        return (files(d), {sd: files(os.path.join(d, sd)) for sd in subdirs})

    want = (ref["hashes"], {sd: r["hashes"] for sd, r in ref_sub.items()})
    for kind in ("error", "eio", "short"):
        for n, call in sw.strided(sw.indices(calls, kind)):
            shutil.rmtree(out, ignore_errors=True)
            if prepare:
                prepare(out)
            sw.points += 1
            code, _, err = run(make_cmd(out), "%d:%s" % (n, kind))
            if kind == "short":
                if sw.fired(name, n, kind, call, err) and (code != 0 or outputs(out) != want):
                    sw.fail(name, n, kind, call, "a short transfer changed the run (exit %d):\n%s"
                            % (code, err))
                continue
            if not sw.check_reported(name, n, kind, call, code, err):
                continue
            why = final_files_ok(out, ref, ignore=ignore)
            for sd in subdirs:
                why = why or final_files_ok(os.path.join(out, sd), ref_sub[sd], logs=())
            if why:
                sw.fail(name, n, kind, call, why)
                continue
            code, _, err = run(make_cmd(out) + rerun_extra)
            if code != 0:
                sw.fail(name, n, kind, call, "the rerun failed (%d):\n%s" % (code, err))
            elif outputs(out) != want:
                sw.fail(name, n, kind, call, "the rerun's output differs from the reference")
    sw.report(name, calls)


def loader_scenario(sw, bench, dataset, work):
    """sluice-bench epoch: a failed epoch took only batches the reference took, in order."""
    name = "loader"
    journal = os.path.join(work, "loader-journal")

    def cmd():
        if os.path.exists(journal):
            os.remove(journal)
        return [bench, "epoch", dataset, "--threads", "1", "--json", "--batch-size", "2",
                "--journal", journal]

    calls = [c for c in trace(cmd(), work) if "loader-journal" not in c[1]]
    ref_journal = read(journal).splitlines()
    for kind in ("error", "short"):
        for n, call in sw.strided(sw.indices(calls, kind)):
            sw.points += 1
            code, _, err = run(cmd(), "%d:%s:%s" % (n, kind, dataset))
            got = read(journal).splitlines() if os.path.exists(journal) else []
            if kind == "short" or code == 0:
                if sw.fired(name, n, kind, call, err) and (
                        code != 0 or got != ref_journal):
                    sw.fail(name, n, kind, call, "the epoch differs from the reference (exit %d)"
                            ":\n%s" % (code, err))
                continue
            if not sw.check_reported(name, n, kind, call, code, err):
                continue
            if got != ref_journal[: len(got)]:
                sw.fail(name, n, kind, call, "a batch before the failure differs from the "
                        "reference's: wrong data")
                continue
            code, _, err = run(cmd())
            if code != 0 or read(journal).splitlines() != ref_journal:
                sw.fail(name, n, kind, call, "the rerun differs from the reference:\n" + err)
    sw.report(name, calls)


def cache_scenario(sw, bench, dataset, work):
    """The block cache (docs/remote.md): two epochs, the first filling the cache, the second
    reading it; calls counted on the cache directory only. A cache that fails costs a fetch: the
    epochs must succeed with the reference's batches, whatever call failed."""
    name = "cache"
    journal = os.path.join(work, "cache-journal")
    cache = os.path.join(work, "cache-dir")
    local = {"SLUICE_CACHE_LOCAL": "1"}  # the cache in front of a local dataset

    def cmd():
        if os.path.exists(journal):
            os.remove(journal)
        shutil.rmtree(cache, ignore_errors=True)
        return [bench, "epoch", dataset, "--threads", "1", "--json", "--batch-size", "2",
                "--epochs", "2", "--cache-dir", cache, "--journal", journal]

    match = os.path.basename(cache)
    calls = trace(cmd(), work, match, extra_env=local)
    ref_journal = read(journal)
    for kind in ("error", "eio", "short"):
        for n, call in sw.strided(sw.indices(calls, kind)):
            sw.points += 1
            code, _, err = run(cmd(), "%d:%s:%s" % (n, kind, match), extra_env=local)
            if sw.fired(name, n, kind, call, err) and (
                    code != 0 or not os.path.exists(journal) or read(journal) != ref_journal):
                sw.fail(name, n, kind, call, "a cache fault changed the epochs (exit %d):\n%s"
                        % (code, err))
    sw.report(name, calls)


def train_scenario(sw, train, dataset, work):
    """sluice-train's checkpoint saves: counted on the checkpoint directory's calls only."""
    name = "train"
    ck = os.path.join(work, "ckpt-out")
    ref_dir = os.path.join(work, "ckpt-ref")

    def cmd(d, resume=None):
        c = [train, dataset, "--device", "cpu", "--preset", "tiny", "--max-frames", "1500",
             "--seed", "3", "--steps", "3", "--checkpoint-every", "2", "--eval-examples", "0",
             "--checkpoint", os.path.join(d, "a-{step}.ckpt")]
        return c + ["--resume", resume] if resume else c

    shutil.rmtree(ref_dir, ignore_errors=True)
    os.makedirs(ref_dir)
    match = os.path.basename(ref_dir)
    calls = trace(cmd(ref_dir), work, match)
    ref = reference(ref_dir)
    for kind in ("error", "eio", "short"):
        for n, call in sw.strided(sw.indices(calls, kind)):
            shutil.rmtree(ck, ignore_errors=True)
            os.makedirs(ck)
            sw.points += 1
            code, _, err = run(cmd(ck), "%d:%s:%s" % (n, kind, os.path.basename(ck)))
            call = (call[0], call[1].replace(match, os.path.basename(ck)))
            if kind == "short":
                if sw.fired(name, n, kind, call, err) and (
                        code != 0 or files(ck) != ref["hashes"]):
                    sw.fail(name, n, kind, call, "a short transfer changed the run:\n" + err)
                continue
            if not sw.check_reported(name, n, kind, call, code, err):
                continue
            why = final_files_ok(ck, ref, logs=())
            if why:
                sw.fail(name, n, kind, call, why)
                continue
            # Resume from the last checkpoint that made it, as a user would.
            done = sorted(f for f in os.listdir(ck) if f.endswith(".ckpt"))
            resume = os.path.join(ck, done[-1]) if done else None
            code, _, err = run(cmd(ck, resume))
            got = files(ck)
            if code != 0 or got.get("a-3.ckpt") != ref["hashes"]["a-3.ckpt"]:
                sw.fail(name, n, kind, call, "the resumed run's final checkpoint differs (exit "
                        "%d):\n%s" % (code, err))
    sw.report(name, calls)

    # Reading the checkpoint a run resumes from: a failed read must stop the run naming the file
    # (never fall back to a fresh start), and the rerun must end with the reference's bytes.
    name = "train-resume"
    src = os.path.join(work, "resume-src")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    shutil.copy(os.path.join(ref_dir, "a-2.ckpt"), src)
    resume = os.path.join(src, "a-2.ckpt")
    match = os.path.basename(src)
    shutil.rmtree(ck, ignore_errors=True)
    os.makedirs(ck)
    calls = trace(cmd(ck, resume), work, match)
    for kind in ("error", "short"):
        for n, call in sw.strided(sw.indices(calls, kind)):
            shutil.rmtree(ck, ignore_errors=True)
            os.makedirs(ck)
            sw.points += 1
            code, _, err = run(cmd(ck, resume), "%d:%s:%s" % (n, kind, match))
            if kind == "error":
                if code == 0:
                    sw.fail(name, n, kind, call, "the run went on without its checkpoint")
                    continue
                if not sw.check_reported(name, n, kind, call, code, err):
                    continue
                code, _, err = run(cmd(ck, resume))
            if code != 0 or files(ck).get("a-3.ckpt") != ref["hashes"]["a-3.ckpt"]:
                sw.fail(name, n, kind, call, "the resumed run's final checkpoint differs (exit "
                        "%d):\n%s" % (code, err))
    sw.report(name, calls)


def import_inputs(corpus, work):
    """The corpus's readable clips as a Lhotse cuts.jsonl.gz and a WebDataset tar, written here
    with the standard library (the producers' own files are import_equality_test.py's)."""
    import gzip
    import io
    import tarfile
    cuts, tar = os.path.join(work, "cuts.jsonl.gz"), os.path.join(work, "clips.tar")
    if os.path.exists(tar):
        return cuts, tar
    clips = []
    for line in open(os.path.join(corpus, "manifest.jsonl"), "rb"):
        try:
            j = json.loads(line)
            path = os.path.join(corpus, j["audio_filepath"])
            if os.path.getsize(path) > 1000 and isinstance(j["text"], str):
                clips.append((j["id"], path, j["text"], float(j["duration"])))
        except (ValueError, KeyError, OSError, TypeError):
            continue  # the --bad entries
    with gzip.open(cuts, "wt") as f:
        for cid, path, text, dur in clips:
            rec = {"id": cid, "sources": [{"type": "file", "channels": [0], "source": path}],
                   "sampling_rate": 16000, "num_samples": 0, "duration": dur}
            f.write(json.dumps({"id": cid, "start": 0, "duration": dur, "channel": 0,
                                "supervisions": [{"id": cid, "recording_id": cid, "start": 0,
                                                  "duration": dur, "text": text}],
                                "recording": rec, "type": "MonoCut"}) + "\n")
    with tarfile.open(tar, "w", format=tarfile.USTAR_FORMAT) as t:
        for cid, path, text, _ in clips:
            for name, data in ((cid + os.path.splitext(path)[1], open(path, "rb").read()),
                               (cid + ".txt", text.encode())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return cuts, tar


def conversation_input(corpus, work):
    """A conversations JSONL over the corpus's clips (docs/conversations.md): a system prompt,
    audio turns (a WAV, a FLAC, an offset and duration), text turns, a second exchange, and one
    line whose audio is missing (a reject)."""
    path = os.path.join(work, "conversations.jsonl")
    audio = lambda name, **kw: dict({"path": os.path.join(corpus, "audio", name)}, **kw)  # noqa
    lines = [
        {"id": "c0", "system": "answer briefly",
         "turns": [{"role": "user", "audio": audio("utt-00000.wav")},
                   {"role": "assistant", "text": "our teacher borrowed the umbrella"}]},
        {"id": "c1", "turns": [
            {"role": "user", "text": "what is said", "audio": audio("utt-00002.flac",
                                                                     offset=0.5, duration=1.5)},
            {"role": "assistant", "text": "three paper boats"},
            {"role": "user", "text": "and here", "audio": audio("utt-00004.wav")},
            {"role": "assistant", "text": "where did you put the keys"}]},
        {"id": "c2", "turns": [{"role": "user", "audio": audio("missing.wav")},
                               {"role": "assistant", "text": "nothing"}]},
        {"id": "c3", "turns": [{"role": "user", "text": "say hello"},
                               {"role": "assistant", "text": "hello"}]},
    ]
    with open(path, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", required=True, help="the meson build directory")
    p.add_argument("--scenario", action="append",
                   choices=["features", "shardify", "part", "merge", "loader", "cache",
                            "train", "export", "import", "conversations"],
                   help="run only these (repeatable; default: all)")
    p.add_argument("--work", help="working directory (default: a temporary one, removed)")
    p.add_argument("--clips", type=int, default=6, help="clips in the sample corpus")
    p.add_argument("--stride", type=int, default=1,
                   help="inject at every K-th fault point only (1 = exhaustive)")
    a = p.parse_args()
    scenarios = a.scenario or ["features", "shardify", "part", "merge", "loader", "cache",
                               "train", "export", "import", "conversations"]
    tools = os.path.join(a.build, "tools")
    shardify = os.path.join(tools, "shardify")
    work = a.work or tempfile.mkdtemp(prefix="sluice-faults-")
    os.makedirs(work, exist_ok=True)
    try:
        corpus = os.path.join(work, "corpus")
        if not os.path.exists(os.path.join(corpus, "manifest.jsonl")):
            code, out, err = run([os.path.join(ROOT, "tools", "make-sample-corpus"), "--out",
                                  corpus, "--count", str(a.clips), "--bad", "--seed", "3"])
            if code != 0:
                raise SystemExit("make-sample-corpus failed:\n" + out + err)
        manifest = os.path.join(corpus, "manifest.jsonl")
        common = ["-q", "-m", manifest, "--max-duration", "30", "-j", "1", "--tokenizer", "char"]

        def audio(out):
            return [shardify, "audio", "-o", out, "--shard-size", "64k"] + common

        def part(i):
            return lambda out: [shardify, "audio", "-o", out, "--part", "%d/2" % i] + common

        sw = Sweep(a)
        if "features" in scenarios:
            clip = os.path.join(corpus, "audio", "utt-00000.wav")
            dataset_scenario(sw, "features", lambda out: [
                os.path.join(tools, "sluice-features"), clip, "-o", os.path.join(out, "f.npy")],
                [], work, prepare=lambda d: os.makedirs(d, exist_ok=True))
        if "shardify" in scenarios:
            dataset_scenario(sw, "shardify", audio, ["--resume"], work)
        if "part" in scenarios:
            # A part reruns with the same command: it continues or redoes itself (docs/shardify.md).
            dataset_scenario(sw, "part", part(1), [], work)
        if "merge" in scenarios:
            parts = [os.path.join(work, "merge-part%d" % i) for i in (0, 1)]
            for i, d in enumerate(parts):
                if not os.path.exists(os.path.join(d, "part.json")):
                    shutil.rmtree(d, ignore_errors=True)
                    code, out, err = run(part(i)(d))
                    if code != 0:
                        raise SystemExit("part %d failed:\n%s%s" % (i, out, err))
            # The sample corpus's broken entries repeat a key across the two parts.
            dataset_scenario(sw, "merge", lambda out: [shardify, "merge", "-o", out,
                                                       "--allow-duplicate-keys"] + parts, [], work)
        if "import" in scenarios:
            cuts, tar = import_inputs(corpus, work)
            for name, args in (("import-lhotse", ["--from", "lhotse", cuts]),
                               ("import-wds", ["--from", "wds", tar])):
                dataset_scenario(sw, name, lambda out, args=args: [
                    shardify, "audio", "-q", "-o", out, "--shard-size", "64k", "-j", "1",
                    "--max-duration", "30"] + args, ["--resume"], work)
        if "conversations" in scenarios:
            chats = conversation_input(corpus, work)
            dataset_scenario(sw, "conversations", lambda out: [
                shardify, "conversations", chats, "-q", "-o", out, "--shard-size", "64k", "-j",
                "1", "--max-duration", "30", "--tokenizer", "char"], ["--resume"], work)
        dataset = os.path.join(work, "dataset")
        if set(scenarios) & {"loader", "cache", "train", "export"} and not os.path.exists(
                os.path.join(dataset, "manifest.json")):
            shutil.rmtree(dataset, ignore_errors=True)
            code, out, err = run(audio(dataset))
            if code != 0:
                raise SystemExit("shardify failed:\n" + out + err)
        if "loader" in scenarios:
            loader_scenario(sw, os.path.join(tools, "sluice-bench"), dataset, work)
        if "cache" in scenarios:
            cache_scenario(sw, os.path.join(tools, "sluice-bench"), dataset, work)
        if "train" in scenarios:
            train_scenario(sw, os.path.join(tools, "sluice-train"), dataset, work)
        if "export" in scenarios:
            dataset_scenario(sw, "export", lambda out: [
                shardify, "export", dataset, "--to", "nemo", "-o", out, "-q", "-j", "1"],
                ["--overwrite"], work, subdirs=("audio",))
        log("fault points exercised: %d; failures: %d" % (sw.points, len(sw.failures)))
        for f in sw.failures:
            log("  " + f.splitlines()[0])
        return 1 if sw.failures else 0
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
