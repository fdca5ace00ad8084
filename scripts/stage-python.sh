#!/usr/bin/env bash
# Stages the Python package for the GPU machine, which has python3.12 and torch but no network:
# the package's sources, the module built here for that Python, the CLI beside it, pytest and tqdm,
# and libhiredis, all in .carry/py (carried with the working tree; PYTHONPATH=.carry/py there).
#   PY=python3.12 scripts/stage-python.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(command -v "${PY:-python3.12}" || pyenv prefix 3.12 2>/dev/null | sed 's|$|/bin/python3.12|')
build=${1:-build/py-stage}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DGF_PYTHON=ON -DBUILD_TESTING=OFF \
  -DPython_EXECUTABLE="$py" >/dev/null
cmake --build "$build" --target _gemmforge gemmforge
rm -rf .carry/py/gemmforge
mkdir -p .carry/py/gemmforge/_bin
cp -r python/gemmforge/. .carry/py/gemmforge/
cp "$build"/_gemmforge*.so .carry/py/gemmforge/
cp "$build"/gemmforge .carry/py/gemmforge/_bin/
# The shared libraries the module and the CLI load that the GPU machine lacks (hiredis: a Python
# module links the shared one); gpu-check.sh puts .carry/py on LD_LIBRARY_PATH.
ldd "$build"/_gemmforge*.so | awk '/libhiredis/ {print $3}' | xargs -r cp -L -t .carry/py/
"$py" -m pip install --quiet --upgrade --target .carry/py pytest tqdm
du -sh .carry/py
