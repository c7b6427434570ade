#!/usr/bin/env bash
# -Dsdk_only=true, the one-line SDK build of docs/loader.md ("Linking"): configures the source
# tree so (no compile: the options decide what is built and installed) and fails unless
#  - the build holds the SDK's static libraries alone: no test, tool, trainer, comm/, gpu/ or
#    Python target (whatever CUDA, MPI or Python this machine has);
#  - `meson install` would write exactly the SDK: the headers of LIST under include/sluice/,
#    the static libraries, LIBDIR/pkgconfig/sluice.pc and LIBDIR/cmake/sluice/'s two files;
#    nothing under bin/, no Python module (in a Debian dist-packages or anywhere);
#  - an option that asks for more than the SDK beside it is refused, not ignored.
#
#   sdk_only_test.sh MESON SOURCE_DIR LIST
set -euo pipefail
meson=$1 source=$2 list=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$meson" setup "$tmp/build" "$source" -Dsdk_only=true --prefix=/opt/sluice \
    > "$tmp/setup.log" 2>&1; then
  echo "meson setup -Dsdk_only=true failed:"
  tail -n 20 "$tmp/setup.log"
  exit 1
fi
status=0
libs=(base shards storage features loader)
"$meson" introspect "$tmp/build" --targets |
  python3 -c 'import json, sys; print("\n".join(sorted(t["name"] for t in json.load(sys.stdin))))' \
    > "$tmp/targets"
printf 'sluice_%s\n' "${libs[@]}" | sort > "$tmp/expected_targets"
if ! diff -u "$tmp/expected_targets" "$tmp/targets" > "$tmp/diff"; then
  echo "-Dsdk_only=true builds other targets than the SDK's libraries" \
    "(- expected but missing, + built beyond the SDK):"
  sed -n '3,$p' "$tmp/diff" | grep '^[-+]'
  echo "HINT: declare it in a folder that meson.build enters only when not sdk_only"
  status=1
fi

libdir=$("$meson" introspect "$tmp/build" --buildoptions |
  python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
{
  grep -v -e '^#' -e '^$' "$list" | sed 's|^|/opt/sluice/include/sluice/|'
  printf "/opt/sluice/$libdir/libsluice_%s.a\n" "${libs[@]}"
  echo "/opt/sluice/$libdir/pkgconfig/sluice.pc"
  echo "/opt/sluice/$libdir/cmake/sluice/sluiceConfig.cmake"
  echo "/opt/sluice/$libdir/cmake/sluice/sluiceConfigVersion.cmake"
} | sort > "$tmp/expected"
"$meson" introspect "$tmp/build" --installed |
  python3 -c 'import json, sys; print("\n".join(sorted(json.load(sys.stdin).values())))' \
    > "$tmp/installed"
if ! diff -u "$tmp/expected" "$tmp/installed" > "$tmp/diff"; then
  echo "meson install of -Dsdk_only=true installs other files than the SDK" \
    "(- expected but not installed, + installed beyond the SDK):"
  sed -n '3,$p' "$tmp/diff" | grep '^[-+]'
  echo "HINT: the SDK is the loader's public headers (${list##*/}), its static libraries," \
    "sluice.pc and the CMake package (meson.build, cmake/meson.build)"
  status=1
fi

for option in -Dsdk=false -Dcuda=enabled -Dmpi=enabled -Dpython=enabled -Dfuzz=true; do
  if "$meson" setup "$tmp/refused" "$source" -Dsdk_only=true "$option" > "$tmp/refused.log" 2>&1
  then
    echo "meson setup -Dsdk_only=true $option was accepted: the option would be ignored"
    status=1
  fi
  rm -rf "$tmp/refused"
done
exit $status
