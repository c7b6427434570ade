#!/usr/bin/env bash
# `pip install .` as a new user types it (docs/install.md): pip's default build isolation, which
# fetches PyPI's current meson-python, meson and pybind11 into a throwaway environment, into a
# clean venv without system site packages (build/venv-pip, made anew each run); then `import
# sluice` with PyPI's numpy and the torch-free part of python/tests against the installed package.
# The build directory is build-pip/ (meson-python's build-dir), beside build/, so ccache reuses
# build/'s objects; only the module's own files, compiled against that run's pybind11, are new.
# Exit 77: PyPI unreachable, nothing was tested.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=build/venv-pip
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
if ! "$venv/bin/pip" download -q --no-deps -d "$venv/probe" meson-python >/dev/null 2>&1; then
  echo "tools/wheel/source_install.sh: PyPI is unreachable (pip download meson-python failed)" >&2
  exit 77
fi
if command -v ccache >/dev/null; then export CC="ccache gcc" CXX="ccache g++"; fi
"$venv/bin/pip" install -q --config-settings=build-dir=build-pip . pytest

# From outside the source tree, so that only the installed package can be imported.
cd "$venv"
bin/python -c 'import numpy, sluice, sysconfig
assert sluice.__file__.startswith(sysconfig.get_path("platlib")), sluice.__file__
print("source_install: sluice from", sluice.__file__, "with numpy", numpy.__version__)'
PYTHONPATH=../../tools/wheel bin/python -m pytest -q -p no:cacheprovider -p no_torch -rs ../../python/tests
