#!/usr/bin/env bash
# Runs every test: the ctest suite (unit, CLI transcripts), then the Python package's pytest suite
# (with the interop suite against PaddlePaddle, whose wheel it installs into .venv), then every libFuzzer
# target for a few seconds (scripts/fuzz.sh: each replays its regression inputs in testdata/fuzz/ and
# seeds first; PADDLEC_FUZZ_SECONDS per target, default 10, 0 skips them and their build).
# Assumes scripts/setup.sh has built build/ and installed the package into .venv. Arguments go to ctest.
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
ctest --test-dir "$BUILD_DIR" --output-on-failure -LE bench "$@" || status=$?
# The interop suite (tools/python/tests/interop) compares against the real PaddlePaddle: its CPU wheel
# is a test-only dependency, installed here into .venv (scripts/setup.sh does not need it).
PADDLE_VERSION=3.3.1
if ! .venv/bin/python -c "import importlib.metadata as m; assert m.version('paddlepaddle') == '$PADDLE_VERSION'" \
    2>/dev/null; then
  echo "test: installing paddlepaddle==$PADDLE_VERSION into .venv (interop tests)"
  .venv/bin/pip install -q --disable-pip-version-check "paddlepaddle==$PADDLE_VERSION" || status=$?
fi
PADDLEC_REQUIRE_PADDLE=1 PADDLEC_BUILD_DIR="$(cd "$BUILD_DIR" && pwd)" .venv/bin/python -m pytest tools/python/tests -q \
  || status=$?
if [ "$FUZZ_SECONDS" != 0 ]; then
  build_status=0
  wait "$fuzz_build_pid" || build_status=$?
  fuzz_build_pid=""
  if [ "$build_status" = 0 ]; then
    scripts/fuzz.sh all "$FUZZ_SECONDS" -seed=1 || status=$?
    echo "test: fuzz targets built and run in $((SECONDS - fuzz_start)) s (the build beside the tests above)"
  else
    cat "$fuzz_log"
    echo "test: error: the fuzz targets did not build (scripts/fuzz.sh build)" >&2
    status=1
  fi
fi
exit $status
