#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine with the CUDA toolkit lacks, then configures and
# builds gemmforge into build/. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libsqlite3-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libgtest-dev)
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

# The Triton backend compiles with python3 + triton (the version the GPU machine has). Without
# them it reports itself unavailable and everything else works.
if command -v python3 >/dev/null 2>&1 && ! python3 -c "import triton" >/dev/null 2>&1; then
  echo "setup: installing triton 3.6.0 for the Triton backend"
  python3 -m pip install --quiet triton==3.6.0 2>&1 | grep -v "as the 'root' user" || \
    echo "setup: could not install triton; the Triton backend will be unavailable" >&2
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
