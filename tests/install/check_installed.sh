#!/usr/bin/env bash
# Checks an installed include tree (PREFIX/include, the sluice/ folder inside it) for what a
# training binary needs of it:
#  1. the installed headers are the ones LIST names: the public set changes on purpose, never
#     because a public header grew an include;
#  2. every installed header includes sluice's headers by relative paths ("../base/status.h")
#     naming installed ones: a quoted include is looked up beside the including file first, so
#     nothing on a host project's include path (its own base/ or storage/) can stand in for it;
#  3. every installed header compiles on its own against the installed tree alone, as
#     <sluice/FOLDER/NAME.h> with -I PREFIX/include only, without a warning under the flags a
#     strict host project builds with (WARNINGS below; a header is compiled in every user's
#     translation units, under the user's flags, CXX and, when on PATH, clang++), and reaches no
#     <nlohmann/json.hpp> (json_fwd.hpp declares what a declaration needs; the full header
#     doubled what each file including the loader compiled).
#
#   check_installed.sh INCLUDE_DIR LIST CXX [CXX ARGS...]
set -euo pipefail
inc=$1 list=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
warnings=(-Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Werror)

grep -v -e '^#' -e '^$' "$list" | sort > "$tmp/expected"
if [[ ! -d $inc/sluice ]]; then
  echo "no sluice/ under $inc: the headers are installed elsewhere"
  exit 1
fi
(cd "$inc/sluice" && find . -name '*.h' | sed 's|^\./||' | sort) > "$tmp/installed"
if ! diff -u "$tmp/expected" "$tmp/installed" > "$tmp/diff"; then
  echo "the installed headers under $inc/sluice are not the public set of ${list##*/}" \
    "(- listed but not installed, + installed but not listed):"
  sed -n '3,$p' "$tmp/diff" | grep '^[-+]'
  echo "HINT: a header that became public on purpose goes into ${list##*/} and docs/loader.md;" \
    "otherwise include its options-only part from the public header instead"
  exit 1
fi

status=0
while IFS= read -r header; do
  while IFS= read -r included; do
    if [[ $included != ../*/*.h ]]; then
      echo "$header: #include \"$included\" is not relative to the header's folder:" \
        "a host project's own ${included%%/*}/ on the include path would be found first"
      echo "HINT: write #include \"../${included}\""
      status=1
    elif [[ ! -f $inc/sluice/${included#../} ]]; then
      echo "$header includes \"$included\", which is not installed"
      status=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\(.*\)".*$/\1/p' \
    "$inc/sluice/$header")
  if grep -q '^[[:space:]]*#[[:space:]]*include[[:space:]]*<sluice/' "$inc/sluice/$header"; then
    echo "$header includes <sluice/...>: that needs the user's -I to find the installed tree"
    status=1
  fi
done < "$tmp/installed"
[[ $status == 0 ]] || exit 1

compilers=("$*")
command -v clang++ > /dev/null && compilers+=(clang++)
cd "$tmp"  # nothing of the source tree is on the include path
while IFS= read -r header; do
  printf '#include <sluice/%s>\n' "$header" > one.cc
  for compiler in "${compilers[@]}"; do
    read -r -a cc <<< "$compiler"
    if ! "${cc[@]}" -std=c++20 -fsyntax-only "${warnings[@]}" -I"$inc" one.cc 2> errors; then
      echo "$header does not compile on its own against the installed tree with" \
        "${cc[0]##*/} ${warnings[*]}:"
      head -n 20 errors
      status=1
    fi
  done
  [[ $status == 0 ]] || continue
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
