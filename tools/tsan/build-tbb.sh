#!/usr/bin/env bash
# tools/tsan/build-tbb.sh PREFIX: Debian's own oneTBB source package (the version libtbb-dev
# installed, Debian's patches applied) built with -fsanitize=thread and installed into PREFIX,
# with PREFIX/lib/pkgconfig/tbb.pc for `meson setup` (docs/testing.md, "ThreadSanitizer").
#
# Why: Debian's libtbb12 is not instrumented, so ThreadSanitizer sees neither its atomics nor its
# fences and reports every hand-off through a TBB queue or task as a race (the stacks end in
# tbb::detail::r1 or in our stage functors). With TBB instrumented those reports go away and what
# is left is ours. The source comes through apt with a private sources list (deb-src lines for
# Debian's mirrors), so the machine's apt configuration is left alone. About 40 s on 2 cores.
set -euo pipefail
prefix=$(realpath -m "${1:?usage: tools/tsan/build-tbb.sh PREFIX}")
if [ -f "$prefix/lib/pkgconfig/tbb.pc" ] && [ -f "$prefix/.sluice-tsan-tbb" ]; then
  exit 0  # built before
fi
version=$(dpkg-query -W -f='${Version}' libtbb-dev)
source_pkg=$(dpkg-query -W -f='${source:Package}' libtbb-dev)
work="$prefix.work"
rm -rf "$work" "$prefix"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
. /etc/os-release
cat >"$work/sources.list" <<LIST
deb-src http://deb.debian.org/debian $VERSION_CODENAME main
deb-src http://deb.debian.org/debian $VERSION_CODENAME-updates main
deb-src http://deb.debian.org/debian-security $VERSION_CODENAME-security main
LIST
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
          -o APT::Sandbox::User=root)
echo "build-tbb.sh: fetching $source_pkg $version (deb-src, private sources list)" >&2
apt-get "${apt_opts[@]}" -qq update
(cd "$work" && apt-get "${apt_opts[@]}" -qq source "$source_pkg=$version" >/dev/null)
src=$(find "$work" -maxdepth 1 -mindepth 1 -type d -name "$source_pkg-*" | head -n1)
echo "build-tbb.sh: building $src with -fsanitize=thread into $prefix" >&2
# TBB_SANITIZE is oneTBB's own switch (cmake/sanitize.cmake): -fsanitize=thread on every object
# and the link. No tests, no tbbmalloc (sluice does not link it), no hwloc binding library.
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTBB_SANITIZE=thread -DTBB_TEST=OFF -DTBBMALLOC_BUILD=OFF -DTBB_STRICT=OFF \
  -DTBB_DISABLE_HWLOC_AUTOMATIC_SEARCH=ON -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_INSTALL_LIBDIR=lib >/dev/null
ninja -C "$work/build" >/dev/null
ninja -C "$work/build" install >/dev/null
echo "$source_pkg $version -fsanitize=thread" >"$prefix/.sluice-tsan-tbb"
rm -rf "$work"
