#!/usr/bin/env bash
# The `gpu` ctest label: runs the op, runtime and driver tests with a GPU present (every op test then
# runs each kernel on the CPU and the GPU against the same reference, and every gradient check on
# both), a short GPU training run and the Python package's GPU tests. Without a usable GPU it reports
# why and exits 77, which ctest shows as "skipped".
#   scripts/gpu_tests.sh BUILD_DIR
set -uo pipefail
BUILD="${1:-build}"
cd "$(dirname "$0")/.."
probe=$("$BUILD/paddlec" run testdata/cli/make_inputs.pbtxt --device=gpu --fetch img 2>&1 >/dev/null)
if [ $? -ne 0 ]; then
  echo "gpu tests skipped: ${probe#error: }"
  exit 77
fi
set -e
PADDLEC_REQUIRE_GPU=1 "$BUILD/ops_test"
PADDLEC_REQUIRE_GPU=1 "$BUILD/exec_test" -tc='gpu:*'
"$BUILD/paddlec" train configs/mlp.pbtxt --device=gpu --limit-train 4000 --limit-test 1000 --epochs 2 --seed 7 \
  --no-progress
if [ -x .venv/bin/python ] && .venv/bin/python -c "import paddlec" 2>/dev/null; then
  PADDLEC_REQUIRE_GPU=1 PADDLEC_BUILD_DIR="$(cd "$BUILD" && pwd)" .venv/bin/python -m pytest tools/python/tests/test_gpu.py -q
fi
