#!/usr/bin/env bash
# The Python package as a user gets it: torch from PyPI, `pip install .` (scikit-build-core builds
# the module and the CLI in build/python-*), then its tests from outside the source tree (GPU tests
# report themselves skipped without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python3 -c "import torch" 2>/dev/null || python3 -m pip install --quiet "torch>=2.4"
python3 -m pip install --quiet pytest tqdm "scikit-build-core>=0.10" "nanobind>=2.4"
python3 -m pip install --quiet --no-build-isolation .
cd /tmp && python3 -m pytest -q -rs "$root/tests/python"
