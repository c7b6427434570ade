#!/usr/bin/env bash
# Installs the build's development files (`meson install --tags devel`: headers, libraries,
# sluice.pc, the CMake package) into a temporary directory and uses them as a training binary's
# project would, with no include path into the sources (a public header that reaches an internal
# one fails here):
#  1. check_installed.sh: the public set of LIST, each header including only installed ones by
#     relative paths and compiling on its own under -Wall -Wextra -Wconversion ... -Werror;
#  2. a host project with its own base/status.h and storage/options.h (host/) compiles against
#     the install, its -I before and after sluice's;
#  3. docs/examples/train_loop.cc built with `pkg-config --cflags --libs sluice` and with CMake
#     (docs/examples/CMakeLists.txt: find_package(sluice CONFIG), sluice::sluice), each run on
#     a dataset.
# Each step runs whatever the one before it found, so one run lists everything that is wrong.
#
#   install_test.sh MESON CMAKE BUILD_DIR EXAMPLE_DIR DATASET_DIR LIST CXX [CXX ARGS...]
set -euo pipefail
meson=$1 cmake=$2 build=$3 examples=$4 dataset=$5 list=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
status=0
fail() { echo "FAILED: $*"; status=1; }

"$meson" install -C "$build" --destdir "$root" --no-rebuild --quiet --tags devel >/dev/null
pc=$(find "$root" -name sluice.pc | head -n 1)
[[ -n $pc ]] || { echo "no sluice.pc under $root"; exit 1; }
# sluice.pc as it would read installed at the temporary prefix: only its own prefix moves
# (pkg-config's --define-variable would move every required package's too).
prefix=$(sed -n 's/^prefix=//p' "$pc")
mkdir "$tmp/pkgconfig"
sed "s|^prefix=.*|prefix=$root$prefix|" "$pc" > "$tmp/pkgconfig/sluice.pc"
export PKG_CONFIG_PATH=$tmp/pkgconfig
inc=$(pkg-config --variable=includedir sluice)

"$here/check_installed.sh" "$inc" "$list" "$@" || fail "the installed headers (above)"

read -r -a cflags <<< "$(pkg-config --cflags sluice)"
read -r -a libs <<< "$(pkg-config --libs sluice)"
cd "$tmp"  # nothing of the source tree is on the include path
for order in host-first sluice-first; do
  if [[ $order == host-first ]]; then
    flags=(-I"$here/host" "${cflags[@]}")
  else
    flags=("${cflags[@]}" -I"$here/host")
  fi
  if ! "$@" -std=c++20 -fsyntax-only "${flags[@]}" "$here/host/main.cc" 2> host.err; then
    head -n 20 host.err
    fail "a host project with its own base/ and storage/ headers ($order on the include path)"
  fi
done

if "$@" -std=c++20 -Wall -Wextra -Wconversion -Wsign-conversion -Werror \
    -o train_loop_pc "$examples/train_loop.cc" "${cflags[@]}" "${libs[@]}" 2> pc.err; then
  if ./train_loop_pc "$dataset" > pc.out; then
    echo "pkg-config build: $(tail -n 1 pc.out)"
  else
    fail "train_loop built with pkg-config"
  fi
else
  head -n 20 pc.err
  fail "train_loop.cc with pkg-config --cflags --libs sluice"
fi

# CMake (Debian's cmake package) with the same compiler (a ccache in front becomes CMake's launcher) and flags.
cxx=("$@")
launcher=()
if [[ ${cxx[0]##*/} == ccache ]]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="${cxx[0]}")
  cxx=("${cxx[@]:1}")
fi
compiler=$(command -v "${cxx[0]}")
if "$cmake" -S "$examples" -B cmake-build -DCMAKE_PREFIX_PATH="$root$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_CXX_COMPILER="$compiler" "${launcher[@]}" \
    -DCMAKE_CXX_FLAGS="${cxx[*]:1}" > cmake.log 2>&1 &&
    "$cmake" --build cmake-build >> cmake.log 2>&1; then
  found=$(sed -n 's/^sluice_DIR:PATH=//p' cmake-build/CMakeCache.txt)
  [[ $found == "$root"/* ]] ||
    fail "CMake found sluice at $found, not in the install under test ($root)"
  if ./cmake-build/train_loop "$dataset" > cmake.out; then
    echo "CMake build ($found): $(tail -n 1 cmake.out)"
  else
    fail "train_loop built with CMake"
  fi
else
  tail -n 30 cmake.log
  fail "train_loop.cc with CMake: find_package(sluice CONFIG) and sluice::sluice"
fi
exit $status
