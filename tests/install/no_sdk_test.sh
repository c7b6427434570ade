#!/usr/bin/env bash
# `pip install .` configures with -Dsdk=false: the wheel holds the Python package and the tools,
# and no part of the C++ SDK. Configures the source tree so (no compile: the options decide what
# is installed) and fails when anything would be installed under include/, a static library, a
# pkg-config file or a CMake package.
#
#   no_sdk_test.sh MESON SOURCE_DIR
set -euo pipefail
meson=$1 source=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$meson" setup "$tmp/build" "$source" -Dsdk=false -Dtests=false > "$tmp/setup.log" 2>&1; then
  echo "meson setup -Dsdk=false failed:"
  tail -n 20 "$tmp/setup.log"
  exit 1
fi
"$meson" introspect "$tmp/build" --installed |
  python3 -c 'import json, sys; print("\n".join(sorted(json.load(sys.stdin).values())))' \
    > "$tmp/installed"
if grep -E '/include/|\.a$|\.pc$|/cmake/' "$tmp/installed" > "$tmp/sdk"; then
  echo "-Dsdk=false still installs part of the SDK:"
  sed 's/^/  /' "$tmp/sdk"
  echo "HINT: guard the install (install_headers, install: of a library) with get_option('sdk')"
  exit 1
fi
grep -q '/bin/shardify$' "$tmp/installed" ||
  { echo "-Dsdk=false installs no shardify: the check above looked at nothing"; exit 1; }
