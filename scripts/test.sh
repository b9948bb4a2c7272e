#!/usr/bin/env bash
# Runs every test: the ctest suite (unit, CLI transcripts), then the Python package's pytest suite
# (with the interop suite against PaddlePaddle, whose wheel it installs into .venv), then every libFuzzer
# target for a few seconds (scripts/fuzz.sh: each replays its regression inputs in testdata/fuzz/ and
# seeds first; PADDLEC_FUZZ_SECONDS per target, default 10, 0 skips them and their build).
# It ends with a line per stage; failed ctest tests run once more just before (a pass there marks a
# flaky test, and the run still fails). Assumes scripts/setup.sh has built build/ and installed the
# package into .venv. Arguments go to ctest.
#   scripts/test.sh --sanitize [ctest args]: instead, ctest and pytest on an ASan+UBSan build in
#   build-asan/ (scripts/sanitize.sh; a full rebuild, so not part of the CI run).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  shift
  exec scripts/sanitize.sh "$@"
fi
BUILD_DIR="${PADDLEC_BUILD_DIR:-build}"
status=0
FUZZ_SECONDS="${PADDLEC_FUZZ_SECONDS:-10}"
# The fuzz tree (a clang build of its own) compiles in the background, at low priority, while ctest and
# pytest run: they are mostly serial and leave a core idle.
fuzz_log="$(mktemp)"
fuzz_build_pid=""
# An interrupted run takes the background build (its own process group) with it.
trap '[ -n "$fuzz_build_pid" ] && kill -- -"$fuzz_build_pid" 2>/dev/null; rm -f "$fuzz_log"' EXIT
fuzz_start=$SECONDS
if [ "$FUZZ_SECONDS" != 0 ]; then
  setsid nice -n 10 scripts/fuzz.sh build >"$fuzz_log" 2>&1 &
  fuzz_build_pid=$!
fi
# Each stage's outcome, repeated at the end: CI keeps only the tail of what a run prints.
summary=()
ctest_status=0
ctest --test-dir "$BUILD_DIR" --output-on-failure -LE bench "$@" || ctest_status=$?
if [ "$ctest_status" = 0 ]; then
  summary+=("ctest: passed")
else
  status=$ctest_status
  failed_log="$BUILD_DIR/Testing/Temporary/LastTestsFailed.log"
  summary+=("ctest: FAILED (exit $ctest_status): $(cut -d: -f2 "$failed_log" 2>/dev/null | paste -sd' ')")
fi
# The interop suite (tools/python/tests/interop) compares against the real PaddlePaddle: its CPU wheel
# is a test-only dependency, installed here into .venv (scripts/setup.sh does not need it).
PADDLE_VERSION=3.3.1
if ! .venv/bin/python -c "import importlib.metadata as m; assert m.version('paddlepaddle') == '$PADDLE_VERSION'" \
    2>/dev/null; then
  echo "test: installing paddlepaddle==$PADDLE_VERSION into .venv (interop tests)"
  if ! .venv/bin/pip install -q --disable-pip-version-check "paddlepaddle==$PADDLE_VERSION"; then
    status=1
    summary+=("pip: FAILED to install paddlepaddle==$PADDLE_VERSION (the interop tests need it)")
  fi
fi
pytest_status=0
PADDLEC_REQUIRE_PADDLE=1 PADDLEC_BUILD_DIR="$(cd "$BUILD_DIR" && pwd)" .venv/bin/python -m pytest tools/python/tests -q \
  || pytest_status=$?
if [ "$pytest_status" = 0 ]; then
  summary+=("pytest: passed")
else
  status=$pytest_status
  summary+=("pytest: FAILED (exit $pytest_status)")
fi
if [ "$FUZZ_SECONDS" != 0 ]; then
  build_status=0
  wait "$fuzz_build_pid" || build_status=$?
  fuzz_build_pid=""
  if [ "$build_status" = 0 ]; then
    # libFuzzer's progress lines go to a log, shown only when a target fails.
    fuzz_status=0
    scripts/fuzz.sh all "$FUZZ_SECONDS" -seed=1 >"$fuzz_log" 2>&1 || fuzz_status=$?
    grep -E '^fuzz: |^Done [0-9]+ runs' "$fuzz_log" || true
    if [ "$fuzz_status" = 0 ]; then
      summary+=("fuzz: passed (built and run in $((SECONDS - fuzz_start)) s, the build beside the tests above)")
    else
      tail -n 60 "$fuzz_log"
      status=$fuzz_status
      summary+=("fuzz: FAILED (exit $fuzz_status): the log above names the target and the saved input")
    fi
  else
    cat "$fuzz_log"
    status=1
    summary+=("fuzz: FAILED: the targets did not build (scripts/fuzz.sh build)")
  fi
fi
if [ "$ctest_status" != 0 ]; then
  # Shown again here, so that the tail of the run names them; a second run that passes marks a flaky test.
  echo "test: the failed ctest tests, run once more:"
  ctest --test-dir "$BUILD_DIR" --output-on-failure --rerun-failed "$@" | tail -n 80 || true
fi
# The machine, for failures that only another one shows (kernels and oneDNN pick code by CPU).
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
avx512="$(grep -qw avx512f /proc/cpuinfo && echo with || echo without)"
summary+=("machine: $cpu, $(nproc) CPUs, $avx512 AVX-512, $(df -h --output=avail . | tail -1 | tr -d ' ') free on disk")
printf 'test: %s\n' "${summary[@]}"
if [ "$status" != 0 ]; then echo "test: error: some tests failed (exit $status)" >&2; fi
exit $status
