#!/usr/bin/env bash
# Runs every test: the ctest suite (unit, CLI transcripts), then the Python package's pytest suite
# (with the interop suite against PaddlePaddle, whose wheel it installs into .venv), then every libFuzzer
# target for a few seconds (scripts/fuzz.sh: each replays its regression inputs in testdata/fuzz/ and
# seeds first; PADDLEC_FUZZ_SECONDS per target, default 10, 0 skips them).
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
FUZZ_SECONDS="${PADDLEC_FUZZ_SECONDS:-10}"
if [ "$FUZZ_SECONDS" != 0 ]; then
  fuzz_start=$SECONDS
  scripts/fuzz.sh all "$FUZZ_SECONDS" -seed=1 || status=$?
  echo "test: fuzz targets built and run in $((SECONDS - fuzz_start)) s"
fi
exit $status
