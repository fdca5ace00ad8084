"""gemmforge's Triton row ops: softmax and RMSNorm over the last dimension of a rows x cols
row-major tensor, in fp32, R rows a program.

Two shapes of kernel, by SINGLE: the whole row in one block of BLOCK >= cols columns (one read of
x, one write of y), or a loop over BLOCK-column chunks: softmax keeps a running (max, sum) in a
first pass and reads the row again to write it; RMSNorm sums squares in a first pass (writing the
residual sum as it goes) and reads x (and the residual) again to scale it. The semantics are the native
kernels' (kernels/rowops/softmax.cuh, rmsnorm.cuh): a NaN or +inf makes a softmax row NaN, a row
with nothing above -inf is zeros with a valid length and NaN without; RMSNorm's residual sum is
rounded to x's dtype, written out, and normed as rounded.

Every template takes the same runtime arguments (worker.py ROWOP_ARGS); the ones an op does not use
are never touched.
"""
import triton
import triton.language as tl


@triton.jit
def _softmax_chunk(x, rows, row_ok, limit, start, COLS, scale, BLOCK: tl.constexpr):
    """t = x * scale over one chunk (masked columns: -inf) and its max per row."""
    cols = start + tl.arange(0, BLOCK)[None, :]
    t = tl.load(x + rows * COLS + cols, mask=row_ok & (cols < COLS), other=0.0).to(tl.float32) * scale
    t = tl.where(cols < limit, t, float("-inf"))
    m = tl.max(t, 1)[:, None]
    return t, m


@triton.jit
def softmax(x, y, weight, residual, residual_out, valid_len, ROWS, COLS, scale, eps,
            BLOCK: tl.constexpr, R: tl.constexpr, SINGLE: tl.constexpr, VALID: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * R + tl.arange(0, R)[:, None]
    row_ok = rows < ROWS
    limit = tl.load(valid_len + rows, mask=row_ok, other=0) if VALID else COLS
    if SINGLE:
        t, m = _softmax_chunk(x, rows, row_ok, limit, 0, COLS, scale, BLOCK)
        shift = tl.where(m == float("-inf"), 0.0, m)
        e = tl.exp(t - shift)
        s = tl.sum(e, 1)[:, None]
    else:
        shift = tl.zeros([R, 1], tl.float32)  # the running max, 0 while it is -inf
        m = tl.full([R, 1], float("-inf"), tl.float32)
        s = tl.zeros([R, 1], tl.float32)
        for start in range(0, COLS, BLOCK):
            t, cm = _softmax_chunk(x, rows, row_ok, limit, start, COLS, scale, BLOCK)
            m = tl.maximum(m, cm, propagate_nan=tl.PropagateNan.ALL)
            new_shift = tl.where(m == float("-inf"), 0.0, m)
            s = s * tl.exp(shift - new_shift) + tl.sum(tl.exp(t - new_shift), 1)[:, None]
            shift = new_shift
    # An empty row: zeros where it has a valid length (padding), NaN where it has none (torch).
    inv = tl.where(s == 0.0, 0.0, 1.0 / s) if VALID else 1.0 / s
    if SINGLE:
        cols = tl.arange(0, BLOCK)[None, :]
        tl.store(y + rows * COLS + cols, (e * inv).to(y.dtype.element_ty), mask=row_ok & (cols < COLS))
    else:
        for start in range(0, COLS, BLOCK):
            cols = start + tl.arange(0, BLOCK)[None, :]
            t = tl.load(x + rows * COLS + cols, mask=row_ok & (cols < COLS), other=0.0).to(tl.float32) * scale
            t = tl.where(cols < limit, t, float("-inf"))
            tl.store(y + rows * COLS + cols, (tl.exp(t - shift) * inv).to(y.dtype.element_ty),
                     mask=row_ok & (cols < COLS))


@triton.jit
def _rmsnorm_load(x, residual, residual_out, offsets, mask, RESIDUAL: tl.constexpr, WRITE: tl.constexpr):
    """x as fp32, or x + residual rounded to x's dtype (written to residual_out with WRITE)."""
    h = tl.load(x + offsets, mask=mask, other=0.0)
    if RESIDUAL:
        h = (h.to(tl.float32) + tl.load(residual + offsets, mask=mask, other=0.0).to(tl.float32)).to(h.dtype)
        if WRITE:
            tl.store(residual_out + offsets, h, mask=mask)
    return h.to(tl.float32)


@triton.jit
def rmsnorm(x, y, weight, residual, residual_out, valid_len, ROWS, COLS, scale, eps,
            BLOCK: tl.constexpr, R: tl.constexpr, SINGLE: tl.constexpr, RESIDUAL: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * R + tl.arange(0, R)[:, None]
    row_ok = rows < ROWS
    if SINGLE:
        cols = tl.arange(0, BLOCK)[None, :]
        mask = row_ok & (cols < COLS)
        h = _rmsnorm_load(x, residual, residual_out, rows * COLS + cols, mask, RESIDUAL, True)
        rstd = tl.rsqrt(tl.sum(h * h, 1)[:, None] / COLS + eps)
        w = tl.load(weight + cols, mask=cols < COLS, other=0.0).to(tl.float32)
        tl.store(y + rows * COLS + cols, (h * rstd * w).to(y.dtype.element_ty), mask=mask)
    else:
        ss = tl.zeros([R, 1], tl.float32)
        for start in range(0, COLS, BLOCK):
            cols = start + tl.arange(0, BLOCK)[None, :]
            h = _rmsnorm_load(x, residual, residual_out, rows * COLS + cols, row_ok & (cols < COLS), RESIDUAL, True)
            ss += tl.sum(h * h, 1)[:, None]
        rstd = tl.rsqrt(ss / COLS + eps)
        # The second pass adds the residual again: reading residual_out back would need a barrier
        # between the threads that wrote it and those that read it.
        for start in range(0, COLS, BLOCK):
            cols = start + tl.arange(0, BLOCK)[None, :]
            mask = row_ok & (cols < COLS)
            h = _rmsnorm_load(x, residual, residual_out, rows * COLS + cols, mask, RESIDUAL, False)
            w = tl.load(weight + cols, mask=cols < COLS, other=0.0).to(tl.float32)
            tl.store(y + rows * COLS + cols, (h * rstd * w).to(y.dtype.element_ty), mask=mask)


ROWOPS = {"softmax": softmax, "rmsnorm": rmsnorm}
