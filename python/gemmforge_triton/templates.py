"""gemmforge's Triton GEMM templates: D = epilogue(A B^T) (layout tn) or epilogue(A B) (layout nn).

Both take the same runtime arguments, in this order (the C++ launcher passes exactly these):
    a, b, d, c, bias (pointers; c and bias may be 0), M, N, K, OUT_COLS (i32), alpha, beta (fp32),
    scale_a, scale_b (fp32 pointers, fp8 only; may be 0)
followed by the two scratch pointers every Triton 3.6 kernel takes. The epilogue is chosen by
constexprs that carry the names of gemmforge/codes.hpp: ACT ("none", "relu", "gelu", "gelu_tanh",
"silu"), BIAS ("none", "col", "row"), HAS_C, GATE ("none", "interleaved" gate/up columns, "split"
halves), SCALE ("none", "tensor": one float each, "rowcol": one per row of A and per row of W).
"""
import triton
import triton.language as tl


@triton.jit
def _activate(x, ACT: tl.constexpr):
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    elif ACT == "gelu":
        x = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    elif ACT == "gelu_tanh":
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        x = 0.5 * x * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0))
    elif ACT == "silu":
        x = x * tl.sigmoid(x)
    return x


@triton.jit
def _epilogue(acc, acc_up, rm, rn, d, c, bias, M, N, OUT_COLS, alpha, beta, scale_a, scale_b,
              ACT: tl.constexpr, BIAS: tl.constexpr, HAS_C: tl.constexpr, GATE: tl.constexpr,
              SCALE: tl.constexpr):
    """Applies the epilogue to the fp32 tile of rows rm, output columns rn and stores it."""
    # fp8 dequantisation first (scales apply to the product only; gated problems take none).
    if SCALE == "tensor":
        acc = acc * (tl.load(scale_a) * tl.load(scale_b))
    elif SCALE == "rowcol":
        sa = tl.load(scale_a + rm, mask=rm < M, other=0.0)
        sb = tl.load(scale_b + rn, mask=rn < N, other=0.0)
        acc = acc * sa[:, None] * sb[None, :]
    if GATE == "split":
        # acc holds gate columns rn, acc_up the up columns N/2 + rn.
        g = acc * alpha
        u = acc_up * alpha
        if BIAS == "col":
            g += tl.load(bias + rn, mask=rn < OUT_COLS, other=0.0).to(tl.float32)[None, :]
            u += tl.load(bias + OUT_COLS + rn, mask=rn < OUT_COLS, other=0.0).to(tl.float32)[None, :]
        out = g * tl.sigmoid(g) * u
    elif GATE == "interleaved":
        # Columns 2j and 2j+1 of the tile are gate and up of output column j.
        v = acc * alpha
        if BIAS == "col":
            cols = rn[:, None] * 2 + tl.arange(0, 2)[None, :]
            bv = tl.load(bias + cols, mask=cols < N, other=0.0).to(tl.float32)
            v = v + tl.reshape(bv, (1, v.shape[1]))
        g, u = tl.split(tl.reshape(v, (v.shape[0], v.shape[1] // 2, 2)))
        out = g * tl.sigmoid(g) * u
    else:
        out = acc * alpha
        if HAS_C:
            cv = tl.load(c + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
            out += beta * cv.to(tl.float32)
        if BIAS == "col":
            out += tl.load(bias + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
        if BIAS == "row":
            out += tl.load(bias + rm, mask=rm < M, other=0.0).to(tl.float32)[:, None]
        out = _activate(out, ACT)
    mask = (rm[:, None] < M) & (rn[None, :] < OUT_COLS)
    tl.store(d + rm[:, None] * OUT_COLS + rn[None, :], out.to(d.dtype.element_ty), mask=mask)


@triton.jit
def _tile_coords(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Grouped order: GROUP_M row tiles are swept together so their A rows stay in L2."""
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_n
    first = pid // per_group * GROUP_M
    size = min(num_m - first, GROUP_M)
    pm = first + (pid % per_group) % size
    pn = (pid % per_group) // size
    return pm, pn


@triton.jit
def _load_b(b, rn, kk, N, K, NN: tl.constexpr):
    """The [BLOCK_K, BLOCK_N] tile of B^T: rows kk, columns rn."""
    mask = (rn[None, :] < N) & (kk[:, None] < K)
    if NN:
        return tl.load(b + kk[:, None] * N + rn[None, :], mask=mask, other=0.0)
    return tl.load(b + rn[None, :] * K + kk[:, None], mask=mask, other=0.0)


@triton.jit
def mm(a, b, d, c, bias, M, N, K, OUT_COLS, alpha, beta, scale_a, scale_b,
       ACT: tl.constexpr, BIAS: tl.constexpr, HAS_C: tl.constexpr, GATE: tl.constexpr, SCALE: tl.constexpr,
       NN: tl.constexpr,
       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
       NUM_STAGES: tl.constexpr):
    """The classic tiled GEMM: one program per output tile, pointer loads software-pipelined."""
    # With a split gate, a tile covers BLOCK_N output columns: BLOCK_N gate and BLOCK_N up rows of B.
    pm, pn = _tile_coords(tl.program_id(0), M, N // 2 if GATE == "split" else N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pm * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pn * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_up = tl.zeros((BLOCK_M, BLOCK_N) if GATE == "split" else (1, 1), dtype=tl.float32)
    for k0 in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
        kk = k0 + rk
        x = tl.load(a + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        if GATE == "split":
            acc = tl.dot(x, _load_b(b, rn, kk, N // 2, K, NN), acc)
            acc_up = tl.dot(x, _load_b(b + (N // 2) * K, rn, kk, N // 2, K, NN), acc_up)
        else:
            acc = tl.dot(x, _load_b(b, rn, kk, N, K, NN), acc)
    if GATE == "interleaved":
        rn = pn * (BLOCK_N // 2) + tl.arange(0, BLOCK_N // 2)
    _epilogue(acc, acc_up, rm, rn, d, c, bias, M, N, OUT_COLS, alpha, beta, scale_a, scale_b, ACT, BIAS, HAS_C, GATE,
              SCALE)


@triton.jit
def mm_persistent_tma(a, b, d, c, bias, M, N, K, OUT_COLS, alpha, beta, scale_a, scale_b,
                      ACT: tl.constexpr, BIAS: tl.constexpr, HAS_C: tl.constexpr, GATE: tl.constexpr,
                      SCALE: tl.constexpr, NN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr):
    """Persistent over output tiles, operands through TMA descriptors built on the device."""
    a_desc = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    if NN:
        b_desc = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    else:
        b_desc = tl.make_tensor_descriptor(b, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True, num_stages=NUM_STAGES):
        pm, pn = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            x = a_desc.load([pm * BLOCK_M, k0])
            if NN:
                y = b_desc.load([k0, pn * BLOCK_N])
            else:
                y = b_desc.load([pn * BLOCK_N, k0]).T
            acc = tl.dot(x, y, acc)
        rm = pm * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pn * BLOCK_N + tl.arange(0, BLOCK_N)
        if GATE == "interleaved":
            rn = pn * (BLOCK_N // 2) + tl.arange(0, BLOCK_N // 2)
        _epilogue(acc, acc, rm, rn, d, c, bias, M, N, OUT_COLS, alpha, beta, scale_a, scale_b, ACT, BIAS, HAS_C,
                  GATE, SCALE)


TEMPLATES = {"mm": mm, "mm_persistent_tma": mm_persistent_tma}
