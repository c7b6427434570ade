"""sluice.shardify: the shardify command (docs/shardify.md) from Python, with its JSON summary.

shardify is a program, not a library call: it runs many threads, resumes after a crash and
writes rejects.jsonl, which a subprocess keeps as they are. Keywords are its flags without their
dashes, '-' as '_'; True gives a flag alone (overwrite=True: --overwrite), False leaves it out,
a list repeats the values (input=["a.txt", "b.txt"]).
"""
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from .errors import CorruptionError, ShardifyError


def find_shardify():
    """The shardify binary: $SLUICE_SHARDIFY, else the one pip installed beside this Python's
    scripts, else the first on PATH."""
    explicit = os.environ.get("SLUICE_SHARDIFY")
    if explicit:
        return explicit
    beside = os.path.join(sysconfig.get_path("scripts"), "shardify")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("shardify")
    if found is None:
        raise ShardifyError("shardify: not found; pip install this package, put build/tools on "
                            "PATH, or set SLUICE_SHARDIFY to the binary")
    return found


def _argv(options):
    argv = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            argv.append(flag)
            argv.extend(os.fspath(v) if isinstance(v, os.PathLike) else str(v) for v in value)
        else:
            argv.extend([flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)])
    return argv


def _check_keywords(exe, command, options):
    """TypeError for the first keyword that is none of COMMAND's flags, with "did you mean" the
    close ones (difflib), as sluice.Loader says it: CLI11's "arguments were not expected" names
    the flag alone. The flags are read from ``shardify COMMAND --help``."""
    proc = subprocess.run([exe, command, "--help"], capture_output=True, text=True)
    if proc.returncode != 0:
        return
    flags = {f[2:].replace("-", "_") for f in re.findall(r"--[a-z][a-z0-9-]*", proc.stdout)}
    for name in options:
        if name not in flags:
            close = difflib.get_close_matches(name, sorted(flags), n=3)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise TypeError(f"shardify({command!r}) got an unexpected keyword argument "
                            f"{name!r}{hint} (the keywords are `{os.path.basename(exe)} "
                            f"{command} --help`'s flags, '-' as '_')")


def shardify(command, *args, binary=None, **options):
    """Runs ``shardify COMMAND ARGS... --flags --json`` and returns its JSON result as a dict.

    shardify("audio", manifest="corpus/manifest.jsonl", out="data", tokenizer="char",
    overwrite=True) -> {"records": ..., "rejected": ..., "shards": ..., "seconds": ...}.
    For "audio" and "text" progress is turned off (quiet). "info" and "verify" take the dataset
    directory as an argument. A failure raises ShardifyError (CorruptionError for corrupt data,
    shardify's exit code 1) with shardify's own message.
    """
    if not isinstance(command, str):
        raise TypeError(f"command: expected str, got {type(command).__name__}")
    exe = binary or find_shardify()
    argv = [exe, command, *[os.fspath(a) for a in args], *_argv(options), "--json"]
    if command in ("audio", "text", "verify") and "quiet" not in options:
        argv.append("--quiet")
    proc = subprocess.run(argv, capture_output=True, text=True)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode == 2:  # a bad command line: a misspelled keyword is named as Python's
        _check_keywords(exe, command, options)
    if proc.returncode != 0:
        message = proc.stderr.strip() or proc.stdout.strip()
        if command == "verify" and lines:
            message += "\n" + lines[-1]
        error = CorruptionError if proc.returncode == 1 else ShardifyError
        raise error(f"{' '.join(argv)}: exit {proc.returncode}: {message}")
    if not lines:
        raise ShardifyError(f"{' '.join(argv)}: no JSON on stdout: {proc.stdout[-500:]!r}")
    return json.loads(lines[-1])


def _hf_files(source):
    """The files `shardify audio --from hf` reads for from_hf's first argument."""
    if hasattr(source, "cache_files") and hasattr(source, "_indices"):  # a datasets.Dataset
        if source._indices is not None:
            raise ValueError("from_hf: the Dataset is a selection (select, shuffle, filter, "
                             "train_test_split) of its files' rows; HINT: ds.flatten_indices() "
                             "first, or ds.to_parquet(PATH) and pass the path")
        files = [c["filename"] for c in source.cache_files]
        if not files:
            raise ValueError("from_hf: the Dataset lives in memory, with no files to read; "
                             "HINT: ds.to_parquet(PATH) and pass the path")
        return files
    if hasattr(source, "keys") and hasattr(source, "values"):  # a datasets.DatasetDict
        raise TypeError(f"from_hf: got a DatasetDict with splits {sorted(source.keys())}; "
                        f"pass one split, e.g. ds['train']")
    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files = []
    for p in map(os.fspath, paths):
        if os.path.isdir(p):
            found = sorted(os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs
                           if f.endswith(".parquet"))
            if not found:
                raise ValueError(f"from_hf: {p}: a directory without .parquet files")
            files.extend(found)
        else:
            files.append(p)
    if not files:
        raise ValueError("from_hf: no parquet files given")
    return files


def from_hf(dataset_or_parquet_paths, audio="audio", text="text", id="id", *, out, binary=None,
            speaker=None, language=None, **options):
    """Shardifies a HuggingFace dataset: ``shardify audio --from hf`` (docs/shardify-inputs.md).

    dataset_or_parquet_paths: a parquet file, a list of them, a directory (its .parquet files,
    sorted by path), or a datasets.Dataset backed by its cache files (load_dataset's). audio,
    text, id: the columns of the audio ({bytes, path}, as datasets' Audio feature stores it),
    the transcript and the record key (a file without the id column is keyed by the audio's
    path); speaker, language: the columns stored as the speaker and language metadata columns
    (keep_field=["gender", "age:int"] keeps other columns too). The rows are read by this Python's pyarrow and their encoded bytes decoded by sluice
    (libsndfile + soxr), so the records do not depend on the datasets or torchcodec version.
    Other keywords are shardify audio's flags, as for shardify(): out="data", threads=4,
    tokenizer="char", resume=True... Returns shardify's JSON summary.
    """
    files = _hf_files(dataset_or_parquet_paths)
    if speaker is not None:
        options["hf_speaker"] = speaker
    if language is not None:
        options["hf_language"] = language
    return shardify("audio", *files, binary=binary, out=out, python=sys.executable,
                    hf_audio=audio, hf_text=text, hf_id=id, **{"from": "hf"}, **options)


# The package binds sluice.shardify to the function above, over this module's name; as its
# attribute, from_hf is sluice.shardify.from_hf too.
shardify.from_hf = from_hf
