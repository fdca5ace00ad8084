#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine with the CUDA toolkit lacks, then configures and
# builds gemmforge into build/. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# libhiredis-dev (found by pkg-config) builds the redis:// tuning store; redis-server runs its
# tests (label redis); ccache is for rebuilds (-DCMAKE_CXX_COMPILER_LAUNCHER=ccache).
packages=(cmake ninja-build g++ pkg-config libsqlite3-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
          libgtest-dev libhiredis-dev redis-server ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  else
    echo "setup: the CUDA toolkit (nvcc, NVRTC, cuBLASLt) is required; install CUDA 12.4 or newer" >&2
    exit 1
  fi
fi

# The Triton backend compiles with python3 + triton (the version the GPU machine has); the
# performance report draws its plots with matplotlib. Without them the Triton backend reports
# itself unavailable and the report is written without plots; everything else works.
pip_install() {  # package, what it is for
  if ! python3 -m pip install --quiet "$1" >/tmp/gemmforge-pip.log 2>&1; then
    echo "setup: could not install $1; $2" >&2
  fi
}
if command -v python3 >/dev/null 2>&1; then
  python3 -c "import triton" >/dev/null 2>&1 || pip_install triton==3.6.0 "the Triton backend will be unavailable"
  python3 -c "import matplotlib" >/dev/null 2>&1 || pip_install matplotlib "reports will have no plots"
  # The CUTLASS backend compiles CUTLASS's own headers, which this package ships (pinned: the
  # backend's cache keys and version name it; src/backends/gemm/cutlass/space.hpp).
  python3 -c "import importlib.metadata as m; assert m.version('nvidia-cutlass') == '4.2.0.0'" >/dev/null 2>&1 ||
    pip_install nvidia-cutlass==4.2.0.0 "the CUTLASS backend will be unavailable"
  # The CuTe DSL backend compiles with NVIDIA's DSL (pinned: its ABI moves; the default cu12 flavor,
  # whose PTX CUDA 13.0's ptxas accepts). Without it the backend runs only what the kernel cache holds.
  python3 -c "import importlib.metadata as m; assert m.version('nvidia-cutlass-dsl') == '4.8.1'" >/dev/null 2>&1 ||
    pip_install nvidia-cutlass-dsl==4.8.1 "the CuTe DSL backend will run only from the kernel cache"
fi

# A unity build compiles the files of a target in batches: the header-only libraries' templates
# (nlohmann-json, fmt, CLI11) are then compiled once a batch rather than once a file, which halves
# a fresh build on two cores. A tree rebuilt after every edit is faster without it
# (-DCMAKE_UNITY_BUILD=OFF).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build
