"""The `gemmforge` command of the package: the CLI binary installed beside the module."""
import os
import sys


def executable() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "gemmforge")


def main() -> None:
    exe = executable()
    os.environ.setdefault("GEMMFORGE_PYTHON", sys.executable)
    os.execv(exe, [exe] + sys.argv[1:])
