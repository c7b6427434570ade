#!/usr/bin/env bash
# sluice's two entry points (README): ./run.sh demo | ./run.sh test [--sanitize]
# Each installs what it needs from Debian's packages (as root), builds into
# build/ (build-asan/ for --sanitize) and runs.
set -euo pipefail
cd "$(dirname "$0")"

DEBIAN_PACKAGES=(
  build-essential meson ninja-build pkg-config python3
  libsndfile1-dev libsoxr-dev libfftw3-dev libtbb-dev libzstd-dev libxxhash-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libsentencepiece-dev
  libboost-context-dev
  libopenmpi-dev openmpi-bin espeak-ng sox
  # the Python package (python/, docs/python.md) and its tests; ccache lets pip's build of the
  # wheel reuse build/'s objects instead of compiling the project twice
  python3-dev python3-venv python3-mesonpy pybind11-dev libdlpack-dev
  python3-numpy python3-pytest python3-torch ccache
  # remote datasets (storage/, docs/remote.md): libcurl for HTTP(S)/S3, nginx for tests/storage
  libcurl4-openssl-dev nginx-light
)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

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

# The S3 server tests/storage starts (moto's server mode, docs/remote.md), pinned, in a venv of
# its own under build/ (the tests look for build/venv-tools/bin/moto_server). Without PyPI the
# S3 cases skip and say why; nothing else needs it.
MOTO_PIP=("moto[server]==5.2.1" "boto3==1.43.11" "botocore==1.43.11" "flask==3.1.3"
  "werkzeug==3.1.8" "flask-cors==6.0.2")
tools_venv() {
  local venv=build/venv-tools
  [ -x "$venv/bin/moto_server" ] && return 0
  log "pip install ${MOTO_PIP[*]} into $venv (the S3 server of tests/storage)"
  { /usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install -q "${MOTO_PIP[@]}"; } ||
    echo "run.sh: could not install moto into $venv: the S3 tests will skip" >&2
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
  local sanitize=0
  for a in "$@"; do
    case "$a" in
      --sanitize) sanitize=1 ;;
      *) echo "run.sh test: unknown option $a" >&2; exit 2 ;;
    esac
  done
  install_deps
  if [ $sanitize -eq 1 ]; then
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
USAGE
}

case "${1:-}" in
  demo) shift; cmd_demo "$@" ;;
  test) shift; cmd_test "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
