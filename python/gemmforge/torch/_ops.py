"""torch.ops.gemmforge.*: gemmforge's kernels as PyTorch custom ops.

Each op checks its tensors (CUDA, dtype, shapes) and raises gemmforge.Error with the reason; a
non-contiguous input is copied to a contiguous one first. Each has a fake kernel, so
torch.compile(fullgraph=True) traces it without a graph break, and launches on torch's current
stream. linear's backward runs its dX and dW GEMMs through gemmforge too.
"""
from __future__ import annotations

import atexit
import functools
import math
import threading
from typing import Optional

import torch
from torch import Tensor

from .. import _gemmforge as _C
from .. import _tune

_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
_GEMM_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16"}

_lock = threading.Lock()
_runtimes: dict[str, object] = {}


def _runtime(kind: str):
    """One Runtime and one OpsRuntime per process, made on first use (they read the tuning DB)."""
    rt = _runtimes.get(kind)
    if rt is not None:
        return rt
    with _lock:
        if kind not in _runtimes:
            _runtimes[kind] = _C.Runtime() if kind == "gemm" else _C.OpsRuntime()
        return _runtimes[kind]


@atexit.register
def _release() -> None:
    # Before the interpreter tears the module down: the runtimes free their GPU memory while CUDA is up.
    with _lock:
        _runtimes.clear()


def reset() -> None:
    """Drops the runtimes, so that the next call reads the DB again (after tuning)."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
    with _lock:
        _runtimes.clear()


def prepare(specs, streams=None) -> None:
    """Builds the kernels (and, for GEMMs, the workspaces on the given streams: by default the
    current stream and the one torch.cuda.graph captures on) of these problems: GEMM and row-op
    spec strings, GemmProblems or RowOpSpecs, e.g. optimize.problems(model, tokens). Their calls can
    then be captured in a CUDA graph without a warm-up."""
    if streams is None:
        graph = torch.cuda.graph
        if graph.default_capture_stream is None:  # made as torch.cuda.graph would make it
            graph.default_capture_stream = torch.cuda.Stream()
        streams = [torch.cuda.current_stream(), graph.default_capture_stream]
    gemms, rowops = [], []
    for p in specs:
        if isinstance(p, str):
            p = _tune.parse_spec(p)
        (rowops if isinstance(p, _C.RowOpSpec) else gemms).append(p)
    if gemms:
        _runtime("gemm").prepare(gemms, [s.cuda_stream for s in streams])
    if rowops:
        _runtime("rowop").prepare(rowops)


# Parsed once per distinct shape: a call's problem is a dictionary lookup.
_problem = functools.lru_cache(maxsize=4096)(_C.GemmProblem.parse)
_rowop = functools.lru_cache(maxsize=4096)(_C.RowOpSpec.parse)


def eager(op, *args):
    """Calls op's implementation directly where the dispatcher adds nothing (no tracing, no
    gradient to record), else the op: what optimize()'s modules call, to spare eager calls the
    dispatcher's tens of microseconds."""
    if torch.compiler.is_compiling() or (torch.is_grad_enabled() and any(
            isinstance(a, Tensor) and a.requires_grad for a in args)):
        return op(*args)
    return _IMPLS[op](*args)


def _check(cond: bool, message) -> None:
    """Raises gemmforge.Error when cond is false; message is a callable, so that a passing check
    formats nothing (these run on every call)."""
    if not cond:
        raise _C.Error(message())


def _cuda(op: str, *named: tuple[str, Optional[Tensor]]) -> int:
    """The index of the one CUDA device all given tensors are on, which must be the current one."""
    index = -2
    for name, t in named:
        if t is None:
            continue
        d = t.get_device()  # -1 off the GPU; an int, where t.device builds an object
        _check(d >= 0, lambda: f"gemmforge.{op}: {name} is on {t.device}, not a CUDA device")
        _check(index in (-2, d),
               lambda: f"gemmforge.{op}: {name} is on {t.device}, the others on cuda:{index}")
        index = d
    current = torch._C._cuda_getDevice()
    _check(index == current, lambda: f"gemmforge.{op}: tensors are on cuda:{index}, but the current device is "
                                     f"cuda:{current}")
    return index


def _dtype(op: str, t: Tensor, table=_DTYPES) -> str:
    _check(t.dtype in table,
           lambda: f"gemmforge.{op}: dtype {t.dtype} is not supported ({', '.join(map(str, table))})")
    return table[t.dtype]


def _same(op: str, name: str, t: Optional[Tensor], dtype: torch.dtype, shape: tuple) -> Optional[Tensor]:
    if t is None:
        return None
    _check(t.dtype == dtype, lambda: f"gemmforge.{op}: {name} is {t.dtype}, expected {dtype}")
    _check(tuple(t.shape) == tuple(shape),
           lambda: f"gemmforge.{op}: {name} has shape {tuple(t.shape)}, expected {tuple(shape)}")
    return t.contiguous()


def _stream(device: int) -> int:
    # torch's current stream of the device as a cudaStream_t, without building a Stream object (as
    # Inductor's generated code reads it).
    return torch._C._cuda_getCurrentRawStream(device)


def _ptr(t: Optional[Tensor]) -> int:
    return 0 if t is None else t.data_ptr()


def _run_gemm(problem, a: Tensor, b: Tensor, out: Tensor, device: int, c: Optional[Tensor] = None,
              bias: Optional[Tensor] = None, scale_a: Optional[Tensor] = None, scale_b: Optional[Tensor] = None,
              scale_d: Optional[Tensor] = None) -> None:
    """out = the GEMM problem of contiguous a and b (and the epilogue's c, bias, fp8 scales) by the
    runtime, on the device's current stream."""
    _runtime("gemm").gemm(problem, a.data_ptr(), b.data_ptr(), out.data_ptr(), _ptr(c), _ptr(bias),
                          0 if bias is None else bias.numel(), _stream(device), _ptr(scale_a), _ptr(scale_b),
                          _ptr(scale_d), scale_a_len=0 if scale_a is None else scale_a.numel(),
                          scale_b_len=0 if scale_b is None else scale_b.numel())


def _gemm(spec: str, a: Tensor, b: Tensor, out: Tensor, device: int, c: Optional[Tensor] = None,
          bias: Optional[Tensor] = None, **scales: Optional[Tensor]) -> None:
    """_run_gemm of the problem this spec string names."""
    _run_gemm(_problem(spec), a, b, out, device, c, bias, **scales)


def _gated(epilogue: str) -> bool:  # swiglu (interleaved) or swiglu_split: N/2 output columns
    return any(t.startswith("swiglu") for t in epilogue.split("+"))


# ---- GEMMs -------------------------------------------------------------------------------------


def gemm_spec(m: int, n: int, k: int, dtype: str, layout: str = "tn", *, bias: bool = False, residual: bool = False,
              epilogue: str = "") -> str:
    """The problem text of a GEMM the ops run: what `gemmforge tune -p` takes."""
    parts = [p for p in (["bias"] if bias else []) + (["residual"] if residual else []) + epilogue.split("+") if p]
    return f"{m}x{n}x{k}:{dtype}" + (":nn" if layout == "nn" else "") + (":" + "+".join(parts) if parts else "")


def _linear_out_shape(x: Tensor, weight: Tensor, epilogue: str) -> list[int]:
    n = weight.shape[0] // 2 if _gated(epilogue) else weight.shape[0]
    return [*x.shape[:-1], n]


def _plan_linear(x: Tensor, weight: Tensor, bias: Optional[Tensor], residual: Optional[Tensor],
                 epilogue: str) -> tuple:
    """(the GEMM problem or None where there is nothing to multiply, the output's shape) of a
    linear call; raises gemmforge.Error for what the GEMM cannot take."""
    _check(x.dim() >= 1 and weight.dim() == 2, lambda: f"gemmforge.linear: x must have a last dim and weight be 2-D, "
                                               f"not {tuple(x.shape)} and {tuple(weight.shape)}")
    dt = _dtype("linear", x, _GEMM_DTYPES)
    _check(weight.dtype == x.dtype, lambda: f"gemmforge.linear: weight is {weight.dtype}, x is {x.dtype}")
    n, k = weight.shape
    _check(x.shape[-1] == k, lambda: f"gemmforge.linear: x has {x.shape[-1]} features, weight takes {k}")
    out_shape = _linear_out_shape(x, weight, epilogue)
    _same("linear", "bias", bias, x.dtype, (n,))
    _same("linear", "residual", residual, x.dtype, out_shape)
    _check(k > 0, lambda: "gemmforge.linear: weight has no input features")
    m = x.numel() // k
    if m == 0 or n == 0:
        return None, out_shape
    spec = gemm_spec(m, n, k, dt, bias=bias is not None, residual=residual is not None, epilogue=epilogue)
    return _problem(spec), out_shape


# A call's shapes, dtypes and epilogue -> its plan, checked once: every call after a model's
# first with these shapes skips the checks and the spec's formatting (host time is what a small
# GEMM's call costs).
_linear_plans: dict[tuple, tuple] = {}


def _linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, residual: Optional[Tensor] = None,
            epilogue: str = "") -> Tensor:
    """epilogue(x @ weight.T + bias + residual), weight as nn.Linear keeps it (N x K). epilogue: ''
    or an activation (gelu, gelu_tanh, silu, relu, ...) or swiglu (gate and up interleaved in N:
    the output has N/2 columns). The activation applies to the sum."""
    device = _cuda("linear", ("x", x), ("weight", weight), ("bias", bias), ("residual", residual))
    key = (x.shape, x.dtype, weight.shape, weight.dtype, epilogue, None if bias is None else (bias.shape, bias.dtype),
           None if residual is None else (residual.shape, residual.dtype))
    plan = _linear_plans.get(key)
    if plan is None:
        plan = _plan_linear(x, weight, bias, residual, epilogue)
        if len(_linear_plans) >= 4096:  # token counts that change every call: bounded, not a leak
            _linear_plans.clear()
        _linear_plans[key] = plan
    problem, out_shape = plan
    out = torch.empty(out_shape, dtype=x.dtype, device=device)
    if problem is not None:
        _run_gemm(problem, x.contiguous(), weight.contiguous(), out, device,
                  None if residual is None else residual.contiguous(), None if bias is None else bias.contiguous())
    return out


linear = torch.library.custom_op("gemmforge::linear", _linear, mutates_args=())


@linear.register_fake
def _(x, weight, bias=None, residual=None, epilogue=""):
    return x.new_empty(_linear_out_shape(x, weight, epilogue))


def _mm(a: Tensor, b: Tensor) -> Tensor:
    """a @ b for a (M x K) and b (K x N), both row-major: the layout of linear's backward GEMMs."""
    _check(a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0],
           lambda: f"gemmforge.mm: shapes {tuple(a.shape)} and {tuple(b.shape)} do not multiply")
    device = _cuda("mm", ("a", a), ("b", b))
    dt = _dtype("mm", a, _GEMM_DTYPES)
    _check(b.dtype == a.dtype, lambda: f"gemmforge.mm: b is {b.dtype}, a is {a.dtype}")
    (m, k), n = a.shape, b.shape[1]
    out = torch.empty((m, n), dtype=a.dtype, device=device)
    if m == 0 or n == 0 or k == 0:
        return out.zero_()
    a, b = a.contiguous(), b.contiguous()
    _gemm(gemm_spec(m, n, k, dt, "nn"), a, b, out, device)
    return out


mm = torch.library.custom_op("gemmforge::mm", _mm, mutates_args=())


@mm.register_fake
def _(a, b):
    return a.new_empty((a.shape[0], b.shape[1]))


def _linear_setup(ctx, inputs, output):
    x, weight, bias, residual, epilogue = inputs
    ctx.epilogue = epilogue
    ctx.has_bias, ctx.has_residual = bias is not None, residual is not None
    ctx.save_for_backward(x, weight)


def _linear_backward(ctx, grad):
    if ctx.epilogue:
        raise _C.Error(f"gemmforge.linear: no backward through the fused epilogue '{ctx.epilogue}'; for training, "
                       "use epilogue='' and apply the activation in torch")
    x, weight = ctx.saved_tensors
    k = weight.shape[1]
    g2 = grad.reshape(-1, grad.shape[-1])
    dx = mm(g2, weight).reshape(x.shape) if ctx.needs_input_grad[0] else None
    dw = mm(g2.t().contiguous(), x.reshape(-1, k)) if ctx.needs_input_grad[1] else None
    db = g2.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
    dr = grad if ctx.has_residual and ctx.needs_input_grad[3] else None
    return dx, dw, db, dr, None


linear.register_autograd(_linear_backward, setup_context=_linear_setup)


def _mm_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _mm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    da = mm(grad, b.t().contiguous()) if ctx.needs_input_grad[0] else None
    db = mm(a.t().contiguous(), grad) if ctx.needs_input_grad[1] else None
    return da, db


mm.register_autograd(_mm_backward, setup_context=_mm_setup)


_FP8 = {torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2"}


def _scaled_mm(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, bias: Optional[Tensor] = None,
               out_dtype: Optional[torch.dtype] = None, scale_result: Optional[Tensor] = None) -> Tensor:
    """torch._scaled_mm's contract through gemmforge: a (M x K, row-major) and b (K x N,
    column-major: a weight's transpose) in fp8, scale_a one float or one per row of a (M x 1),
    scale_b one float or one per column of b (1 x N); out = (scale_a * scale_b * a @ b + bias) in
    out_dtype (default bf16). Block scales as torch takes them: scale_a (M, ceil(K/128)) for 1x128
    groups of a, M-major (stride (1, M)); scale_b (ceil(K/128), ceil(N/128)) for 128x128 blocks
    of b, its transpose contiguous. An fp8 out_dtype takes scale_result (one float32), as torch
    does: out = saturate(scale_result * result), the bias then bf16."""
    _check(a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0],
           lambda: f"gemmforge.scaled_mm: shapes {tuple(a.shape)} and {tuple(b.shape)} do not multiply")
    device = _cuda("scaled_mm", ("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias),
                   ("scale_result", scale_result))
    _check(a.dtype in _FP8 and b.dtype in _FP8,
           lambda: f"gemmforge.scaled_mm: a and b must be fp8 (e4m3 or e5m2, mixed or not), not {a.dtype} and "
                   f"{b.dtype}")
    out_dtype = out_dtype or torch.bfloat16
    _check(out_dtype in _DTYPES or out_dtype in _FP8,
           lambda: f"gemmforge.scaled_mm: out_dtype {out_dtype} is not supported")
    out_name = _DTYPES.get(out_dtype) or _FP8[out_dtype]
    fp8_out = out_dtype in _FP8
    _check(not fp8_out or (scale_result is not None and scale_result.dtype == torch.float32
                           and scale_result.numel() == 1),
           lambda: "gemmforge.scaled_mm: an fp8 out_dtype needs scale_result, one float32")
    (m, k), n = a.shape, b.shape[1]
    _check(b.t().is_contiguous(), lambda: "gemmforge.scaled_mm: b must be column-major (a row-major weight's .t())")
    _check(scale_a.dtype == scale_b.dtype == torch.float32, lambda: "gemmforge.scaled_mm: scales must be float32")
    kb, nb = -(-k // 128), -(-n // 128)
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        kind = "tensor"
    elif scale_a.numel() == m and scale_b.numel() == n:
        kind = "rowcol"
    else:
        _check(tuple(scale_a.shape) == (m, kb) and tuple(scale_b.shape) == (kb, nb),
               lambda: f"gemmforge.scaled_mm: scales of shapes {tuple(scale_a.shape)} and {tuple(scale_b.shape)} are "
                       f"neither per tensor, rowwise ({m} and {n} values) nor blocks ({(m, kb)} and {(kb, nb)})")
        kind = "block128"
    bias = _same("scaled_mm", "bias", bias, torch.bfloat16 if fp8_out else out_dtype, (n,))
    out = torch.empty((m, n), dtype=out_dtype, device=device)
    if m == 0 or n == 0:
        return out
    if kind == "block128":  # gemmforge's layouts: a k-block's rows together, B's blocks row-major
        sa, sb = scale_a.t().contiguous(), scale_b.t().contiguous()
    else:
        sa, sb = scale_a.contiguous(), scale_b.contiguous()
    a = a.contiguous()
    inputs = _FP8[a.dtype] if b.dtype == a.dtype else f"{_FP8[a.dtype]}x{_FP8[b.dtype]}"
    spec = f"{m}x{n}x{k}:{inputs}->{out_name}:scale={kind}" + ("+bias" if bias is not None else "")
    _gemm(spec, a, b, out, device, bias=bias, scale_a=sa, scale_b=sb, scale_d=scale_result if fp8_out else None)
    return out


scaled_mm = torch.library.custom_op("gemmforge::scaled_mm", _scaled_mm, mutates_args=())


@scaled_mm.register_fake
def _(a, b, scale_a, scale_b, bias=None, out_dtype=None, scale_result=None):
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype or torch.bfloat16)


_SCALINGS = ("tensor", "row", "1x128", "128x128")


def _scale_shape(x_shape, scaling: str) -> tuple[tuple[int, ...], bool]:
    """The scale tensor's shape for x viewed as rows x last dim, and whether it is stored
    transposed (1x128 groups: scaled_mm takes them M-major, as gemmforge's kernels read them)."""
    cols = x_shape[-1] if len(x_shape) else 1
    rows = math.prod(x_shape) // cols if cols else 0
    groups, blocks = -(-cols // 128), -(-rows // 128)
    return {"tensor": ((), False), "row": ((rows, 1), False), "1x128": ((groups, rows), True),
            "128x128": ((blocks, groups), False)}[scaling]


def _quantize_args(op: str, x: Tensor, dtype: torch.dtype, *named: tuple[str, Optional[Tensor]]):
    """(device, x's dtype name, rows, cols) of a quantization of x (rows x its last dim) to dtype."""
    device = _cuda(op, ("x", x), *named)
    dt = _dtype(op, x)
    _check(dtype in _FP8, lambda: f"gemmforge.{op}: dtype must be an fp8 type, not {dtype}")
    cols = x.shape[-1] if x.dim() else 1
    return device, dt, x.numel() // cols if cols else 0, cols


def _quantize_fp8(x: Tensor, scaling: str = "tensor",
                  dtype: torch.dtype = torch.float8_e4m3fn) -> tuple[Tensor, Tensor]:
    """(q, scale) with q = saturate(x / scale) in fp8 and scale = amax / the type's largest value,
    per group of x viewed as rows x last dim, shaped as scaled_mm takes it:
      "tensor": one float, shape (); "row": one a row, (rows, 1);
      "1x128": one per 128 elements along a row (activations for block scales), (rows, ceil(cols/128)),
        M-major (stride (1, rows));
      "128x128": one per 128x128 block (a weight for block scales), (ceil(rows/128), ceil(cols/128)).
    A weight w (N x K) quantized by row or 128x128 goes to scaled_mm as b = q.t(), scale_b = scale.t()."""
    device, dt, rows, cols = _quantize_args("quantize_fp8", x, dtype)
    _check(scaling in _SCALINGS, lambda: f"gemmforge.quantize_fp8: scaling must be one of {_SCALINGS}, not {scaling!r}")
    q = torch.empty(x.shape, dtype=dtype, device=device)
    shape, transposed = _scale_shape(tuple(x.shape), scaling)
    # The kernels write every scale; an empty x keeps scale 1.
    scale = (torch.empty if x.numel() else torch.ones)(shape, dtype=torch.float32, device=device)
    if x.numel():
        x = x.contiguous()
        _C.quantize_fp8(x.data_ptr(), q.data_ptr(), scale.data_ptr(), rows, cols, scaling, dt, _FP8[dtype],
                        _stream(device))
    return q, scale.t() if transposed else scale


quantize_fp8 = torch.library.custom_op("gemmforge::quantize_fp8", _quantize_fp8, mutates_args=())


@quantize_fp8.register_fake
def _(x, scaling="tensor", dtype=torch.float8_e4m3fn):
    shape, transposed = _scale_shape(tuple(x.shape), scaling)
    scale = x.new_empty(shape, dtype=torch.float32)
    return x.new_empty(x.shape, dtype=dtype), scale.t() if transposed else scale


def _check_tensor_scale(op: str, scale: Tensor):
    """A per-tensor scale given to a quantization: one float32."""
    _check(scale.dtype == torch.float32 and scale.numel() == 1,
           lambda: f"gemmforge.{op}: scale must be one float32, not {scale.dtype} of shape {tuple(scale.shape)}")


def _quantize_fp8_static(x: Tensor, scale: Tensor, dtype: torch.dtype = torch.float8_e4m3fn) -> Tensor:
    """q = saturate(x / scale) in fp8 with a given per-tensor scale (a calibrated one, or delayed
    scaling's from an earlier step: one float, positive and finite): the cast alone, one pass over
    x, where quantize_fp8's "tensor" reads x twice to find its amax first."""
    device, dt, rows, cols = _quantize_args("quantize_fp8_static", x, dtype, ("scale", scale))
    _check_tensor_scale("quantize_fp8_static", scale)
    q = torch.empty(x.shape, dtype=dtype, device=device)
    if x.numel():
        x, scale = x.contiguous(), scale.contiguous()
        _C.quantize_fp8(x.data_ptr(), q.data_ptr(), scale.data_ptr(), rows, cols, "static", dt, _FP8[dtype],
                        _stream(device))
    return q


quantize_fp8_static = torch.library.custom_op("gemmforge::quantize_fp8_static", _quantize_fp8_static,
                                              mutates_args=())


@quantize_fp8_static.register_fake
def _(x, scale, dtype=torch.float8_e4m3fn):
    return x.new_empty(x.shape, dtype=dtype)


def _quantize_fp8_delayed(x: Tensor, scale: Tensor,
                          dtype: torch.dtype = torch.float8_e4m3fn) -> tuple[Tensor, Tensor]:
    """(q, amax): delayed scaling's step, q = saturate(x / scale) by the scale an earlier step
    gave (one float, positive and finite) and x's amax (shape ()) from the same pass, whence the
    next step's scale (amax / the fp8 type's largest value, or a history's max of them). One pass
    over x, as quantize_fp8_static; quantize_fp8's "tensor" reads x twice."""
    device, dt, rows, cols = _quantize_args("quantize_fp8_delayed", x, dtype, ("scale", scale))
    _check_tensor_scale("quantize_fp8_delayed", scale)
    q = torch.empty(x.shape, dtype=dtype, device=device)
    amax = torch.empty((), dtype=torch.float32, device=device)  # the op writes it, 0 for an empty x
    x, scale = x.contiguous(), scale.contiguous()
    _C.quantize_fp8_delayed(x.data_ptr(), q.data_ptr(), scale.data_ptr(), amax.data_ptr(), rows, cols, dt, _FP8[dtype],
                            _stream(device))
    return q, amax


quantize_fp8_delayed = torch.library.custom_op("gemmforge::quantize_fp8_delayed", _quantize_fp8_delayed,
                                               mutates_args=())


@quantize_fp8_delayed.register_fake
def _(x, scale, dtype=torch.float8_e4m3fn):
    return x.new_empty(x.shape, dtype=dtype), x.new_empty((), dtype=torch.float32)


# ---- row ops -----------------------------------------------------------------------------------


def _rows(op: str, x: Tensor) -> tuple[int, int]:
    _check(x.dim() >= 1 and x.shape[-1] > 0,
           lambda: f"gemmforge.{op}: x needs a non-empty last dimension, not {tuple(x.shape)}")
    return x.numel() // x.shape[-1], x.shape[-1]


def _run_rowop(spec: str, device, **pointers) -> None:
    _runtime("rowop").run(_rowop(spec), stream=_stream(device), **pointers)


def _rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last dimension."""
    device = _cuda("rms_norm", ("x", x), ("weight", weight))
    rows, cols = _rows("rms_norm", x)
    dt = _dtype("rms_norm", x)
    weight = _same("rms_norm", "weight", weight, x.dtype, (cols,))
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    if rows:
        x = x.contiguous()
        _run_rowop(f"rmsnorm:{rows}x{cols}:{dt}", device, x=x.data_ptr(), y=y.data_ptr(), weight=weight.data_ptr(),
                   eps=eps)
    return y


rms_norm = torch.library.custom_op("gemmforge::rms_norm", _rms_norm, mutates_args=())


@rms_norm.register_fake
def _(x, weight, eps=1e-6):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _fused_add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6) -> tuple[Tensor, Tensor]:
    """(rms_norm(x + residual), x + residual) in one pass."""
    device = _cuda("fused_add_rms_norm", ("x", x), ("residual", residual), ("weight", weight))
    rows, cols = _rows("fused_add_rms_norm", x)
    dt = _dtype("fused_add_rms_norm", x)
    residual = _same("fused_add_rms_norm", "residual", residual, x.dtype, x.shape)
    weight = _same("fused_add_rms_norm", "weight", weight, x.dtype, (cols,))
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    s = torch.empty_like(y)
    if rows:
        x = x.contiguous()
        _run_rowop(f"rmsnorm+residual:{rows}x{cols}:{dt}", device, x=x.data_ptr(), y=y.data_ptr(),
                   weight=weight.data_ptr(), residual=residual.data_ptr(), residual_out=s.data_ptr(), eps=eps)
    return y, s


fused_add_rms_norm = torch.library.custom_op("gemmforge::fused_add_rms_norm", _fused_add_rms_norm, mutates_args=())


@fused_add_rms_norm.register_fake
def _(x, residual, weight, eps=1e-6):
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    return y, torch.empty_like(y)


def _layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dimension."""
    device = _cuda("layer_norm", ("x", x), ("weight", weight), ("bias", bias))
    rows, cols = _rows("layer_norm", x)
    dt = _dtype("layer_norm", x)
    weight = _same("layer_norm", "weight", weight, x.dtype, (cols,))
    bias = _same("layer_norm", "bias", bias, x.dtype, (cols,))
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    if rows:
        x = x.contiguous()
        _run_rowop(f"layernorm:{rows}x{cols}:{dt}", device, x=x.data_ptr(), y=y.data_ptr(), weight=weight.data_ptr(),
                   bias=bias.data_ptr(), eps=eps)
    return y


layer_norm = torch.library.custom_op("gemmforge::layer_norm", _layer_norm, mutates_args=())


@layer_norm.register_fake
def _(x, weight, bias, eps=1e-5):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _softmax(x: Tensor, scale: float = 1.0) -> Tensor:
    """softmax(scale * x) over the last dimension."""
    device = _cuda("softmax", ("x", x))
    rows, cols = _rows("softmax", x)
    dt = _dtype("softmax", x)
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    if rows:
        x = x.contiguous()
        _run_rowop(f"softmax:{rows}x{cols}:{dt}", device, x=x.data_ptr(), y=y.data_ptr(), scale=scale)
    return y


softmax = torch.library.custom_op("gemmforge::softmax", _softmax, mutates_args=())


@softmax.register_fake
def _(x, scale=1.0):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


# ---- elementwise -------------------------------------------------------------------------------


def _swiglu(gate: Tensor, up: Tensor) -> Tensor:
    """silu(gate) * up."""
    device = _cuda("swiglu", ("gate", gate), ("up", up))
    dt = _dtype("swiglu", gate)
    up = _same("swiglu", "up", up, gate.dtype, gate.shape)
    out = torch.empty_like(gate, memory_format=torch.contiguous_format)
    if out.numel():
        gate = gate.contiguous()
        _C.swiglu(gate.data_ptr(), up.data_ptr(), out.data_ptr(), out.numel(), dt, stream=_stream(device))
    return out


swiglu = torch.library.custom_op("gemmforge::swiglu", _swiglu, mutates_args=())


@swiglu.register_fake
def _(gate, up):
    return torch.empty_like(gate, memory_format=torch.contiguous_format)


def _gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x) as torch.nn.functional.gelu: approximate 'none' (erf) or 'tanh'."""
    device = _cuda("gelu", ("x", x))
    dt = _dtype("gelu", x)
    _check(approximate in ("none", "tanh"),
           lambda: f"gemmforge.gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if out.numel():
        x = x.contiguous()
        _C.gelu(x.data_ptr(), out.data_ptr(), out.numel(), dt, tanh=approximate == "tanh", stream=_stream(device))
    return out


gelu = torch.library.custom_op("gemmforge::gelu", _gelu, mutates_args=())


@gelu.register_fake
def _(x, approximate="none"):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


_IMPLS = {linear: _linear, mm: _mm, rms_norm: _rms_norm, fused_add_rms_norm: _fused_add_rms_norm,
          layer_norm: _layer_norm, softmax: _softmax, swiglu: _swiglu, gelu: _gelu, scaled_mm: _scaled_mm,
          quantize_fp8: _quantize_fp8, quantize_fp8_static: _quantize_fp8_static}
