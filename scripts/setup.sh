#!/usr/bin/env bash
# Installs paddlec's system dependencies (Debian 12) and builds it into build/.
# Idempotent: re-running only rebuilds what changed. Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libcli11-dev libeigen3-dev libspdlog-dev libfmt-dev doctest-dev
  libdnnl-dev zlib1g-dev
  python3 python3-numpy python3-protobuf
  dataset-fashion-mnist hyperfine
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--no-build" ]; then exit 0; fi

BUILD_DIR="${PADDLEC_BUILD_DIR:-build}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${PADDLEC_CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$BUILD_DIR"
