#!/usr/bin/env bash
# Checks an installed include tree (PREFIX/include/sluice) for what a training binary needs of it:
#  1. the installed headers are the ones LIST names (its gpu/ lines only when HAVE_GPU is 1):
#     the public set changes on purpose, never because a public header grew an include;
#  2. every installed header includes only installed headers;
#  3. every installed header compiles on its own against the installed tree alone, and reaches
#     no <nlohmann/json.hpp> (json_fwd.hpp declares what a declaration needs; the full header
#     doubled what each file including the loader compiled).
#
#   check_installed.sh INCLUDE_DIR LIST HAVE_GPU CXX [CXX ARGS...]
set -euo pipefail
inc=$1 list=$2 have_gpu=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -v -e '^#' -e '^$' "$list" | { if [[ $have_gpu == 1 ]]; then cat; else grep -v '^gpu/'; fi; } |
  sort > "$tmp/expected"
(cd "$inc" && find . -name '*.h' | sed 's|^\./||' | sort) > "$tmp/installed"
if ! diff -u "$tmp/expected" "$tmp/installed" > "$tmp/diff"; then
  echo "the installed headers under $inc are not the public set of ${list##*/}" \
    "(- listed but not installed, + installed but not listed):"
  sed -n '3,$p' "$tmp/diff" | grep '^[-+]'
  echo "HINT: a header that became public on purpose goes into ${list##*/} and docs/loader.md;" \
    "otherwise include its options-only part from the public header instead"
  exit 1
fi

status=0
while IFS= read -r header; do
  while IFS= read -r included; do
    if [[ ! -f $inc/$included ]]; then
      echo "$header includes \"$included\", which is not installed"
      status=1
    fi
  done < <(sed -n 's/^#include "\(.*\)".*$/\1/p' "$inc/$header")
done < "$tmp/installed"
[[ $status == 0 ]] || exit 1

cd "$tmp"  # nothing of the source tree is on the include path
while IFS= read -r header; do
  printf '#include "%s"\n' "$header" > one.cc
  if ! "$@" -std=c++20 -fsyntax-only -I"$inc" one.cc 2> errors; then
    echo "$header does not compile on its own against the installed tree:"
    head -n 20 errors
    status=1
    continue
  fi
  "$@" -std=c++20 -M -I"$inc" one.cc > deps
  if grep -q 'nlohmann/json\.hpp' deps; then
    echo "$header reaches <nlohmann/json.hpp> through:"
    # g++ -H prints one line per include, dots for its depth: walk back from json.hpp to the
    # top, one include per depth.
    "$@" -std=c++20 -E -H -I"$inc" one.cc 2>&1 >/dev/null | awk -v inc="$inc/" '
      /^\.+ / { d[++n] = length($1); p[n] = $2; if (!k && $2 ~ /nlohmann\/json\.hpp$/) k = n }
      END { depth = d[k] + 1; for (i = k; i >= 1; i--) if (d[i] < depth) { c[++m] = p[i]; depth = d[i] }
            for (i = m; i >= 1; i--) { sub(inc, "", c[i]); print "  " c[i] } }'
    echo "HINT: include <nlohmann/json_fwd.hpp> where a declaration is all the header needs"
    status=1
  fi
done < "$tmp/installed"
exit $status
