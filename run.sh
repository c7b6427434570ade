#!/usr/bin/env bash
# sluice's entry points (README):
#   ./run.sh demo | ./run.sh test [--sanitize] | ./run.sh fuzz [SECONDS]
# Each installs what it needs from Debian's packages (as root), builds into
# build/ (build-asan/ for --sanitize, build-fuzz/ for fuzz) and runs.
set -euo pipefail
cd "$(dirname "$0")"

DEBIAN_PACKAGES=(
  build-essential meson ninja-build pkg-config python3
  libsndfile1-dev libsoxr-dev libfftw3-dev libtbb-dev libzstd-dev libxxhash-dev
  # tempo perturbation (features/tempo.cc): SoundTouch's WSOLA, LGPL-2.1, linked dynamically
  libsoundtouch-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libsentencepiece-dev
  libboost-context-dev
  # tokenizer.json/tiktoken pre-tokenizer regexes (PCRE2 with JIT); tar shards and gzip
  # manifests of importers
  libpcre2-dev libarchive-dev zlib1g-dev
  # NFC for tokenizer.json normalizers (small; ICU would do it too, at twenty times the size)
  libutf8proc-dev
  libopenmpi-dev openmpi-bin espeak-ng sox
  # the Python package (python/, docs/python.md) and its tests; ccache lets pip's build of the
  # wheel reuse build/'s objects instead of compiling the project twice
  python3-dev python3-venv python3-mesonpy pybind11-dev libdlpack-dev
  python3-numpy python3-pytest python3-torch ccache
  # shardify export's cuts.jsonl.gz; sluice.load's tests compare with soundfile
  zlib1g-dev python3-soundfile
  # ./run.sh test --tsan: tools/tsan/build-tbb.sh fetches Debian's oneTBB source (dpkg-dev)
  # and builds it with CMake
  cmake dpkg-dev
  # ./run.sh fuzz (tests/fuzz): libFuzzer and its sanitizers come with clang
  clang libclang-rt-14-dev
  # the Slurm test of shardify's array-job parts (tests/tools/slurm_cluster.sh, slurm_test.cc)
  slurm-wlm munge
  # remote datasets (storage/, docs/remote.md): libcurl for HTTP(S)/S3, nginx for tests/storage
  libcurl4-openssl-dev nginx-light
  # ./run.sh wheel --check (tools/wheel/check.sh): a minimal Debian rootfs without sluice's
  # libraries, entered with bubblewrap, to show that the repaired wheel brings its own
  debootstrap bubblewrap
)

# Each step says the time and the minutes since this run.sh began, so a slow CI log shows which
# step took the time.
log() { printf '\033[1m==> [%s +%dm%02ds] %s\033[0m\n' "$(date +%T)" $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

install_deps() {
  local missing=()
  for p in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "run.sh: missing Debian packages: ${missing[*]}" >&2
    echo "run.sh: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
    exit 2
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# CMD... with the compilers behind ccache when it is installed (set at configure time).
with_ccache() {
  if command -v ccache >/dev/null; then
    CC="ccache ${CC:-gcc}" CXX="ccache ${CXX:-g++}" "$@"
  else
    "$@"
  fi
}

# The Python package: `pip install .` (meson-python, pyproject.toml) into a venv that sees
# Debian's torch and numpy, then its pytest suite against the installed package.
python_tests() {
  local wheel_dir=build-python venv=build-python/venv
  if [ ! -f "$wheel_dir/build.ninja" ]; then
    # meson-python 0.12 can only reconfigure a build directory it is given, not create it: set
    # it up here with pyproject.toml's own options.
    local args
    args=$(/usr/bin/python3 -c 'import tomllib
t = tomllib.load(open("pyproject.toml", "rb"))
print(" ".join(t["tool"]["meson-python"]["args"]["setup"]))')
    log "configuring $wheel_dir"
    # shellcheck disable=SC2086
    with_ccache meson setup "$wheel_dir" $args >/dev/null
  fi
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
  log "pip install . into $venv"
  with_ccache "$venv/bin/pip" install -q --no-build-isolation --no-deps \
    --config-settings=builddir="$wheel_dir" .
  log "running the Python test suite (python/tests)"
  "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests
}

# The S3 server tests/storage starts (moto's server mode, docs/remote.md) and the PyPI packages
# that tests compare against (real producers' writers, reference tokenizers), pinned, in a venv of
# its own under build/ (the tests look for build/venv-tools/bin/...). Without PyPI those cases
# skip and say why; nothing else needs it. Changing a pin reinstalls.
MOTO_PIP=("moto[server]==5.2.1" "boto3==1.43.11" "botocore==1.43.11" "flask==3.1.3"
  "werkzeug==3.1.8" "flask-cors==6.0.2")
# lhotse and webdataset write the files the importers are compared with
# (tests/tools/import_equality_test.py) and lhotse reads the exports; python-soxr is the resampling
# reference of sluice.load (lhotse imports urllib3 without declaring it: moto's botocore brings it);
# tokenizers and tiktoken: tests/features/bpe_equality.py compares sluice's ids with theirs;
# anthropic 0.38.0 ships a real published tokenizer.json (Claude's), the last release that does;
# datasets writes the HF parquet that `shardify audio --from hf` reads with pyarrow (pinned with
# it: the reader script runs on the venv's pyarrow). pyroomacoustics simulates the rooms whose
# impulse responses python/tests/test_reverb_reference.py convolves, and scipy's fftconvolve is
# the reference convolution (both wheels; about 20 s more to install).
REFERENCE_PIP=("lhotse==1.33.0" "webdataset==1.0.2" "soxr==1.1.0" "tokenizers==0.23.3"
  "tiktoken==0.14.0" "anthropic==0.38.0" "datasets==5.2.0" "pyarrow==25.0.1"
  "pyroomacoustics==0.10.1" "scipy==1.17.1")
# The venv sees Debian's packages: lhotse requires torch at import, and Debian's python3-torch
# satisfies it, where PyPI's would bring gigabytes of CUDA wheels into every CI run.
tools_venv() {
  local venv=build/venv-tools want="system-site ${MOTO_PIP[*]} ${REFERENCE_PIP[*]}"
  [ -x "$venv/bin/moto_server" ] && [ "$(cat "$venv/.pins" 2>/dev/null)" = "$want" ] && return 0
  log "pip install $want into $venv (the S3 server of tests/storage, the tests' references)"
  rm -rf "$venv"
  if /usr/bin/python3 -m venv --system-site-packages "$venv" &&
    "$venv/bin/pip" install -q "${MOTO_PIP[@]}" "${REFERENCE_PIP[@]}"; then
    echo "$want" >"$venv/.pins"
  else
    echo "run.sh: could not install into $venv: the S3 and reference cases will skip" >&2
  fi
}

# The benchmark venv (docs/benchmarks.md, "The benchmark venv"): PyPI's torch and torchaudio as
# users install them, so that tools/bench/*.py compare sluice with what users run rather than
# Debian's torch 1.13. torchaudio 2.11.0 is PyPI's newest and goes with torch 2.11.0 only: pip
# installs it beside torch 2.15.0 (it declares no torch requirement), but then `import torchaudio`
# stops ("compiled with different CUDA versions": 13.2 against 13.0). Hence torch 2.11.0.
# PyPI's Linux torch is the CUDA build: `import torch` needs the nvidia-* wheels (about 2.2 GB)
# even on a CPU, so they come with it. No --system-site-packages: Debian's torch would shadow.
BENCH_PIP=("torch==2.11.0" "torchaudio==2.11.0" "numpy==2.4.6" "soundfile==0.14.0")
bench_venv() {
  local venv=build/venv-bench
  install_deps
  if [ ! -f build/build.ninja ]; then
    log "configuring build"
    with_ccache meson setup build >/dev/null
  fi
  # sluice itself: the extension module that build/ compiles with Debian's python3 (the same
  # CPython 3.11 ABI as the venv's), imported through a .pth file, and the tools the scripts run.
  local targets
  targets=$(ninja -C build -t targets all |
    grep -E '^(python/sluice/[^/ ]*|tools/(sluice-bench|shardify)):' | cut -d: -f1)
  log "building sluice-bench, shardify and the Python package in build/"
  # shellcheck disable=SC2086
  ninja -C build $targets
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  log "pip install ${BENCH_PIP[*]} into $venv"
  "$venv/bin/pip" install -q "${BENCH_PIP[@]}"
  local site
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$PWD/build/python" >"$site/sluice-build.pth"
  "$venv/bin/python" -c 'import sluice, torch, torchaudio, numpy, soundfile
print("bench venv: torch", torch.__version__, "torchaudio", torchaudio.__version__, "numpy",
      numpy.__version__, "soundfile", soundfile.__version__, "sluice from", sluice.__file__)'
}

# A tools/wheel script that exits 77 when PyPI is unreachable: then the step is skipped, loudly.
pypi_step() {
  local what=$1 rc=0; shift
  "$@" || rc=$?
  if [ $rc -eq 77 ]; then
    printf '\033[1;31m==> SKIPPED: %s: PyPI is unreachable\033[0m\n' "$what" >&2
    return 0
  fi
  return $rc
}

# `pip install .` with default build isolation into a clean venv, and the wheel: built, repaired
# with auditwheel and run in a rootfs without Debian's libraries (docs/install.md, tools/wheel/).
source_install_test() {
  log "pip install . with build isolation into a clean venv (tools/wheel/source_install.sh)"
  pypi_step "pip install . in a clean venv" tools/wheel/source_install.sh
}
wheel_build() {
  log "building and repairing the wheel (tools/wheel/build.sh -> build/wheel/wheelhouse)"
  pypi_step "the binary wheel" tools/wheel/build.sh
}
wheel_check() {
  log "the wheel in a Debian rootfs without sluice's libraries (tools/wheel/check.sh)"
  pypi_step "the wheel's test" tools/wheel/check.sh
}
wheel_test() {
  log "building the wheel and testing it in a Debian rootfs without sluice's libraries (tools/wheel)"
  pypi_step "the binary wheel and its test" bash -c 'tools/wheel/build.sh && tools/wheel/check.sh'
}
cmd_wheel() {
  case "${1:-}" in
    '') install_deps; wheel_build ;;
    --check) install_deps; wheel_check ;;
    *) echo "run.sh wheel: unknown option $1" >&2; exit 2 ;;
  esac
}

# build DIR [meson options...]
build() {
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    log "configuring $dir"
    with_ccache meson setup "$dir" "$@" >/dev/null
  fi
  log "building $dir"
  ninja -C "$dir"
}

cmd_test() {
  local sanitize=0 tsan=0
  for a in "$@"; do
    case "$a" in
      --sanitize) sanitize=1 ;;
      --tsan) tsan=1 ;;
      *) echo "run.sh test: unknown option $a" >&2; exit 2 ;;
    esac
  done
  install_deps
  if [ $tsan -eq 1 ]; then
    # ThreadSanitizer on the threaded suites (docs/testing.md, "ThreadSanitizer"), against
    # Debian's oneTBB source built with -fsanitize=thread under build-tsan/tbb.
    log "building oneTBB with -fsanitize=thread (build-tsan/tbb)"
    mkdir -p build-tsan
    tools/tsan/build-tbb.sh build-tsan/tbb
    if [ ! -f build-tsan/build.ninja ]; then
      log "configuring build-tsan"
      PKG_CONFIG_PATH="$PWD/build-tsan/tbb/lib/pkgconfig" with_ccache meson setup build-tsan \
        -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debugoptimized -Dcuda=disabled \
        -Dpython=disabled >/dev/null
    fi
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4"
    log "running the loader, shardify and feeder suites under ThreadSanitizer"
    # meson test builds only what the chosen suites need.
    meson test -C build-tsan --print-errorlogs --num-processes 2 --timeout-multiplier 4 \
      --suite loader --suite tools --suite gpu-simt
  elif [ $sanitize -eq 1 ]; then
    # AddressSanitizer + UndefinedBehaviorSanitizer; debug info, -O1 for speed.
    build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dcuda=disabled -Dpython=disabled
    tools_venv
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    log "running the test suite under ASan+UBSan"
    meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 3
  else
    build build
    tools_venv
    log "running the test suite"
    meson test -C build --print-errorlogs --num-processes 2
    python_tests
    source_install_test
    wheel_test
  fi
}

# fuzz_target DIR TARGET SECONDS: one libFuzzer target over its corpora, its output in
# DIR/fuzz-TARGET.log; non-zero on a finding (a crash, leak, timeout or sanitizer report).
fuzz_target() {
  local dir=$1 t=$2 seconds=$3
  mkdir -p "$dir/fuzz-corpus/$t"
  # The work corpus first (libFuzzer adds to it), then the seeds and the regressions found.
  local corpora=("$dir/fuzz-corpus/$t" "tests/fuzz/corpus/$t")
  [ -d "tests/fuzz/regressions/$t" ] && corpora+=("tests/fuzz/regressions/$t")
  # -close_fd_mask=2: libmpg123 and libsndfile print a line per damaged frame, which slows the
  # audio targets down; libFuzzer and the sanitizers keep their own stderr for reports.
  "$dir/tests/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=25 -print_final_stats=1 \
    -close_fd_mask=2 -artifact_prefix="$dir/fuzz-crashes/$t-" "${corpora[@]}" \
    >"$dir/fuzz-$t.log" 2>&1
}

# Every libFuzzer target of tests/fuzz for SECONDS each over its committed seed corpus
# (tests/fuzz/corpus/<target>), in a clang ASan+UBSan build of the fuzzers alone (build-fuzz/).
# Inputs the fuzzers add go to build-fuzz/fuzz-corpus/<target>, never into the committed seeds; a
# crash, leak, timeout or sanitizer report fails the run, its input under build-fuzz/fuzz-crashes/
# (docs/testing.md "Fuzzing": turn it into a regression test).
cmd_fuzz() {
  local seconds=${1:-30} dir=build-fuzz
  case "$seconds" in ''|*[!0-9]*) echo "run.sh fuzz: SECONDS must be a number" >&2; exit 2 ;; esac
  install_deps
  if [ ! -f "$dir/build.ninja" ]; then
    log "configuring $dir (clang, libFuzzer, ASan+UBSan)"
    CC=clang CXX=clang++ with_ccache meson setup "$dir" -Dfuzz=true -Dtests=false -Dcuda=disabled \
      -Dpython=disabled -Dsdk=false -Db_sanitize=address,undefined -Db_lundef=false \
      -Dbuildtype=debugoptimized >/dev/null
  fi
  log "building the fuzz targets"
  ninja -C "$dir" fuzz  # the alias of tests/fuzz/meson.build: the fuzzers and what they link
  mkdir -p "$dir/fuzz-crashes"
  # Leaks inside Debian's libraries that sluice cannot free are suppressed, each with its reason.
  export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0"
  # UBSan only prints by default: undefined behaviour must fail the run like a crash.
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  # As many targets at once as there are cores: each is one process, so on CI's 2 cores the
  # targets take half the wall time for the same 30 s of fuzzing each.
  # At most 8: each fuzzer grows to about 500 MB.
  local jobs t failed=() batch=()
  jobs=$(nproc)
  [ "$jobs" -gt 8 ] && jobs=8
  local targets=()
  for t in tests/fuzz/corpus/*/; do targets+=("$(basename "$t")"); done
  local i
  for ((i = 0; i < ${#targets[@]}; i += jobs)); do
    batch=("${targets[@]:i:jobs}")
    log "fuzzing ${batch[*]} for ${seconds} s"
    local pids=()
    for t in "${batch[@]}"; do
      fuzz_target "$dir" "$t" "$seconds" &
      pids+=($!)
    done
    local k
    for k in "${!batch[@]}"; do
      t=${batch[$k]}
      if ! wait "${pids[$k]}"; then
        tail -n 60 "$dir/fuzz-$t.log" >&2
        failed+=("$t")
      fi
      # The last status line: executions, coverage (cov: edges, ft: features), corpus size.
      printf '%s: ' "$t"
      grep -E '^#[0-9]+' "$dir/fuzz-$t.log" | tail -n 1 || echo
    done
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "run.sh fuzz: findings in: ${failed[*]} (inputs: $dir/fuzz-crashes/)" >&2
    exit 1
  fi
}

cmd_demo() {
  install_deps
  build build
  local corpus=sample/corpus dataset=sample/dataset
  if [ ! -f "$corpus/manifest.jsonl" ]; then
    log "generating a sample speech corpus with espeak-ng ($corpus)"
    tools/make-sample-corpus --out "$corpus" --count 300 --bad
  fi
  log "shardify audio (pcm16, character token ids) -> $dataset"
  build/tools/shardify audio --manifest "$corpus/manifest.jsonl" --out "$dataset" --max-duration 30 \
    --tokenizer char --overwrite
  log "rejected inputs, each with its reason ($dataset/rejects.jsonl)"
  cut -c1-200 "$dataset/rejects.jsonl"
  log "shardify info"
  build/tools/shardify info "$dataset"
  log "shardify verify"
  build/tools/shardify verify "$dataset"
  if build/tools/sluice-bench epoch --help >/dev/null 2>&1; then
    log "sluice-bench epoch: one loader epoch over the sample dataset"
    build/tools/sluice-bench epoch "$dataset" --epochs 1 --features fbank --num-mel-bins 80 --dither 0
  fi
  log "sluice-train: the tiny CTC model, 6 epochs on one CPU core (held-out CER falls from 100% to about 60%; about 35% with --epochs 20)"
  build/tools/sluice-train "$dataset" --device cpu --preset tiny --epochs 6 --log-every 50
}

usage() {
  cat <<'USAGE'
usage: ./run.sh demo              generate a sample corpus, shardify it, print a summary
       ./run.sh test [--sanitize] build and run the whole test suite (ASan+UBSan build with --sanitize)
       ./run.sh test --tsan       the loader, shardify and feeder suites under ThreadSanitizer
       ./run.sh wheel [--check]   build the manylinux wheel (build/wheel/wheelhouse); --check: test
                                  it in a Debian rootfs without sluice's libraries
       ./run.sh fuzz [SECONDS]    run every fuzz target of tests/fuzz for SECONDS (30) each (clang)
       ./run.sh bench-venv        build/venv-bench: PyPI torch + torchaudio and sluice, for tools/bench
USAGE
}

case "${1:-}" in
  demo) shift; cmd_demo "$@" ;;
  test) shift; cmd_test "$@" ;;
  fuzz) shift; cmd_fuzz "$@" ;;
  bench-venv) shift; bench_venv ;;
  wheel) shift; cmd_wheel "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
