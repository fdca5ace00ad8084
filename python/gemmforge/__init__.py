"""gemmforge: the fastest kernel for each GEMM and row op of a transformer on Hopper GPUs.

The C++ library does the work (gemmforge._gemmforge); this package gives it Python's shapes:

    import gemmforge
    p = gemmforge.problem("4096x6144x4096:bf16:bias")
    gemmforge.tune(model="llama3-8b", tokens=[16, 128, 4096])   # into the tuning DB, with progress
    rt = gemmforge.Runtime()
    rt.gemm(p, a=x.data_ptr(), b=w.data_ptr(), d=y.data_ptr(), bias=b.data_ptr(), bias_len=6144,
            stream=torch.cuda.current_stream().cuda_stream)

PyTorch users want gemmforge.torch: custom ops (torch.ops.gemmforge.*) and optimize(model).
"""
from __future__ import annotations

import os
import sys

# Triton candidates compile in workers running this interpreter, whatever python3 is on PATH.
os.environ.setdefault("GEMMFORGE_PYTHON", sys.executable)

from . import _gemmforge as _C  # noqa: E402
from ._gemmforge import (  # noqa: E402,F401
    Error,
    GemmProblem,
    ModelGemm,
    OpsRuntime,
    RowOpSpec,
    Runtime,
    builtin_models,
)
from . import db  # noqa: E402,F401
from ._tune import bench, model_problems, tune  # noqa: E402,F401

__version__ = _C.__version__


def problem(spec: str) -> GemmProblem:
    """A GEMM from its text form 'MxNxK[xBATCH][:dtype[->out]][:tn|nn][:epilogue]'."""
    return GemmProblem.parse(spec)


def rowop(spec: str) -> RowOpSpec:
    """A row op from its text form 'OP[+residual|+valid]:ROWSxCOLS[:dtype[->out]]'."""
    return RowOpSpec.parse(spec)


def device(ordinal: int = 0) -> dict:
    """The GPU as gemmforge sees it: name, SMs, L2, and the fingerprint decisions are stored under."""
    import json

    return json.loads(_C.device(ordinal))
