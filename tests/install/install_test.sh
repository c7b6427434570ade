#!/usr/bin/env bash
# Installs the build's development files (headers, libraries, sluice.pc) into a temporary
# directory, checks the installed headers (check_installed.sh: the public set of LIST, gpu/ on a
# CUDA build, each one including only installed ones and compiling on its own), and builds a
# trainer's loop (docs/examples/train_loop.cc) against that tree and sluice.pc alone: no include
# path into the sources, so a public header that reaches an internal one fails here. Then runs
# the example on a dataset.
#
#   install_test.sh MESON BUILD_DIR EXAMPLE_CC DATASET_DIR LIST HAVE_GPU CXX [CXX ARGS...]
set -euo pipefail
meson=$1 build=$2 example=$3 dataset=$4 list=$5 have_gpu=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

"$meson" install -C "$build" --destdir "$root" --no-rebuild --quiet --tags devel >/dev/null
pc=$(find "$root" -name sluice.pc | head -n 1)
inc=$(find "$root" -type d -path '*/include/sluice' | head -n 1)
[[ -n $pc && -n $inc ]] || { echo "no sluice.pc or include/sluice under $root"; exit 1; }

"$here/check_installed.sh" "$inc" "$list" "$have_gpu" "$@"

export PKG_CONFIG_PATH=${pc%/*}
prefix=$(pkg-config --variable=prefix sluice)
read -r -a flags <<< "$(pkg-config --define-variable=prefix="$root$prefix" --cflags --libs sluice)"
cd "$tmp"  # nothing of the source tree is on the include path
"$@" -std=c++20 -o train_loop "$example" "${flags[@]}"
./train_loop "$dataset"
