"""gemmforge for PyTorch: custom ops torch.compile keeps, and optimize(model).

Importing this module registers torch.ops.gemmforge.{linear, mm, rms_norm, fused_add_rms_norm,
layer_norm, softmax, swiglu, gelu, scaled_mm, quantize_fp8, quantize_fp8_static,
quantize_fp8_delayed}. Tensors cross as data pointers on
torch's current stream, so the package depends on no torch C++ ABI. gemmforge.torch.inductor is the
other route into torch.compile (see its doc).
"""
from ._ops import (  # noqa: F401
    fused_add_rms_norm,
    gelu,
    gemm_spec,
    layer_norm,
    linear,
    mm,
    quantize_fp8,
    quantize_fp8_delayed,
    quantize_fp8_static,
    prepare,
    reset,
    rms_norm,
    scaled_mm,
    softmax,
    swiglu,
)
from .optimize import GatedMLP, LayerNorm, Linear, RMSNorm, optimize, problems  # noqa: F401
