#!/usr/bin/env python3
"""The GPU bundle's manifest.json (tools/gpu-bundle): what was built from what, each file's size
and SHA-256, the CUDA architectures and -lineinfo of the build's nvcc commands, and the newest
GLIBC/GLIBCXX/CXXABI symbol versions the programs and packed libraries ask for, which tools/gpu-session compares with the
GPU machine's before running anything.

  gpu_bundle_manifest.py STAGE BUILD CLIPS
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import time


def sha256_of(f):
    h = hashlib.sha256()
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
    return h.hexdigest()


def output(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def main():
    stage, build, clips = sys.argv[1:4]
    files, newest = {}, {}
    for root, _, names in os.walk(stage):
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, stage)
            with open(path, "rb") as f:
                files[rel] = {"bytes": os.path.getsize(path),
                              "sha256": sha256_of(f)}
            if rel.split("/")[0] not in ("bin", "tests", "lib"):
                continue
            # objdump -p's "Version References": the versions each needed library must have.
            for m in re.finditer(r"\b(GLIBC|GLIBCXX|CXXABI)_([0-9.]+)\b",
                                 output("objdump", "-p", path)):
                v = tuple(int(x) for x in m.group(2).split("."))
                if v > newest.get(m.group(1), ()):
                    newest[m.group(1)] = v
    # The machine code nvcc was asked for (cuobjdump is not part of every toolkit install):
    # every gpu/ .cu command of the build must name sm_90 (H100, H200).
    with open(os.path.join(build, "compile_commands.json")) as f:
        cu = [c["command"] for c in json.load(f) if c["file"].endswith(".cu")]
    archs = sorted(set(a for c in cu for a in re.findall(r"code=\[?(sm_\d+)", c)))
    without_sm90 = [c for c in cu if "sm_90" not in c]
    lineinfo = bool(cu) and all(" -lineinfo" in c for c in cu)
    manifest = {
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": output("git", "rev-parse", "HEAD"),
        "dirty": bool(output("git", "status", "--porcelain", "--untracked-files=no")),
        "host": {"glibc": os.confstr("CS_GNU_LIBC_VERSION"),
                 "gcc": output("gcc", "-dumpfullversion"),
                 "nvcc": (output("nvcc", "--version").splitlines() or [""])[-1]},
        "cuda_archs": archs,
        "cuda_lineinfo": lineinfo,
        "clips": int(clips),
        "needs": {k: "%s_%s" % (k, ".".join(map(str, v))) for k, v in sorted(newest.items())},
        "not_packed": "libc, libm, libstdc++, libgcc_s, libcuda, libcublas(Lt), libnccl: "
                      "the machine's own",
        "files": files,
    }
    with open(os.path.join(stage, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print("gpu-bundle: needs %s; CUDA code for %s%s" % (
        ", ".join(manifest["needs"].values()), " ".join(archs),
        ", -lineinfo" if manifest["cuda_lineinfo"] else
        " (no -lineinfo: meson configure BUILD -Dgpu_lineinfo=true for source lines)"))
    if not cu or without_sm90:
        print("gpu-bundle: %d of %d .cu compile commands in %s/compile_commands.json lack sm_90: "
              "the H100/H200 would run JIT-compiled PTX or nothing. HINT: gpu_cuda_args in "
              "gpu/meson.build" % (len(without_sm90), len(cu), build), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
