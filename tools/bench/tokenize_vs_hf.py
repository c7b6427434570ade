#!/usr/bin/env python3
"""Byte-level BPE encoding speed: sluice next to HF tokenizers (Rust) and tiktoken (Rust), on the
same text, the same tokenizer files and one thread each (docs/tokenizers.md, "Speed").

1. The text: --input FILE, or (default) a corpus gathered from this machine: the repository's
   docs and C++ sources, Python's standard library and the licence texts under /usr/share, cut
   to --mb megabytes (prose, code and some non-ASCII; every byte distinct text, no repetition).
   It is cut into documents of about --doc-bytes bytes at line ends, the same for every side.
2. HF tokenizers: Tokenizer.from_file(FILE).encode_batch(docs, add_special_tokens=False) with
   RAYON_NUM_THREADS=1 (one thread), and the same per document from Python (what a data loader
   worker does). tiktoken: Encoding.encode_ordinary_batch(docs, num_threads=1).
3. sluice: `sluice-bench tokenize --tokenizer hf:FILE|tiktoken:FILE:ENC --input TEXT --threads 1
   --json`, whose ids are checked equal to the references' on the first documents here.

--gpt2-from-tiktoken FILE writes GPT-2's tokenizer.json (ByteLevel with GPT-2's regex, no
normaliser) from a GPT-2 rank file such as the `gpt2.tiktoken` that openai-whisper ships: the
vocabulary is the ranks, the merges every split of a token into two tokens, in rank order (as
HF's tiktoken converter makes them), and adds it to the --hf files.

Each side: the fewest CPU-seconds of --passes passes after a first, untimed one (both keep caches
across passes, as in training). Prints MB per CPU-second (MB/s per core) for each and the ratio. Run it with the venv that
run.sh makes (tokenizers and tiktoken from PyPI):

  build/venv-tools/bin/python tools/bench/tokenize_vs_hf.py --bench build/tools/sluice-bench \\
      --hf PATH/tokenizer.json --tiktoken PATH/gpt2.tiktoken:r50k_base
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before tokenizers starts its pool
import tiktoken  # noqa: E402
import tiktoken_ext.openai_public as openai_public  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402


def gather_corpus(mb, root):
    patterns = [os.path.join(root, "docs", "**", "*.md"), os.path.join(root, "**", "*.cc"),
                os.path.join(root, "**", "*.h"), "/usr/lib/python3*/**/*.py",
                "/usr/share/common-licenses/*"]
    out, size = [], 0
    for p in patterns:
        for f in sorted(glob.glob(p, recursive=True)):
            if "/build" in f or not os.path.isfile(f):
                continue
            try:
                t = open(f, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            out.append(t)
            size += len(t.encode())
            if size >= mb * 1e6:
                return "".join(out)
    return "".join(out)


def cut(text, doc_bytes):
    docs, start = [], 0
    while start < len(text):
        end = text.find("\n", start + doc_bytes)
        end = len(text) if end < 0 else end + 1
        docs.append(text[start:end])
        start = end
    return docs


def best_of(passes, fn):
    """The fewest CPU-seconds of the process over `passes` calls (after a warm one): per core,
    and meaningful on a machine shared with other work, where wall time is not."""
    fn()  # warm: caches, thread pools
    best = 1e300
    for _ in range(passes):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def sluice(bench, spec, path, doc_bytes, passes):
    r = subprocess.run([bench, "tokenize", "--tokenizer", spec, "--input", path, "--doc-bytes",
                        str(doc_bytes), "--threads", "1", "--passes", str(passes), "--json"],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def tiktoken_encoding(path, name):
    ranks = tiktoken.load.load_tiktoken_bpe(path)
    openai_public.load_tiktoken_bpe = lambda *a, **k: ranks  # the encoding's own regex/specials
    p = getattr(openai_public, name)()
    return tiktoken.Encoding(name="bench_" + name, pat_str=p["pat_str"],
                             mergeable_ranks=p["mergeable_ranks"],
                             special_tokens=p["special_tokens"])


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def gpt2_json_from_tiktoken(path, out):
    ranks = tiktoken.load.load_tiktoken_bpe(path)
    b2u = bytes_to_unicode()
    text = lambda t: "".join(b2u[b] for b in t)  # noqa: E731
    merges = []
    for tok, rank in ranks.items():
        for k in range(1, len(tok)):
            a, b = tok[:k], tok[k:]
            if a in ranks and b in ranks:
                merges.append((rank, ranks[a], ranks[b], text(a), text(b)))
    merges.sort()
    eot = max(ranks.values()) + 1
    j = {"version": "1.0", "truncation": None, "padding": None,
         "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False,
                           "lstrip": False, "rstrip": False, "normalized": False, "special": True}],
         "normalizer": None,
         "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                           "use_regex": True},
         "post_processor": None,
         "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                     "use_regex": True},
         "model": {"type": "BPE", "dropout": None, "unk_token": None,
                   "continuing_subword_prefix": None, "end_of_word_suffix": None,
                   "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                   "vocab": {text(t): r for t, r in ranks.items()},
                   "merges": [[a, b] for _, _, _, a, b in merges]}}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default="build/tools/sluice-bench")
    ap.add_argument("--hf", action="append", default=[], help="tokenizer.json (repeatable)")
    ap.add_argument("--tiktoken", action="append", default=[], help="FILE:ENCODING (repeatable)")
    ap.add_argument("--gpt2-from-tiktoken", help="GPT-2 rank file to make a tokenizer.json from")
    ap.add_argument("--input", help="UTF-8 text (default: gathered, see above)")
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--doc-bytes", type=int, default=4096)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(a.input, encoding="utf-8").read() if a.input else gather_corpus(a.mb, root)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write(text)
        path = f.name
    raw = open(path, encoding="utf-8").read()
    if a.gpt2_from_tiktoken:
        a.hf.insert(0, gpt2_json_from_tiktoken(a.gpt2_from_tiktoken, path + ".gpt2.json"))
    docs = cut(raw, a.doc_bytes)
    mb = len(raw.encode()) / 1e6
    rows = []
    for hf in a.hf:
        tok = Tokenizer.from_file(hf)
        s = sluice(a.bench, "hf:" + hf, path, a.doc_bytes, a.passes)
        sample = docs[:50]
        want = [e.ids for e in tok.encode_batch(sample, add_special_tokens=False)]
        got = subprocess.run(  # spot check: the same ids on the first documents
            [os.path.join(os.path.dirname(a.bench), "..", "tests", "features", "bpe_ids"), "hf", hf,
             "plain"],
            input="".join(__import__("base64").b64encode(d.encode()).decode() + "\n"
                          for d in sample), capture_output=True, text=True)
        same = got.returncode == 0 and [json.loads(l)["ids"] for l in got.stdout.splitlines()] == want
        batch = best_of(a.passes, lambda: tok.encode_batch(docs, add_special_tokens=False))
        loop = best_of(a.passes, lambda: [tok.encode(d, add_special_tokens=False) for d in docs])
        rows.append({"file": hf, "reference": "HF tokenizers encode_batch (1 thread)",
                     "reference_mb_s": mb / batch, "python_loop_mb_s": mb / loop,
                     "sluice_mb_s": s["mb_per_second_per_core"],
                     "sluice_cold_mb_s": s["cold_mb_per_second_per_core"], "ids_equal": same})
    for spec in a.tiktoken:
        file, name = spec.rsplit(":", 1)
        enc = tiktoken_encoding(file, name)
        s = sluice(a.bench, "tiktoken:" + file + ":" + name, path, a.doc_bytes, a.passes)
        batch = best_of(a.passes, lambda: enc.encode_ordinary_batch(docs, num_threads=1))
        loop = best_of(a.passes, lambda: [enc.encode_ordinary(d) for d in docs])
        rows.append({"file": file + ":" + name, "reference": "tiktoken encode_ordinary_batch (1 thread)",
                     "reference_mb_s": mb / batch, "python_loop_mb_s": mb / loop,
                     "sluice_mb_s": s["mb_per_second_per_core"],
                     "sluice_cold_mb_s": s["cold_mb_per_second_per_core"], "ids_equal": None})
    if a.json:
        print(json.dumps({"mb": mb, "documents": len(docs), "rows": rows}))
        return
    print(f"text: {mb:.1f} MB, {len(docs)} documents of ~{a.doc_bytes} bytes; one thread each; "
          "MB per CPU-second")
    for r in rows:
        print(f"{r['file']}\n  {r['reference']}: {r['reference_mb_s']:.1f}"
              f" (per-document Python loop: {r['python_loop_mb_s']:.1f})\n"
              f"  sluice: {r['sluice_mb_s']:.1f} (first pass, cold cache: "
              f"{r['sluice_cold_mb_s']:.1f})  ratio {r['sluice_mb_s'] / r['reference_mb_s']:.2f}"
              + ("" if r["ids_equal"] is None else f"  ids equal on 50 documents: {r['ids_equal']}"))


if __name__ == "__main__":
    main()
