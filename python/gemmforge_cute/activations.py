"""The epilogue's elementwise math on fp32 values or vectors of them (TensorSSA), as native's
kernels/epilogue/activation.cuh computes it: the sigmoid-shaped activations (SiLU, both GELUs)
as x / (1 + 2^z), one ex2 and one approximate reciprocal of the special-function unit, and
SwiGLU's gate two elements to a reciprocal."""
import cutlass
import cutlass.cute as cute

LOG2E = 1.4426950408889634  # sigmoid(v) = 1 / (1 + 2^(-v log2 e))


def over_one_plus_exp2(v, z, ieee_div: bool):
    """v / (1 + 2^z) for fp32 values (one, or vectors of them): the sigmoid's shape, with the
    exponent's scale folded into z, as native's kernels/epilogue/activation.cuh computes it. One
    ex2 and one approximate reciprocal of the special-function unit, unless ieee_div."""
    one = cutlass.Float32(1.0)
    e = cute.math.exp2(z, fastmath=True)
    if ieee_div:
        return v / (e + one)
    return v * cute.math.rcp(e + one, approx=True, ftz=True)


def swiglu_pair(g0, u0, g1, u1):
    """silu(g0) * u0 and silu(g1) * u1 for fp32 vectors, with one reciprocal of the special-function
    unit for both, 1 / d0 = d1 / (d0 d1) (d = 1 + e^-g): a gated epilogue waits on that unit's 16
    results a clock, two an element before, three a pair now. e^-g is held under 2^62 so that d0 d1
    stays finite: below g = -43 a gate reads g 2^-62 for g e^g, both under 1e-17."""
    def one_plus_exp(g):  # 1 + e^-g, e^-g held under 2^62
        z = g * cutlass.Float32(-LOG2E)
        return cute.math.exp2(cute.math.min(z, cute.full_like(z, 62.0)), fastmath=True) + cutlass.Float32(1.0)
    d0, d1 = one_plus_exp(g0), one_plus_exp(g1)
    r = cute.math.rcp(d0 * d1, approx=True, ftz=True)
    return g0 * u0 * (r * d1), g1 * u1 * (r * d0)  # r d1 = 1 / d0 in (2^-62, 1]


def gelu_erf(v, ieee_div: bool = False):
    """Erf GELU of fp32 values, x * Phi(x), as native computes it: x * sigmoid(g(x)), g(x) =
    x Q(min(x^2, 36)), Q a degree-5 polynomial fitted to logit Phi (Phi is a sigmoid of an odd
    function). Ten instructions of the FMA pipe and two of the special-function unit. Relative
    error under 9e-5 where |GELU| > 1e-3; past |x| = 6 the right tail is x and the left one
    -|x| e^-14|x|; NaN in gives NaN out."""
    f32 = cutlass.Float32
    t = v * v
    t = cute.math.min(t, cute.full_like(t, 36.0)) if isinstance(v, cute.TensorSSA) else cute.arch.fmin(t, f32(36.0))
    q = t * f32(8.09403318e-08) + f32(-4.75585011e-06)  # Q times -log2 e: 2^(x Q(t)) = e^-g(x)
    for c in (8.95168341e-05, 4.48440522e-04, -1.05610073e-01, -2.30170131e+00):
        q = t * q + f32(c)
    return over_one_plus_exp2(v, v * q, ieee_div)


def activate(v, act: str, ieee_div: bool = False):
    """act(v) for an fp32 value or a vector of them (TensorSSA); act is a compile-time string. The
    sigmoid-shaped ones (SiLU, both GELUs) take an approximate reciprocal, not an IEEE division's
    ~10 instructions and slow-path branch, unless ieee_div."""
    f32 = cutlass.Float32
    if act == "relu":
        if isinstance(v, cute.TensorSSA):
            return cute.math.max(v, cute.full_like(v, 0.0))
        return cute.arch.fmax(v, f32(0.0))
    if act == "gelu":
        return gelu_erf(v, ieee_div)
    if act == "gelu_tanh":  # x * sigmoid(2u), u = sqrt(2 / pi) (x + 0.044715 x^3): 1 + tanh(u) = 2 sigmoid(2u)
        c0 = -2.0 * 0.79788456080286536 * LOG2E  # -2 sqrt(2 / pi) log2 e
        return over_one_plus_exp2(v, v * (v * v * f32(c0 * 0.044715) + f32(c0)), ieee_div)
    if act == "silu":  # v / (1 + e^-v)
        return over_one_plus_exp2(v, v * f32(-LOG2E), ieee_div)
    return v
