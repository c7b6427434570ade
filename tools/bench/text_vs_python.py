#!/usr/bin/python3
"""Language-model batches from a text corpus: sluice next to SentencePiece's Python module in a
PyTorch DataLoader, on the same corpus and the same number of cores.

1. Generates a corpus (documents of sentences from a small grammar, blank-line separated) of
   --mb megabytes, deterministic for --seed.
2. `shardify text --docs --tokenizer bpe:500` makes DIR/ids (token ids stored, end-of-document
   id 1 after each document); `shardify text --docs` makes DIR/raw (text only).
3. Python: a torch DataLoader with --workers worker processes (one torch thread each); each worker
   takes every W-th document in a shuffled order, normalises it as sluice does (lowercase, strip
   punctuation, collapse whitespace), encodes it with sentencepiece (the model shardify trained,
   DIR/ids/tokenizer.model), appends end-of-document, packs the stream into [B, L+1] int32
   batches (the same layout as sluice) and yields them.
4. sluice: `sluice-bench epoch DIR/ids --seq-len L --batch-size B --threads T --json` (ids made
   offline by shardify; the loader packs them), with T = workers and T = 1; and on DIR/stext
   (`shardify text --docs --tokenizer spm:DIR/ids/tokenizer.model --store text`: text and token
   counts only) the same SentencePiece encoding online in the loader's decode stage, packed into
   the same batches (the epoch digests must match the offline ones).

Prints tokens/s of each (tokens = B x L per packed batch, ids per document when not packed), CPU
utilisation, and the ratios. Run with Debian's python3 (python3-torch, python3-sentencepiece):

  /usr/bin/python3 tools/bench/text_vs_python.py --build build-text --work /tmp/tvp
"""
import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import time

import sentencepiece
import torch

SUBJECTS = ["the cat", "a dog", "my neighbour", "the old sailor", "every student", "the committee",
            "a small bird", "the engineer", "our teacher", "the river", "this machine", "a stranger"]
VERBS = ["sees", "likes", "builds", "remembers", "follows", "paints", "questions", "carries",
         "finds", "describes", "ignores", "admires"]
OBJECTS = ["the house", "a long letter", "the bright moon", "three apples", "the quiet garden",
           "an empty boat", "the broken clock", "a red kite", "the northern road", "some bread"]
ADVERBS = ["slowly", "every morning", "without a word", "again", "in the rain", "at night",
           "with great care", "before dinner", "quite happily", "now and then"]


def sentence(rng):
    s = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
    if rng.random() < 0.6:
        s += " " + rng.choice(ADVERBS)
    if rng.random() < 0.3:
        s += f", and {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
    return s[0].upper() + s[1:] + rng.choice([".", ".", "!", "?"])


def make_corpus(path, megabytes, seed):
    rng = random.Random(seed)
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        while size < megabytes * 1e6:
            doc = "\n".join(" ".join(sentence(rng) for _ in range(rng.randint(1, 4)))
                            for _ in range(rng.randint(1, 6)))
            f.write(doc + "\n\n")
            size += len(doc) + 2


def read_documents(path):
    with open(path, encoding="utf-8") as f:
        return [d.strip() for d in f.read().split("\n\n") if d.strip()]


PUNCT = re.compile(r"[^\w\s']")
SPACE = re.compile(r"\s+")


def normalise(text):
    # features/text_normalize.h defaults: lowercase, punctuation removed, whitespace collapsed.
    return SPACE.sub(" ", PUNCT.sub("", text.lower())).strip()


class PackedText(torch.utils.data.IterableDataset):
    """Tokenizes documents in the workers and packs them into [B, L+1] batches."""

    def __init__(self, docs, model, seq_len, batch_size, seed):
        self.docs, self.model = docs, model
        self.seq_len, self.batch_size, self.seed = seq_len, batch_size, seed

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        wid, workers = (info.id, info.num_workers) if info else (0, 1)
        sp = sentencepiece.SentencePieceProcessor(model_file=self.model)
        order = list(range(len(self.docs)))
        random.Random(self.seed).shuffle(order)
        width = self.seq_len + 1
        stream = []
        for i in order[wid::workers]:
            stream.extend(x + 1 for x in sp.encode(normalise(self.docs[i])))  # sluice: spm id + 1
            stream.append(1)  # end of document
            need = self.seq_len * self.batch_size + 1
            while len(stream) >= need:
                rows = [stream[r * self.seq_len: r * self.seq_len + width]
                        for r in range(self.batch_size)]
                del stream[: self.seq_len * self.batch_size]
                yield torch.tensor(rows, dtype=torch.int32)


def python_epoch(docs, model, args):
    torch.set_num_threads(1)
    ds = PackedText(docs, model, args.seq_len, args.batch_size, args.seed)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=args.workers,
                                     worker_init_fn=lambda _: torch.set_num_threads(1))
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    tokens = 0
    for batch in dl:
        assert batch.shape == (args.batch_size, args.seq_len + 1)
        tokens += args.batch_size * args.seq_len
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime +
           s1.ru_utime + s1.ru_stime - s0.ru_utime - s0.ru_stime)
    return tokens, wall, cpu


def sluice_epochs(bench, dataset, threads, args, extra, epochs=None):
    cmd = [bench, "epoch", dataset, "--threads", str(threads), "--epochs", str(epochs or args.sluice_epochs),
           "--seed", str(args.seed), "--json"] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    runs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    digests = [j["digest"] for j in runs]  # by epoch: each epoch has its own shuffle
    # Median epoch by tokens/s: the machine is shared, single epochs are noisy.
    median = sorted(runs, key=lambda j: j["tokens_per_second"])[len(runs) // 2]
    return dict(median, digests=digests), cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build directory with tools/")
    ap.add_argument("--bench", help="sluice-bench binary (default BUILD/tools/sluice-bench)")
    ap.add_argument("--work", default="/tmp/text_vs_python", help="corpus and datasets go here")
    ap.add_argument("--mb", type=float, default=8, help="corpus size in MB")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers = sluice threads")
    ap.add_argument("--sluice-epochs", type=int, default=9)
    ap.add_argument("--python-epochs", type=int, default=2)
    ap.add_argument("--online-epochs", type=int, default=3, help="sluice epochs tokenizing online")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    shardify = os.path.join(args.build, "tools", "shardify")
    bench = args.bench or os.path.join(args.build, "tools", "sluice-bench")
    os.makedirs(args.work, exist_ok=True)
    corpus = os.path.join(args.work, "corpus.txt")
    ids, raw = os.path.join(args.work, "ids"), os.path.join(args.work, "raw")
    if not os.path.exists(corpus):
        make_corpus(corpus, args.mb, args.seed)
    for out, extra in ((ids, ["--tokenizer", "bpe:500"]), (raw, [])):
        if not os.path.exists(os.path.join(out, "manifest.json")):
            subprocess.run([shardify, "text", "--docs", "-i", corpus, "-o", out] + extra, check=True,
                           stdout=subprocess.DEVNULL)
    manifest = json.load(open(os.path.join(ids, "manifest.json")))
    docs = read_documents(corpus)
    print(f"corpus: {os.path.getsize(corpus) / 1e6:.1f} MB, {len(docs)} documents; "
          f"shardify bpe:500 stored {manifest['tokens']} token ids "
          f"(end-of-document included) in {manifest['records']} records")

    # Same tokenization on both sides: the Python ids of every document must add up to shardify's.
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(ids, "tokenizer.model"))
    t0 = time.perf_counter()
    py_total = sum(len(x) + 1 for x in sp.encode([normalise(d) for d in docs]))
    print(f"python sentencepiece, main process: {py_total} ids in {time.perf_counter() - t0:.2f} s; "
          f"{'equal to' if py_total == manifest['tokens'] else 'DIFFERENT FROM'} shardify's count")

    pack = ["--seq-len", str(args.seq_len), "--batch-size", str(args.batch_size)]
    print(f"\npacked [{args.batch_size}, {args.seq_len + 1}] batches, one epoch each "
          f"(tokens = B x L per batch), {os.cpu_count()} cores on this machine")
    py = []
    for _ in range(args.python_epochs):
        tokens, wall, cpu = python_epoch(docs, os.path.join(ids, "tokenizer.model"), args)
        py.append((tokens / wall, tokens, wall, cpu))
        print(f"  python  {args.workers} workers: {tokens} tokens in {wall:.2f} s = "
              f"{tokens / wall / 1e6:.3f} M tokens/s, cpu {100 * cpu / wall:.0f}%, "
              f"{tokens / cpu / 1e6:.3f} M tokens per cpu-second")
    py_tps = max(p[0] for p in py)
    results = {}
    for threads in (args.workers, 1):
        j, cmd = sluice_epochs(bench, ids, threads, args, pack)
        results[threads] = j
        print(f"  sluice  {threads} thread{'s' if threads > 1 else ''} (offline ids): "
              f"{j['tokens']} tokens in {j['wall_seconds']:.4f} s = "
              f"{j['tokens_per_second'] / 1e6:.1f} M tokens/s, cpu "
              f"{100 * j['cpu_utilisation']:.0f}%, {j['tokens'] / j['cpu_seconds'] / 1e6:.1f} M tokens "
              f"per cpu-second (median of {args.sluice_epochs} epochs)")
    print(f"    {' '.join(cmd[:4])} ... --json")
    two, one = results[args.workers], results[1]
    print(f"  sluice {args.workers} / 1 threads: "
          f"{two['tokens_per_second'] / one['tokens_per_second']:.2f}x")
    print(f"  sluice (offline ids) / python (online sentencepiece), {args.workers} cores: "
          f"{two['tokens_per_second'] / py_tps:.1f}x")

    # The same tokenization online inside sluice, packed exactly like the Python side: DIR/stext
    # stores the text and each record's token count (shardify text --store text), and the
    # loader's decode stage runs SentencePiece; its batches must equal the offline ones.
    stext = os.path.join(args.work, "stext")
    if not os.path.exists(os.path.join(stext, "manifest.json")):
        subprocess.run([shardify, "text", "--docs", "-i", corpus, "-o", stext, "--tokenizer",
                        "spm:" + os.path.join(ids, "tokenizer.model"), "--store", "text"],
                       check=True, stdout=subprocess.DEVNULL)
    print("\nonline sentencepiece in the loader's decode stage (DIR/stext, packed the same way)")
    online = {}
    for threads in (args.workers, 1):
        j, _ = sluice_epochs(bench, stext, threads, args, pack, args.online_epochs)
        online[threads] = j
        print(f"  sluice  {threads} thread{'s' if threads > 1 else ''}: {j['tokens']} tokens in "
              f"{j['wall_seconds']:.3f} s = {j['tokens_per_second'] / 1e6:.3f} M tokens/s, cpu "
              f"{100 * j['cpu_utilisation']:.0f}%, {j['tokens'] / j['cpu_seconds'] / 1e6:.3f} M tokens "
              f"per cpu-second; epoch digests "
              f"{'equal to' if j['digests'] == two['digests'][:len(j['digests'])] else 'DIFFERENT FROM'} "
              f"the offline ids' ones")
    print(f"  sluice online {args.workers} / 1 threads: "
          f"{online[args.workers]['tokens_per_second'] / online[1]['tokens_per_second']:.2f}x; "
          f"sluice online / python: {online[args.workers]['tokens_per_second'] / py_tps:.2f}x")

if __name__ == "__main__":
    sys.exit(main())
