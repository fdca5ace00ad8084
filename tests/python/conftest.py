import os
import sys
import tempfile

import pytest

# examples/ (the decoder layer) from the repository root.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
# Every test run gets a DB and kernel cache of its own, never the user's.
os.environ.setdefault("GEMMFORGE_HOME", tempfile.mkdtemp(prefix="gf-pytest-"))


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device: GPU test skipped, not passed")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")
