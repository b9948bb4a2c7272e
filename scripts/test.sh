#!/usr/bin/env bash
# Runs every test: the ctest suite (unit, CLI transcripts), then the Python package's pytest suite.
# Assumes scripts/setup.sh has built build/ and installed the package into .venv. Arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${PADDLEC_BUILD_DIR:-build}"
status=0
ctest --test-dir "$BUILD_DIR" --output-on-failure -LE bench "$@" || status=$?
PADDLEC_BUILD_DIR="$(cd "$BUILD_DIR" && pwd)" .venv/bin/python -m pytest tools/python/tests -q || status=$?
exit $status
