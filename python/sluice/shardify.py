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
