#!/usr/bin/env bash
# Runs every test: the ctest suite (unit, CLI transcripts). Assumes scripts/setup.sh has built build/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${PADDLEC_BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -LE bench "$@"
