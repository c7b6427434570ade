#!/usr/bin/python3
"""A corpus's audio as plain 16 kHz mono 16-bit WAV, the format most ASR recipes train from.

tools/make-sample-corpus writes a mixed corpus (WAV and FLAC at 22.05 kHz, some 44.1 kHz
stereo), so a PyTorch pipeline over it pays for FLAC decoding, downmixing and resampling on
every item. Over the plain copy it only reads WAV: the case that favours PyTorch most, and the
one the benchmarks report beside the mixed corpus.

  tools/bench/plain_16k_corpus.py --manifest /tmp/c/manifest.jsonl --out /tmp/c16

Writes OUT/audio/<id>.wav (sox: rate 16k, 1 channel, 16 bits; sox dithers by default, as
make-sample-corpus's conversions do) and OUT/manifest.jsonl with the same lines, audio_filepath
pointing at the copies and duration re-read from them. Lines without audio or text are dropped.
Needs sox (Debian's package; run.sh installs it).
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import wave


def convert(src, dst):
    r = subprocess.run(["sox", "-V1", src, "-r", "16000", "-c", "1", "-b", "16", dst],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return f"{src}: sox failed ({r.stderr.strip()})"
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--manifest", required=True, help="a NeMo-style JSONL manifest")
    p.add_argument("--out", required=True, help="output folder (audio/ and manifest.jsonl)")
    p.add_argument("--jobs", type=int, default=os.cpu_count(), help="parallel sox processes")
    args = p.parse_args()

    base = os.path.dirname(os.path.abspath(args.manifest))
    os.makedirs(os.path.join(args.out, "audio"), exist_ok=True)
    entries = []
    with open(args.manifest, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                j = json.loads(line)
            except ValueError:
                continue  # a corpus made with --bad has broken lines on purpose
            if "audio_filepath" not in j or "text" not in j:
                continue
            src = j["audio_filepath"]
            if not os.path.isabs(src):
                src = os.path.join(base, src)
            name = j.get("id") or f"line-{n:06d}"
            j["audio_filepath"] = f"audio/{name}.wav"
            entries.append((src, os.path.join(args.out, j["audio_filepath"]), j))

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        errors = [e for e in pool.map(lambda e: convert(e[0], e[1]), entries) if e]
    for e in errors:
        print(e, file=sys.stderr)
    kept = 0
    with open(os.path.join(args.out, "manifest.jsonl"), "w", encoding="utf-8") as f:
        for src, dst, j in entries:
            if not os.path.exists(dst):
                continue
            with wave.open(dst) as w:
                j["duration"] = round(w.getnframes() / w.getframerate(), 3)
            f.write(json.dumps(j, ensure_ascii=False) + "\n")
            kept += 1
    print(f"{kept} clips as 16 kHz mono PCM16 WAV in {args.out} ({len(errors)} failed)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
