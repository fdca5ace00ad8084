"""optimize(model): a model's Linear, RMSNorm/LayerNorm and gated-MLP modules replaced by gemmforge's,
with the GEMMs and row ops it will run tuned.

Recognised (Hugging Face-style names):
  - nn.Linear                                       -> Linear (gemmforge.linear)
  - nn.Sequential(..., nn.Linear, GELU|SiLU|ReLU)   -> Linear with the activation as its epilogue
  - a module with gate_proj, up_proj, down_proj and a SiLU act_fn (Llama, Mistral, Qwen MLPs)
                                                    -> GatedMLP: gate and up in one GEMM, SwiGLU fused
  - *RMSNorm (weight, eps or variance_epsilon), nn.RMSNorm -> RMSNorm;  nn.LayerNorm -> LayerNorm
  - x + Linear(y), under torch.compile: the residual in the GEMM's epilogue (passes.py)
The new modules share the originals' parameters (GatedMLP interleaves gate and up into one).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .. import _gemmforge as _C
from .. import _tune
from . import _ops, passes

_ACTIVATIONS = {nn.GELU: lambda m: "gelu_tanh" if m.approximate == "tanh" else "gelu", nn.SiLU: lambda m: "silu",
                nn.ReLU: lambda m: "relu"}


_TORCH_ACTIVATIONS = {"gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "silu": F.silu,
                      "relu": F.relu}


def _training(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)


def _activation(module: nn.Module) -> str | None:
    for cls, name in _ACTIVATIONS.items():
        if isinstance(module, cls):
            return name(module)
    # Hugging Face's activation classes (SiLUActivation, GELUActivation, ...) by name.
    n = type(module).__name__.lower()
    return {"siluactivation": "silu", "geluactivation": "gelu", "pytorchgelutanh": "gelu_tanh"}.get(n)


class Linear(nn.Module):
    """nn.Linear through gemmforge.linear, with an optional fused epilogue (an activation)."""

    def __init__(self, src: nn.Linear, epilogue: str = ""):
        super().__init__()
        self.weight, self.bias, self.epilogue = src.weight, src.bias, epilogue
        self.in_features, self.out_features = src.in_features, src.out_features

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        if self.epilogue and _training(x, self.weight):  # the fused epilogue has no backward
            return _TORCH_ACTIVATIONS[self.epilogue](_ops.eager(_ops.linear, x, self.weight, self.bias, residual, ""))
        return _ops.eager(_ops.linear, x, self.weight, self.bias, residual, self.epilogue)

    def problems(self, tokens: Sequence[int], dtype: str, backward: bool = False) -> list[str]:
        n, k = self.out_features, self.in_features
        if not backward:
            return [_ops.gemm_spec(m, n, k, dtype, bias=self.bias is not None, epilogue=self.epilogue) for m in tokens]
        return _training_specs(tokens, n, k, dtype, self.bias is not None)

    def extra_repr(self) -> str:
        return f"{self.in_features} -> {self.out_features}" + (f", epilogue={self.epilogue}" if self.epilogue else "")


class GatedMLP(nn.Module):
    """down(silu(gate(x)) * up(x)) with gate and up as one GEMM whose epilogue is SwiGLU (the
    weights interleaved row by row: gate j at 2j, up j at 2j+1)."""

    def __init__(self, mlp: nn.Module):
        super().__init__()
        gate, up = mlp.gate_proj, mlp.up_proj
        self.in_features, self.intermediate = gate.in_features, gate.out_features
        with torch.no_grad():
            w = torch.stack([gate.weight, up.weight], dim=1).reshape(2 * self.intermediate, self.in_features)
            self.gate_up = nn.Parameter(w, requires_grad=gate.weight.requires_grad)
            b = None
            if gate.bias is not None:
                b = nn.Parameter(torch.stack([gate.bias, up.bias], dim=1).reshape(-1))
        self.gate_up_bias = b
        self.down = Linear(mlp.down_proj)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _training(x, self.gate_up):  # the fused epilogue has no backward: SwiGLU in torch
            g = _ops.eager(_ops.linear, x, self.gate_up, self.gate_up_bias, None, "")
            return self.down(F.silu(g[..., 0::2]) * g[..., 1::2])
        return self.down(_ops.eager(_ops.linear, x, self.gate_up, self.gate_up_bias, None, "swiglu"))

    def problems(self, tokens: Sequence[int], dtype: str, backward: bool = False) -> list[str]:
        n, k, bias = 2 * self.intermediate, self.in_features, self.gate_up_bias is not None
        if backward:
            return _training_specs(tokens, n, k, dtype, bias) + self.down.problems(tokens, dtype, True)
        return ([_ops.gemm_spec(m, n, k, dtype, bias=bias, epilogue="swiglu") for m in tokens]
                + self.down.problems(tokens, dtype))


class RMSNorm(nn.Module):
    def __init__(self, weight: nn.Parameter, eps: float):
        super().__init__()
        self.weight, self.eps = weight, float(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _training(x, self.weight):  # the row ops have no backward
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        return _ops.eager(_ops.rms_norm, x, self.weight, self.eps)

    def problems(self, tokens: Sequence[int], dtype: str, backward: bool = False) -> list[str]:
        if backward:  # the norms run in torch while gradients are needed
            return []
        return [f"rmsnorm:{m}x{self.weight.shape[0]}:{dtype}" for m in tokens]


class LayerNorm(nn.Module):
    def __init__(self, src: nn.LayerNorm):
        super().__init__()
        self.weight, self.bias, self.eps = src.weight, src.bias, float(src.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _training(x, self.weight):
            return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)
        return _ops.eager(_ops.layer_norm, x, self.weight, self.bias, self.eps)

    def problems(self, tokens: Sequence[int], dtype: str, backward: bool = False) -> list[str]:
        if backward:  # the norms run in torch while gradients are needed
            return []
        return [f"layernorm:{m}x{self.weight.shape[0]}:{dtype}" for m in tokens]


def _is_gated_mlp(m: nn.Module) -> bool:
    parts = [getattr(m, n, None) for n in ("gate_proj", "up_proj", "down_proj")]
    act = getattr(m, "act_fn", None)
    return (all(isinstance(p, nn.Linear) for p in parts) and isinstance(act, nn.Module) and _activation(act) == "silu"
            and parts[0].weight.shape == parts[1].weight.shape and (parts[0].bias is None) == (parts[1].bias is None))


def _rms_eps(m: nn.Module) -> float | None:
    if isinstance(m, getattr(nn, "RMSNorm", ())) and m.weight is not None:
        return m.eps if m.eps is not None else torch.finfo(m.weight.dtype).eps
    if type(m).__name__.endswith("RMSNorm") and isinstance(getattr(m, "weight", None), nn.Parameter):
        eps = getattr(m, "variance_epsilon", getattr(m, "eps", None))
        return float(eps) if eps is not None and m.weight.dim() == 1 else None
    return None


def _replacement(m: nn.Module) -> nn.Module | None:
    if _is_gated_mlp(m):
        return GatedMLP(m)
    if isinstance(m, nn.Linear):
        return Linear(m)
    if (eps := _rms_eps(m)) is not None:
        return RMSNorm(m.weight, eps)
    if isinstance(m, nn.LayerNorm) and m.weight is not None and m.bias is not None and len(m.normalized_shape) == 1:
        return LayerNorm(m)
    return None


def _swap(module: nn.Module) -> None:
    if isinstance(module, nn.Sequential):
        # Linear followed by an activation: one GEMM with the activation as its epilogue.
        for i in range(len(module) - 1):
            act = _activation(module[i + 1])
            if isinstance(module[i], nn.Linear) and act:
                module[i], module[i + 1] = Linear(module[i], act), nn.Identity()
    for name, child in module.named_children():
        new = _replacement(child)
        if new is not None:
            setattr(module, name, new)
        else:
            _swap(child)


def _training_specs(tokens: Sequence[int], n: int, k: int, dtype: str, bias: bool) -> list[str]:
    """A trained Linear's GEMMs: forward without a fused epilogue, dX = dY W (M x K x N) and
    dW = dY^T X (N x K x M), both layout NN."""
    out = []
    for m in tokens:
        out += [_ops.gemm_spec(m, n, k, dtype, bias=bias), _ops.gemm_spec(m, k, n, dtype, "nn"),
                _ops.gemm_spec(n, k, m, dtype, "nn")]
    return out


def problems(model: nn.Module, tokens: Iterable[int], dtype: str = "bf16", backward: bool = False) -> list[str]:
    """The GEMMs and row ops an optimized model runs at these token counts (batch x sequence);
    with backward, those of a training step."""
    tokens = list(tokens)
    seen, out = set(), []

    def add(specs):
        for p in specs:
            if p not in seen:
                seen.add(p)
                out.append(p)

    for m in model.modules():
        if isinstance(m, (Linear, GatedMLP, RMSNorm, LayerNorm)):
            add(m.problems(tokens, dtype, backward))
    if not backward:
        # Under torch.compile a residual add folds into the GEMM before it (passes.py): a Linear
        # as wide as the residual stream (the norms' width) runs with a residual there.
        widths = {m.weight.shape[0] for m in model.modules() if isinstance(m, (RMSNorm, LayerNorm))}
        for m in model.modules():
            if isinstance(m, Linear) and not m.epilogue and m.out_features in widths:
                add(_ops.gemm_spec(t, m.out_features, m.in_features, dtype, bias=m.bias is not None, residual=True)
                    for t in tokens)
    return out


def optimize(model: nn.Module, example_inputs=None, *, tokens: Iterable[int] | None = None, tune: bool = True,
             backward: bool | None = None, search: str = "fast", backends: Iterable[str] = (),
             progress: bool = True) -> nn.Module:
    """Replaces the model's modules in place (see the module's doc) and returns it. With tune, the
    GEMMs and row ops it runs at `tokens` (token counts: batch x sequence) are tuned into the DB;
    without tokens, they are read off example_inputs (a tensor or a tuple, the first of which is
    [batch, seq, ...] or [tokens, ...]). backward (default: gradients are enabled and the model has
    trainable parameters) tunes a training step's GEMMs instead. Outputs match the original's
    within bf16 tolerance."""
    dtype = next((p.dtype for p in model.parameters()), torch.bfloat16)
    if backward is None:
        backward = torch.is_grad_enabled() and any(p.requires_grad for p in model.parameters())
    _check_dtype(dtype)
    _swap(model)
    passes.install()  # under torch.compile, residual adds fold into the GEMMs
    if isinstance(model, nn.Module) and (new := _replacement(model)) is not None:
        model = new
    if tune:
        if tokens is None:
            tokens = [_tokens_of(example_inputs)] if example_inputs is not None else []
        todo = problems(model, tokens, _ops._GEMM_DTYPES[dtype], backward)
        if todo:
            _tune.tune(todo, search=search, backends=backends, progress=progress)
            _ops.reset()  # the runtimes read the new decisions
    return model


def _check_dtype(dtype: torch.dtype) -> None:
    if dtype not in _ops._GEMM_DTYPES:
        raise _C.Error(f"gemmforge.torch.optimize: the model is {dtype}; gemmforge's GEMMs take bf16 or f16 "
                       "(model.to(torch.bfloat16) first)")


def _tokens_of(example_inputs) -> int:
    x = example_inputs[0] if isinstance(example_inputs, (tuple, list)) else example_inputs
    if not isinstance(x, torch.Tensor) or x.dim() < 1:
        raise _C.Error("gemmforge.torch.optimize: example_inputs must be a tensor (or start with one)")
    return x.numel() // x.shape[-1] if x.is_floating_point() else x.numel()
