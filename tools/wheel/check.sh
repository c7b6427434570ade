#!/usr/bin/env bash
# Installs the repaired wheel of build/wheel/wheelhouse (tools/wheel/build.sh) into a clean venv
# inside a minimal Debian 12 rootfs (debootstrap --variant=minbase + python3-venv: none of the
# libraries or -dev packages sluice builds with), entered with bubblewrap with the network off, and
# runs tools/wheel/in_root.sh there: numpy and pytest from PyPI, the torch-free pytest suite, and
# shardify / sluice-bench from the wheel's scripts.
# Usage: tools/wheel/check.sh [WHEEL] (./run.sh wheel --check; ./run.sh test runs it).
# The rootfs is kept in build/wheel-rootfs (debootstrap's .debs in apt's cache, so a fresh clone
# builds it without downloading them again). Exit 77: PyPI unreachable, nothing was tested.
set -euo pipefail
cd "$(dirname "$0")/../.."

out=build/wheel rootfs=build/wheel-rootfs
# WHEEL: another wheel than the repaired one (the unrepaired one of build/wheel/dist fails).
whl=${1:-$(ls "$out"/wheelhouse/sluice-*manylinux*.whl 2>/dev/null || true)}
[ -n "$whl" ] || { echo "tools/wheel/check.sh: no wheel in $out/wheelhouse: ./run.sh wheel" >&2; exit 2; }

if [ ! -x "$rootfs/usr/bin/python3" ] || [ ! -f "$rootfs/.complete" ]; then
  rm -rf "$rootfs.tmp"
  debootstrap --variant=minbase --include=python3,python3-venv \
    --cache-dir=/var/cache/apt/archives bookworm "$rootfs.tmp" >"$out/debootstrap.log" 2>&1 || {
    tail -n 20 "$out/debootstrap.log" >&2
    echo "tools/wheel/check.sh: debootstrap failed (log: $out/debootstrap.log)" >&2
    exit 1
  }
  rm -rf "$rootfs" && mv "$rootfs.tmp" "$rootfs" && touch "$rootfs/.complete"
fi

# numpy and pytest for the rootfs's Python (the same 3.11 as the build's), from PyPI, or offline
# the copies an earlier run downloaded.
stage=$out/stage
rm -rf "$stage" && mkdir -p "$stage/wheel" "$stage/python/tests" "$stage/docs" "$stage/tools" "$stage/deps"
mkdir -p "$out/deps"
/usr/bin/python3 -m pip download -q --only-binary=:all: --find-links "$out/deps" -d "$out/deps" numpy pytest || {
  echo "tools/wheel/check.sh: could not download numpy and pytest from PyPI" >&2
  exit 77
}
cp "$whl" "$stage/wheel/"
cp python/tests/*.py "$stage/python/tests/"
cp docs/python.md "$stage/docs/"  # test_docs_loop runs its examples
cp tools/wheel/no_torch.py tools/wheel/in_root.sh "$stage/tools/"

bwrap --bind "$rootfs" / --ro-bind "$stage" /in --ro-bind "$out/deps" /in/deps \
  --proc /proc --dev /dev --tmpfs /tmp --unshare-all --die-with-parent --clearenv \
  --setenv PATH /usr/sbin:/usr/bin:/sbin:/bin --setenv HOME /tmp --setenv LANG C.UTF-8 \
  --setenv PIP_DISABLE_PIP_VERSION_CHECK 1 \
  /bin/sh /in/tools/in_root.sh
