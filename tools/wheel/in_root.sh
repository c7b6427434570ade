#!/bin/sh
# Run by tools/wheel/check.sh inside a minimal Debian rootfs (debootstrap minbase + python3), with
# the network off and /in holding the repaired wheel, numpy's and pytest's wheels from PyPI, the
# torch-free pytest suite and its plugin. Proves the wheel needs nothing of the build machine.
set -eu
fail() { echo "in_root: $*" >&2; exit 1; }

# The system lacks what the wheel bundles, and every -dev package: otherwise the test would pass
# on the build machine's libraries and prove nothing.
for lib in libsndfile libsoxr libSoundTouch libfftw3f libtbb libsentencepiece libcurl libFLAC libvorbis libopus \
    libmpg123 libmp3lame libboost_context libgomp; do
  if ldconfig -p | grep -q "${lib}[.-]"; then fail "$lib is installed in the test system"; fi
done
dev=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' '*-dev' 2>/dev/null | awk '$1 == "installed" {print $2}')
[ -z "$dev" ] || fail "-dev packages installed in the test system: $dev"

python3 -m venv /tmp/venv
/tmp/venv/bin/pip install -q --no-index --find-links /in/deps /in/wheel/sluice-*.whl numpy pytest
py=/tmp/venv/bin/python
site=$($py -c 'import sysconfig; print(sysconfig.get_path("platlib"))')

# Every library the module and the tools load is the wheel's own (sluice.libs) or the manylinux
# policy's (glibc with its libmvec, which SoundTouch's vectorised loops call; libstdc++, libgcc_s,
# zlib): zstd, xxhash and OpenSSL are in this system too
# (apt and python3 need them), so this is what shows the wheel does not borrow them.
for elf in "$site"/sluice/_sluice*.so "$site"/sluice.scripts/*; do
  ldd "$elf" | awk -v elf="$elf" '
    /not found/ { print "in_root: " elf ": " $0; bad = 1 }
    /=>/ && $3 != "not" && $3 !~ /\/sluice\.libs\// &&
      $1 !~ /^(libc|libm|libmvec|libstdc\+\+|libgcc_s|libz|libpthread|libdl|librt|libresolv)\.so/ {
      print "in_root: " elf " loads " $1 " from the system (" $3 ")"; bad = 1 }
    END { exit bad }' || fail "the wheel is not self-contained"
done
echo "in_root: the module and the tools load only sluice.libs/ and the manylinux policy's libraries"

cd /tmp
$py -c 'import numpy, sluice; print("in_root: sluice", sluice.__file__, "numpy", numpy.__version__)'
PYTHONPATH=/in/tools $py -m pytest -q -p no:cacheprovider -p no_torch -rs /in/python/tests

# The tools from the wheel's scripts on a small corpus: shardify -> sluice-bench's loader epoch.
PYTHONPATH=/in/python/tests $py -c 'from conftest import make_corpus; make_corpus("/tmp/corpus", count=24)'
bin=/tmp/venv/bin
$bin/shardify audio --manifest /tmp/corpus/manifest.jsonl --out /tmp/ds --tokenizer char --overwrite
$bin/shardify verify /tmp/ds
$bin/sluice-bench epoch /tmp/ds --epochs 1 --features fbank --num-mel-bins 80 --dither 0
$bin/sluice-features --help >/dev/null
$bin/sluice-train --help >/dev/null
echo "in_root: the wheel works without the build machine's libraries"
