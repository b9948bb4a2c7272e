#!/usr/bin/env bash
# Runs the interop suite (tools/python/tests/interop) against every PaddlePaddle 3.x release: each in
# its own scratch venv under build/paddle-venvs, so the programs it reads are the ones each release
# writes (PIR versions 1, 2, 3 and 4). Not part of scripts/test.sh (CI tests the pinned release only).
# Usage: scripts/interop_versions.sh [VERSION ...]   (default: 3.0.0 3.1.1 3.2.2 3.3.1)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="$(cd "${PADDLEC_BUILD_DIR:-build}" && pwd)"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.0.0 3.1.1 3.2.2 3.3.1)
status=0
for v in "${versions[@]}"; do
  venv="$BUILD_DIR/paddle-venvs/$v"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "paddlepaddle==$v" numpy
  fi
  echo "== PaddlePaddle $v"
  PADDLEC_PADDLE_PYTHON="$venv/bin/python" PADDLEC_REQUIRE_PADDLE=1 PADDLEC_BUILD_DIR="$BUILD_DIR" \
    .venv/bin/python -m pytest tools/python/tests/interop -q || status=$?
  cp "$BUILD_DIR/interop-report.md" "$BUILD_DIR/interop-report-$v.md" 2>/dev/null || true
done
exit $status
