#!/usr/bin/env python3
"""One sluice-bench epoch over HTTP with latency added, against the same dataset on local disk.

Serves the dataset's parent directory with nginx (a config generated in a temporary directory,
loopback, a free port) behind tools/bench/delay_proxy.py, which holds every request --delay-ms
before passing it on: a far object store's round trip. (netem in a network namespace would do
the same in the kernel, but this machine's kernel has no sch_netem; the proxy works anywhere.
tests/storage/fault_proxy.py can delay too, but it parses and copies every answer in Python,
which on a busy 2-core machine limits bandwidth, not latency.) Runs
`sluice-bench epoch DIR --threads N --json` (the JSON has the digest), then the same on the URL,
and prints both throughputs, their ratio, the digests and the storage counters.

  tools/bench/remote_epoch.py DATASET_DIR [--delay-ms 30] [--threads 2] [--repeat 3]
      [--cache-dir DIR] [more sluice-bench epoch flags, e.g. --requests 32 --read-ahead 128]

With --cache-dir, the block cache instead: every repeat runs two epochs of the URL in one
process with a fresh cache under DIR (epoch 1 over the delayed URL fills it, epoch 2 reads it),
then one epoch in a new process on that cache (a later job), against the same epochs from local
disk (so the digests match pairwise), and one epoch of the URL without a cache (what filling
costs); it prints each epoch's storage counters (requests, bytes, cache hits, misses, bytes read
and written), CPU seconds and the read stage's busy time.

Goals (docs/remote.md): the remote epoch at >= 90% of the local one at 2 threads; the
second epoch from the cache at least local speed.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


def start_nginx(root, work):
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    port = free_port()
    conf = os.path.join(work, "nginx.conf")
    temp = "\n".join(f"  {k}_temp_path {work}/{k};" for k in
                     ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    with open(conf, "w") as f:
        f.write(f"""daemon off; master_process off; worker_processes 1;
pid {work}/nginx.pid; error_log {work}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; keepalive_requests 100000;
{temp}
  server {{ listen 127.0.0.1:{port}; root {root}; }} }}
""")
    p = subprocess.Popen([nginx, "-p", work, "-c", conf, "-e", f"{work}/nginx-error.log"])
    wait_port(port)
    return p, port


def epochs(bench, location, threads, extra):
    """Every epoch's JSON line of one sluice-bench epoch run."""
    cmd = [bench, "epoch", location, "--threads", str(threads), "--json"] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return cmd, [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def epoch(bench, location, threads, extra):
    cmd, lines = epochs(bench, location, threads, extra)
    return cmd, lines[-1]


def counters(j):
    s = j.get("storage", {})
    return (f"{s.get('requests', 0)} requests, {s.get('bytes_fetched', 0) / 1e6:.1f} MB fetched, "
            f"{s.get('retries', 0)} retries; cache {s.get('cache_hits', 0)} hits, "
            f"{s.get('cache_misses', 0)} misses, {s.get('cache_bytes_read', 0) / 1e6:.1f} MB read, "
            f"{s.get('cache_bytes_written', 0) / 1e6:.1f} MB written, "
            f"{s.get('cache_corrupt', 0)} corrupt")


def best_and_median(pairs):
    """pairs: (local, other) JSON lines. The best of each side's MB/s, their ratio, and the
    median ratio of the back-to-back pairs."""
    local = max((l for l, _ in pairs), key=lambda j: j["mb_per_second"])
    other = max((o for _, o in pairs), key=lambda j: j["mb_per_second"])
    ratios = sorted(o["mb_per_second"] / l["mb_per_second"] for l, o in pairs)
    return local, other, other["mb_per_second"] / local["mb_per_second"], ratios[len(ratios) // 2]


def cache_runs(a, dataset, url):
    """--cache-dir: epoch 1 fills a fresh cache from the URL, epoch 2 reads it, and a new process
    reads epoch 1 from it again; each against the same epoch from local disk."""
    two = a.extra + ["--epochs", "2"]
    fill, second, later = [], [], []  # (local, remote) pairs of JSON lines
    uncached = []  # (the URL without a cache, the URL filling the cache): what filling costs
    for k in range(a.repeat):
        cache = os.path.join(a.cache_dir, f"run-{k}")
        shutil.rmtree(cache, ignore_errors=True)
        _, l = epochs(a.bench, dataset, a.threads, two)
        _, u = epoch(a.bench, url, a.threads, a.extra)
        cmd, r = epochs(a.bench, url, a.threads, two + ["--cache-dir", cache])
        cmd_later, n = epochs(a.bench, url, a.threads, a.extra + ["--cache-dir", cache])
        fill.append((l[0], r[0]))
        second.append((l[1], r[1]))
        later.append((l[0], n[0]))
        uncached.append((u, r[0]))
        print(f"  run {k}: epoch 1 local {l[0]['mb_per_second']:.1f} MB/s, URL "
              f"{u['mb_per_second']:.1f}, URL filling the cache {r[0]['mb_per_second']:.1f}; "
              f"epoch 2 local {l[1]['mb_per_second']:.1f}, from the "
              f"cache {r[1]['mb_per_second']:.1f} (ratio "
              f"{r[1]['mb_per_second'] / l[1]['mb_per_second']:.3f}); a new process on the cache "
              f"{n[0]['mb_per_second']:.1f} "
              f"(ratio {n[0]['mb_per_second'] / l[0]['mb_per_second']:.3f})")
        shutil.rmtree(cache, ignore_errors=True)
    print(f"command: {' '.join(cmd)}")
    print(f"then:    {' '.join(cmd_later)}")
    print(f"added latency {a.delay_ms:g} ms per request, {a.threads} threads, best of {a.repeat}")
    for name, pairs in (("epoch 1, filling the cache", fill), ("epoch 2, from the cache", second),
                        ("a new process, from the cache", later)):
        local, remote, ratio, median = best_and_median(pairs)
        print(f"{name}: local {local['mb_per_second']:.1f} MB/s ({local['wall_seconds']:.2f} s), "
              f"cached URL {remote['mb_per_second']:.1f} MB/s ({remote['wall_seconds']:.2f} s): "
              f"ratio {ratio:.3f} best of each, median of pairs {median:.3f}; first batch "
              f"{local['first_batch_seconds']:.3f} s vs {remote['first_batch_seconds']:.3f} s")
        # CPU time is less at the mercy of other load than wall time: what the cache costs.
        print(f"  cpu {local['cpu_seconds']:.2f} s vs {remote['cpu_seconds']:.2f} s, read stage "
              f"busy {local['read_busy_seconds']:.3f} s vs {remote['read_busy_seconds']:.3f} s")
        print(f"  storage of that URL epoch: {counters(remote)}")
    _, _, ratio, median = best_and_median(uncached)
    print(f"filling the cache against the same URL without one: ratio {ratio:.3f} best of each, "
          f"median of pairs {median:.3f}")
    bad = [(l["digest"], r["digest"]) for l, r in fill + second + later + uncached
           if l["digest"] != r["digest"]]
    if bad:
        print(f"DIGESTS DIFFER: {bad}", file=sys.stderr)
        return 1
    print(f"digests equal pairwise (epoch 1 {fill[0][0]['digest']}, "
          f"epoch 2 {second[0][0]['digest']})")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "tools", "sluice-bench"))
    ap.add_argument("--delay-ms", type=float, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3,
                    help="local and remote epochs, interleaved; the best of each is compared "
                         "(a shared machine's noise only ever slows a run down)")
    ap.add_argument("--cache-dir",
                    help="measure the block cache: a fresh cache under this directory per repeat "
                         "(see above)")
    a, extra = ap.parse_known_args()
    a.extra = [x for x in extra if x != "--"]  # more sluice-bench epoch flags
    dataset = os.path.abspath(a.dataset.rstrip("/"))
    work = tempfile.mkdtemp(prefix="sluice-remote-bench-")
    procs = []
    try:
        nginx, nginx_port = start_nginx(os.path.dirname(dataset), work)
        procs.append(nginx)
        proxy = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tools", "bench", "delay_proxy.py"),
             "--upstream", f"127.0.0.1:{nginx_port}", "--delay-ms", str(a.delay_ms)],
            stdout=subprocess.PIPE, text=True)
        procs.append(proxy)
        proxy_port = int(proxy.stdout.readline())
        wait_port(proxy_port)
        url = f"http://127.0.0.1:{proxy_port}/{os.path.basename(dataset)}"

        epoch(a.bench, dataset, a.threads, a.extra)  # warm the page cache: local at its best
        if a.cache_dir:
            return cache_runs(a, dataset, url)
        locals_, remotes = [], []
        for _ in range(a.repeat):
            locals_.append(epoch(a.bench, dataset, a.threads, a.extra)[1])
            cmd, r = epoch(a.bench, url, a.threads, a.extra)
            remotes.append(r)
        for l, r in zip(locals_, remotes):
            print(f"  run: local {l['mb_per_second']:.1f} MB/s, remote {r['mb_per_second']:.1f} "
                  f"MB/s, ratio {r['mb_per_second'] / l['mb_per_second']:.3f}; first batch "
                  f"{l['first_batch_seconds']:.3f} s vs {r['first_batch_seconds']:.3f} s")
        local = max(locals_, key=lambda j: j["mb_per_second"])
        remote = max(remotes, key=lambda j: j["mb_per_second"])
        ratio = remote["mb_per_second"] / local["mb_per_second"]
        pairs = sorted(r["mb_per_second"] / l["mb_per_second"] for l, r in zip(locals_, remotes))
        median = pairs[len(pairs) // 2]
        print(f"command: {' '.join(cmd)}")
        print(f"added latency {a.delay_ms:g} ms per request, {a.threads} threads")
        print(f"local : {local['wall_seconds']:.2f} s, {local['mb_per_second']:.1f} MB/s, "
              f"digest {local['digest']}")
        print(f"remote: {remote['wall_seconds']:.2f} s, {remote['mb_per_second']:.1f} MB/s, "
              f"digest {remote['digest']}")
        print(f"ratio remote/local throughput, best of each: {ratio:.3f} "
              f"({'meets' if ratio >= 0.9 else 'misses'} the 0.90 goal); median of the "
              f"{len(pairs)} back-to-back pairs: {median:.3f}")
        # The storage counters (requests, bytes, retries) are in the JSON once loader/stats
        # carries them; until then the shard bytes and blocks the loader read.
        keys = ("requests", "bytes_fetched", "retries")
        counts = {k: remote[k] for k in keys if k in remote}
        counts = counts or {k: remote.get("storage", {}).get(k) for k in keys
                            if k in remote.get("storage", {})}
        print(f"best of {a.repeat}; storage counters {counts or 'not in this --json'}; "
              f"blocks read {remote['blocks_read']}, shard bytes {remote['bytes_read']}")
        if any(r["digest"] != local["digest"] for r in remotes + locals_):
            print("DIGESTS DIFFER", file=sys.stderr)
            return 1
        return 0
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
