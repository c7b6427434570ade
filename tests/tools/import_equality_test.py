"""The importers against the real producers (docs/shardify-inputs.md, "Equality").

One corpus (tools/make-sample-corpus) is written by lhotse (cuts.jsonl.gz, and a Kaldi data
directory through lhotse's own export_to_kaldi), by webdataset's TarWriter and by datasets'
to_parquet (an Audio column of the files' bytes); each is
shardified with `shardify audio --from ...`, and each dataset must hold byte-identical shards
and give the same epoch digest (sluice-bench epoch) as the NeMo JSONL manifest of the same clips
with the same ids. Each producer also writes a speaker, a language and a gender per clip (lhotse's
supervision fields and its Kaldi export's utt2spk, utt2lang and utt2gender, webdataset .json
keys, parquet columns): the byte-identical shards hold the same metadata columns as the NeMo
lines' "speaker", "lang" and "gender" keys, and a loader filter on them keeps what the same
condition keeps in Python. Run by meson with build/venv-tools/bin/python (run.sh's REFERENCE_PIP); exits
77 (skip), saying why, when that venv lacks lhotse, webdataset or datasets.

Usage: import_equality_test.py SHARDIFY SLUICE_BENCH MAKE_SAMPLE_CORPUS
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import types
import wave

try:
    import datasets
    import lhotse
    import webdataset
    import numpy as np
    from lhotse import (CutSet, MonoCut, Recording, RecordingSet, SupervisionSegment,
                        SupervisionSet)
    from lhotse.kaldi import export_to_kaldi
except ImportError as e:  # pragma: no cover - the skip path
    print(f"SKIP: {e}: run ./run.sh (tools_venv installs run.sh's REFERENCE_PIP into "
          f"build/venv-tools)")
    sys.exit(77)

SHARDIFY, BENCH, CORPUS = sys.argv[1:4]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Mono WAV recordings whose index is a multiple of this get two 1 s segments instead of one cut
# over the whole file: lhotse's cut offsets and Kaldi's segments then matter.
SEGMENTED_EVERY = 4


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


# --keep-field gender: lhotse's supervision attribute, Kaldi's utt2gender, a .json key, a column.
def shardify(out, *args):
    run([SHARDIFY, "audio", *args, "--keep-field", "gender", "-o", out, "--quiet",
         "--threads", "2"])
    rejects = os.path.join(out, "rejects.jsonl")
    if os.path.exists(rejects) and os.path.getsize(rejects):
        sys.exit(f"FAIL: {out}: rejected items:\n{open(rejects).read()}")


def shard_bytes(d):
    return {os.path.basename(p): open(p, "rb").read() for p in sorted(glob.glob(d + "/shard-*"))}


def digest(d):
    out = run([BENCH, "epoch", d, "--json", "--batch-size", "4", "--seed", "7"])
    return json.loads(out.strip().splitlines()[-1])["digest"]


def write_nemo(path, entries):
    with open(path, "w") as f:
        for e in entries:
            f.write(json.dumps(e) + "\n")


def compare(name, ref_dir, dir_):
    a, b = shard_bytes(ref_dir), shard_bytes(dir_)
    if not a or a != b:
        sys.exit(f"FAIL: {name}: shards differ from the NeMo path's ({sorted(a)} vs {sorted(b)})")
    da, db = digest(ref_dir), digest(dir_)
    if da != db:
        sys.exit(f"FAIL: {name}: epoch digest {db}, NeMo path {da}")
    m = json.load(open(os.path.join(dir_, "manifest.json")))
    columns = [(c["name"], c["type"]) for c in m.get("columns", [])]
    if columns != [("speaker", "string"), ("language", "string"), ("chars", "int"),
                   ("gender", "string")]:
        sys.exit(f"FAIL: {name}: manifest columns {columns}")
    print(f"{name}: {m['records']} records, shards byte-identical, epoch digest {db}")


def check_filter(name, dir_, entries):
    """The loader's filter on the metadata columns keeps what the same condition keeps in Python
    over the NeMo entries the dataset was compared with."""
    cps = {e["id"]: len(e["text"]) / (e["duration"] if "duration" in e else
                                        Recording.from_file(e["audio_filepath"]).duration)
           for e in entries}
    # A threshold in the widest gap between characters per second near the median: the
    # resampled length of a 44.1 kHz file (a sample more or less) cannot move a record across it.
    v = sorted(cps.values())
    mid = max(range(len(v) // 4, 3 * len(v) // 4), key=lambda i: v[i + 1] - v[i])
    limit = (v[mid] + v[mid + 1]) / 2
    cond = (f'speaker != "spk1" and lang == "en" and gender != "f" and '
            f'chars_per_second < {limit:.6f}')
    want = [e["id"] for e in entries if e.get("speaker") != "spk1" and e.get("lang") == "en"
            and e.get("gender") != "f" and cps[e["id"]] < float(f"{limit:.6f}")]
    out = run([BENCH, "epoch", dir_, "--json", "--batch-size", "4", "--seed", "7",
               "--filter", cond])
    stats = json.loads(out.strip().splitlines()[-1])
    kept = len(entries) - stats["filtered_records"]
    if kept != len(want) or not want or len(want) == len(entries):
        sys.exit(f"FAIL: {name}: filter {cond!r} kept {kept} records, Python keeps {len(want)} "
                 f"of {len(entries)}: {stats.get('filtered')}")
    print(f"{name}: filter {cond!r} keeps {kept} of {len(entries)}, as in Python")


def main():
    tmp = tempfile.mkdtemp(prefix="import-eq-")
    corpus = os.path.join(tmp, "corpus")
    run([sys.executable if CORPUS.endswith(".py") else CORPUS, *([CORPUS] if CORPUS.endswith(".py") else []),
         "--out", corpus, "--count", "16", "--jobs", "2"])
    lines = [json.loads(l) for l in open(os.path.join(corpus, "manifest.jsonl"))]

    recordings, supervisions = [], []
    nemo_whole, nemo_by_id = [], {}
    for i, j in enumerate(lines):
        path = os.path.abspath(os.path.join(corpus, j["audio_filepath"]))
        rec = Recording.from_file(path, recording_id=j["id"])
        recordings.append(rec)
        # A multi-channel recording: its cut takes every channel (sluice mixes them down).
        channel = rec.channel_ids if len(rec.channel_ids) > 1 else 0
        # NeMo's "duration" is left out: with it the NeMo path reads that many (rounded) seconds.
        meta = {"speaker": f"spk{i % 3}", "lang": "en", "gender": "mf"[i % 2]}
        whole = {"audio_filepath": path, "text": j["text"], "id": j["id"], **meta}
        nemo_whole.append(whole)
        mono_wav = path.endswith(".wav") and len(rec.channel_ids) == 1
        if mono_wav and i % SEGMENTED_EVERY == 0 and rec.duration >= 2.0:
            words = j["text"].split()
            for k, (start, text) in enumerate([(0.0, " ".join(words[:2])), (1.0, " ".join(words[2:]))]):
                sid = f"{j['id']}-{'ab'[k]}"
                supervisions.append(SupervisionSegment(
                    id=sid, recording_id=j["id"], start=start, duration=1.0, channel=0,
                    text=text, speaker=f"spk{i % 3}", language="en", gender="mf"[i % 2]))
                nemo_by_id[sid] = {"audio_filepath": path, "text": text, "id": sid,
                                   "offset": start, "duration": 1.0, **meta}
        else:
            supervisions.append(SupervisionSegment(
                id=j["id"], recording_id=j["id"], start=0, duration=rec.duration, channel=channel,
                text=j["text"], speaker=f"spk{i % 3}", language="en", gender="mf"[i % 2]))
            nemo_by_id[j["id"]] = whole
    recs, sups = RecordingSet.from_recordings(recordings), SupervisionSet.from_segments(supervisions)

    # Lhotse: one cut per supervision, as ASR recipes cut them.
    cuts = CutSet.from_manifests(recordings=recs, supervisions=sups).trim_to_supervisions()
    cuts_path = os.path.join(tmp, "cuts.jsonl.gz")
    cuts.to_file(cuts_path)
    write_nemo(os.path.join(tmp, "lhotse-nemo.jsonl"), [nemo_by_id[c.id] for c in cuts])
    shardify(os.path.join(tmp, "ref-lhotse"), "-m", os.path.join(tmp, "lhotse-nemo.jsonl"))
    shardify(os.path.join(tmp, "lhotse"), "--from", "lhotse", cuts_path)
    compare("lhotse cuts.jsonl.gz", os.path.join(tmp, "ref-lhotse"), os.path.join(tmp, "lhotse"))
    check_filter("lhotse cuts.jsonl.gz", os.path.join(tmp, "lhotse"), [nemo_by_id[c.id] for c in cuts])

    # Cuts of one channel of a 2-channel recording (lhotse's MonoCut with channel=1): the clip is
    # that channel, the same records as NeMo lines of mono WAVs holding the samples lhotse's
    # load_audio gives for the cut.
    stereo = [r for r in recordings if len(r.channel_ids) == 2][:2]
    if not stereo:
        sys.exit("FAIL: the corpus has no 2-channel recording to cut one channel of")
    channel_cuts, channel_nemo = [], []
    for r in stereo:
        for ch in (1, 0):
            cid = f"{r.id}-ch{ch}"
            cut = MonoCut(id=cid, start=0, duration=r.duration, channel=ch, recording=r,
                          supervisions=[SupervisionSegment(
                              id=cid, recording_id=r.id, start=0, duration=r.duration,
                              channel=ch, text=f"channel {ch}")])
            samples = cut.load_audio()[0]
            mono = os.path.join(tmp, cid + ".wav")
            with wave.open(mono, "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(r.sampling_rate)
                # load_audio gives int16 / 32768: the file's own integers back.
                w.writeframes(np.round(samples * 32768).astype("<i2").tobytes())
            channel_cuts.append(cut)
            channel_nemo.append({"audio_filepath": mono, "text": f"channel {ch}", "id": cid})
    CutSet.from_cuts(channel_cuts).to_file(os.path.join(tmp, "channels.jsonl.gz"))
    write_nemo(os.path.join(tmp, "channels-nemo.jsonl"), channel_nemo)
    shardify(os.path.join(tmp, "ref-channels"), "-m", os.path.join(tmp, "channels-nemo.jsonl"))
    shardify(os.path.join(tmp, "channels"), "--from", "lhotse",
             os.path.join(tmp, "channels.jsonl.gz"))
    compare("lhotse cuts of one channel of 2-channel recordings", os.path.join(tmp, "ref-channels"),
            os.path.join(tmp, "channels"))

    # Lhotse's recordings and supervisions manifests: the cuts trim_to_supervisions makes.
    recs.to_file(os.path.join(tmp, "recordings.jsonl.gz"))
    sups.to_file(os.path.join(tmp, "supervisions.jsonl.gz"))
    shardify(os.path.join(tmp, "lhotse-pair"), "--from", "lhotse",
             os.path.join(tmp, "recordings.jsonl.gz"), os.path.join(tmp, "supervisions.jsonl.gz"))
    compare("lhotse recordings + supervisions", os.path.join(tmp, "ref-lhotse"),
            os.path.join(tmp, "lhotse-pair"))

    # Lhotse Shar: the same cuts, each one's audio span as a FLAC member of lhotse's tars.
    shar_dir = os.path.join(tmp, "shar")
    os.makedirs(shar_dir)
    cuts.to_shar(shar_dir, fields={"recording": "flac"}, shard_size=8)
    shardify(os.path.join(tmp, "lhotse-shar"), "--from", "lhotse", shar_dir)
    compare("lhotse Shar (to_shar, flac)", os.path.join(tmp, "ref-lhotse"),
            os.path.join(tmp, "lhotse-shar"))

    # Kaldi, through lhotse's export: it lists mono WAV files by path and everything else as an
    # ffmpeg pipe (not installed here, and its resampling is not sluice's), so the mono WAVs.
    mono = [r for r in recordings if r.sources[0].source.endswith(".wav") and len(r.channel_ids) == 1]
    mono_ids = {r.id for r in mono}
    kaldi_dir = os.path.join(tmp, "kaldi")
    export_to_kaldi(RecordingSet.from_recordings(mono),
                    SupervisionSet.from_segments([s for s in supervisions if s.recording_id in mono_ids]),
                    kaldi_dir)
    order = [l.split()[0] for l in open(os.path.join(kaldi_dir, "segments"))]
    write_nemo(os.path.join(tmp, "kaldi-nemo.jsonl"), [nemo_by_id[u] for u in order])
    shardify(os.path.join(tmp, "ref-kaldi"), "-m", os.path.join(tmp, "kaldi-nemo.jsonl"))
    shardify(os.path.join(tmp, "kaldi-out"), "--from", "kaldi", kaldi_dir)
    compare("kaldi data dir (lhotse export)", os.path.join(tmp, "ref-kaldi"), os.path.join(tmp, "kaldi-out"))

    # WebDataset: whole files, text as .txt for even samples and in .json for odd ones.
    tars = []
    for t in range(2):
        tar = os.path.join(tmp, f"shard-{t:06d}.tar")
        tars.append(tar)
        with webdataset.TarWriter(tar) as w:
            for i, e in enumerate(nemo_whole[t * 8:(t + 1) * 8]):
                ext = os.path.splitext(e["audio_filepath"])[1][1:]
                sample = {"__key__": e["id"], ext: open(e["audio_filepath"], "rb").read()}
                # The .json's speaker, lang(uage) and gender are the record's columns, also beside
                # a .txt transcript.
                meta = {"speaker": e["speaker"], "language": e["lang"], "gender": e["gender"]}
                if i % 2 == 0:
                    sample["txt"] = e["text"]
                    sample["json"] = meta
                else:
                    sample["json"] = {"text": e["text"], **meta}
                w.write(sample)
    write_nemo(os.path.join(tmp, "wds-nemo.jsonl"), nemo_whole)
    shardify(os.path.join(tmp, "ref-wds"), "-m", os.path.join(tmp, "wds-nemo.jsonl"))
    shardify(os.path.join(tmp, "wds"), "--from", "wds", *tars)
    compare("webdataset tars (TarWriter)", os.path.join(tmp, "ref-wds"), os.path.join(tmp, "wds"))
    check_filter("webdataset tars (TarWriter)", os.path.join(tmp, "wds"), nemo_whole)

    # HF datasets: datasets' own to_parquet, the Audio feature holding each file's bytes and
    # name, in two files (the rows of the second follow the first's).
    datasets.disable_progress_bars()
    # Audio's own encoder needs torchcodec; cast_column stores the {bytes, path} dicts as they are.
    ds = datasets.Dataset.from_dict(
        {"id": [e["id"] for e in nemo_whole], "text": [e["text"] for e in nemo_whole],
         "spk": [e["speaker"] for e in nemo_whole], "lang": [e["lang"] for e in nemo_whole],
         "gender": [e["gender"] for e in nemo_whole],
         "audio": [{"bytes": open(e["audio_filepath"], "rb").read(),
                    "path": os.path.basename(e["audio_filepath"])} for e in nemo_whole]}
    ).cast_column("audio", datasets.Audio(decode=False))
    parquets = []
    for k in range(2):
        parquets.append(os.path.join(tmp, f"train-{k:05d}-of-00002.parquet"))
        ds.shard(2, k, contiguous=True).to_parquet(parquets[-1])
    shardify(os.path.join(tmp, "hf"), "--from", "hf", "--python", sys.executable,
             "--hf-speaker", "spk", "--hf-language", "lang", *parquets)
    compare("HF datasets parquet (to_parquet, Audio bytes)", os.path.join(tmp, "ref-wds"),
            os.path.join(tmp, "hf"))

    # sluice.shardify.from_hf on the Dataset load_dataset makes of the same files: it reads
    # datasets' cache (.arrow stream files). The package's pure-Python shardify module is loaded
    # without its extension, which this venv's Python has not built.
    package = types.ModuleType("sluice")
    package.__path__ = [os.path.join(ROOT, "python", "sluice")]
    sys.modules["sluice"] = package
    from sluice.shardify import from_hf
    loaded = datasets.load_dataset("parquet", data_files=parquets, split="train",
                                   cache_dir=os.path.join(tmp, "hf-cache"))
    from_hf(loaded, out=os.path.join(tmp, "hf-api"), binary=SHARDIFY, threads=2, speaker="spk",
            language="lang", keep_field="gender")
    compare("HF datasets Dataset (from_hf, its .arrow cache)", os.path.join(tmp, "ref-wds"),
            os.path.join(tmp, "hf-api"))

    # Every row ends as a record or a reason naming file and row, the same for any thread count.
    bad = datasets.Dataset.from_dict(
        {"id": ["ok", "no-text", "not-audio", None],
         "text": ["fine", None, "x", "y"],
         "audio": [{"bytes": open(nemo_whole[0]["audio_filepath"], "rb").read(), "path": "a.wav"},
                   {"bytes": b"RIFF", "path": "b.wav"}, {"bytes": b"garbage", "path": "c.wav"},
                   {"bytes": b"RIFF", "path": "d.wav"}]}).cast_column("audio", datasets.Audio())
    bad_path = os.path.join(tmp, "bad.parquet")
    bad.to_parquet(bad_path)
    shards = []
    for threads in ("1", "3"):
        out = os.path.join(tmp, f"hf-bad-{threads}")
        run([SHARDIFY, "audio", "--from", "hf", "--python", sys.executable, bad_path, "-o", out,
             "--quiet", "--threads", threads])
        reasons = [json.loads(l)["reason"] for l in open(os.path.join(out, "rejects.jsonl"))]
        want = [f"{bad_path} row 2: \"no-text\": the transcript is null",
                f"{bad_path} row 3 (c.wav)", f"{bad_path} row 4: the id is null"]
        if len(reasons) != 3 or any(not r.startswith(w) for r, w in zip(sorted(reasons), want)):
            sys.exit(f"FAIL: HF rejects: {reasons}, expected reasons starting {want}")
        shards.append(shard_bytes(out))
    if shards[0] != shards[1] or not shards[0]:
        sys.exit("FAIL: HF parquet: the shards of -j 1 and -j 3 differ")
    print(f"HF parquet rejects: {sorted(reasons)}")
    # A misspelled id column stops the run; only the default "id" may be absent (records are then
    # keyed by the audio's path), else every row would be keyed by its path without a word.
    r = subprocess.run([SHARDIFY, "audio", "--from", "hf", "--python", sys.executable, "--hf-id",
                        "utt_id", bad_path, "-o", os.path.join(tmp, "hf-id"), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    if r.returncode == 0 or "no id column 'utt_id'" not in r.stdout + r.stderr:
        sys.exit(f"FAIL: --hf-id utt_id on a file without it: exit {r.returncode}\n"
                 f"{r.stdout}{r.stderr}")
    print(f"lhotse {lhotse.__version__}, webdataset {getattr(webdataset, '__version__', '?')}, "
          f"datasets {datasets.__version__}")
    subprocess.run(["rm", "-rf", tmp])


main()
