#!/usr/bin/env bash
# The libFuzzer targets (scripts/cmake/fuzz.cmake), built with clang in their own tree, build-fuzz/
# (the main g++ build is untouched). Usage:
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]  fuzz one target for SECONDS
#   scripts/fuzz.sh all SECONDS                          every target in turn (scripts/test.sh: 10 s each)
#   scripts/fuzz.sh build                                only build the targets
# Targets: program (parse + validate + infer-shape, every format), pir (PIR JSON), npy, params
# (.pdiparams), checkpoint (checkpoint.json). Each run reads the seeds scripts/fuzz_seeds.py makes from
# configs/ and testdata/, the regression inputs in testdata/fuzz/TARGET/ (inputs that once crashed a
# target: every run replays them first), and the corpus it grows in build-fuzz/corpus/TARGET/. A crash
# stops the run with a non-zero exit and saves its input in build-fuzz/crashes/TARGET/: fix it, then
# add the input to testdata/fuzz/TARGET/. PADDLEC_FUZZ_DIR overrides build-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=(program pir npy params checkpoint)
DIR="${PADDLEC_FUZZ_DIR:-build-fuzz}"

build() {
  if [ ! -f "$DIR/build.ninja" ]; then
    local launcher=()
    if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
    CC=clang CXX=clang++ cmake -S . -B "$DIR" -G Ninja -DPADDLEC_FUZZ=ON -DCMAKE_BUILD_TYPE=Fuzz \
      -DPADDLEC_WITH_CUDA=OFF -DPADDLEC_BUILD_TESTS=OFF -DPADDLEC_BUILD_PYTHON=OFF "${launcher[@]}" >/dev/null
  fi
  cmake --build "$DIR" --target fuzzers
}

run_one() {
  local target="$1" seconds="$2"
  shift 2
  local exe="$DIR/fuzz_$target"
  [ -x "$exe" ] || { echo "fuzz: unknown target '$target' (targets: ${TARGETS[*]})" >&2; exit 2; }
  mkdir -p "$DIR/corpus/$target" "$DIR/crashes/$target"
  local inputs=("$DIR/corpus/$target" "$DIR/seeds/$target")
  [ -d "testdata/fuzz/$target" ] && inputs+=("testdata/fuzz/$target")
  echo "fuzz: $target for ${seconds}s"
  # -rss_limit_mb: the readers cap what they allocate far below this; -timeout: one input, wall-clock
  # seconds (generous: a loaded machine stretches them; a real hang still trips it).
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
    "$exe" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2560 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$DIR/crashes/$target/" "$@" "${inputs[@]}"
}

case "${1:-}" in
  build) build ;;
  all | "${TARGETS[0]}" | "${TARGETS[1]}" | "${TARGETS[2]}" | "${TARGETS[3]}" | "${TARGETS[4]}")
    [ $# -ge 2 ] || { echo "usage: scripts/fuzz.sh TARGET|all SECONDS [libFuzzer flags...]" >&2; exit 2; }
    build
    /usr/bin/python3 scripts/fuzz_seeds.py "$DIR/seeds" >/dev/null
    if [ "$1" = all ]; then
      seconds="$2"
      shift 2
      for t in "${TARGETS[@]}"; do run_one "$t" "$seconds" "$@"; done
    else
      run_one "$@"
    fi
    ;;
  *)
    echo "usage: scripts/fuzz.sh TARGET|all SECONDS [libFuzzer flags...] | build   (targets: ${TARGETS[*]})" >&2
    exit 2
    ;;
esac
