"""gemmforge inside TorchInductor: max-autotune weighs gemmforge's stored kernel for every mm it
lowers, beside ATen and its Triton templates, and keeps it where it measures faster.

    import gemmforge.torch.inductor as gfi
    gfi.enable()                      # tunes each new shape on first sight (tune_missing=True)
    model = torch.compile(model, mode="max-autotune-no-cudagraphs")

Inductor offers external choices for plain mm only (a Linear without bias lowers to one; with a
bias it becomes addmm, which Inductor keeps to itself). optimize() reaches every Linear, fuses
epilogues and tunes ahead; this route leaves the model as it is and lets Inductor decide per mm.
"""
from __future__ import annotations

import threading

import torch
from torch import Tensor

from .. import _gemmforge as _C
from .. import _tune
from . import _ops

_tuned: set[str] = set()
_tuned_lock = threading.Lock()
_tune_missing = True


def gemmforge_mm(a: Tensor, b: Tensor, out: Tensor) -> None:
    """out = a @ b by gemmforge (Inductor's external_matmul signature). b as Inductor passes a
    Linear's weight (its transpose, a view) runs as layout TN; a row-major b as NN."""
    _ops._check(a.dim() == 2 and b.dim() == 2 and out.shape == (a.shape[0], b.shape[1]),
                lambda: f"gemmforge_mm: shapes {tuple(a.shape)} @ {tuple(b.shape)} -> {tuple(out.shape)}")
    device = _ops._cuda("mm", ("a", a), ("b", b), ("out", out))
    dt = _ops._dtype("mm", a, _ops._GEMM_DTYPES)
    _ops._check(b.dtype == a.dtype == out.dtype and out.is_contiguous(),
                lambda: "gemmforge_mm: a, b and out must share a dtype, and out be contiguous")
    (m, k), n = a.shape, b.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        out.zero_()
        return
    a = a.contiguous()
    if b.t().is_contiguous():  # a weight's transpose: W (N x K) row-major
        w, layout = b.t(), "tn"
    else:
        w, layout = b.contiguous(), "nn"
    spec = _ops.gemm_spec(m, n, k, dt, layout)
    if _tune_missing:
        _tune_once(spec)
    _ops._gemm(spec, a, w, out, device)


def _tune_once(spec: str) -> None:
    with _tuned_lock:
        if spec in _tuned:
            return
        _tune.tune([spec], progress=False)  # a DB hit costs a lookup
        _tuned.add(spec)
        _ops.reset()


def enable(tune_missing: bool = True) -> None:
    """Adds gemmforge to the choices max-autotune weighs for mm. With tune_missing, a shape the DB
    lacks is tuned the first time Inductor benchmarks it (part of compile time, as its own
    autotuning is)."""
    global _tune_missing
    _tune_missing = tune_missing
    import torch._inductor.config as config

    if gemmforge_mm not in config.external_matmul:
        config.external_matmul.append(gemmforge_mm)
    try:
        # Registered now, not at the first lowering, so that a compiled graph loaded from Inductor's
        # cache in a fresh process still finds extern_kernels.gemmforge_mm.
        from torch._inductor.kernel.mm import lazy_register_extern_choice

        lazy_register_extern_choice(gemmforge_mm)
    except ImportError:
        pass


def disable() -> None:
    import torch._inductor.config as config

    if gemmforge_mm in config.external_matmul:
        config.external_matmul.remove(gemmforge_mm)
