"""gemmforge's memory-bound row ops in CuTe DSL: softmax and RMSNorm over the rows of a rows x cols
row-major tensor, fp32 math, bf16/f16/f32 in and out (the DSL twin of kernels/rowops/, register path).

Every row is read once and written once: a group of `threads / rows_per_cta` threads holds its part
of a row in registers, `iters` 16-byte vectors a thread (vector it of thread lane is the part's
vector it * group + lane, so a warp's accesses are contiguous). Short rows share a CTA
(rows_per_cta groups); long rows are split over a cluster of `cluster` CTAs whose partial
statistics meet in distributed shared memory (st.async into every peer, counted on its mbarrier).

One kernel serves any runtime shape within its capacity: cols % vec == 0 and cols <= group * vec *
iters * cluster, rows >= 1, and a runtime row stride. The cluster splits a row evenly at runtime
(ceil(cols / vec / cluster) vectors a CTA), so the CTAs of a cluster share the work of a row
that is shorter than the capacity. Vectors past cols, and rows past rows, are neither read nor
written; they still take part in the barriers.

Grid: one CTA per cluster part of every rows_per_cta rows, ceil(rows / rows_per_cta) * cluster
CTAs along x (a cluster's CTAs consecutive). Not persistent: each CTA reduces once, so its
shared-memory slots and its mbarrier are used once (no phase tracking, no reuse hazards).
"""
import math

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils

from rowop_config import RowConfig

LOG2E = math.log2(math.e)


def butterfly_offsets(width: int):
    """Lane offsets of a butterfly over `width` lanes: width / 2, ..., 1."""
    return [1 << i for i in reversed(range(width.bit_length() - 1))]


class RowOp:
    def __init__(self, cfg: RowConfig, in_dtype, out_dtype):
        cfg.check(in_dtype)
        self.cfg = cfg
        self.in_dtype = in_dtype
        self.out_dtype = out_dtype
        self.threads = cfg.threads

    # ---------------------------------------------------------------- host side

    @cute.jit
    def __call__(self, x: cute.Tensor, y: cute.Tensor, weight: cute.Tensor, residual: cute.Tensor,
                 residual_out: cute.Tensor, valid_len: cute.Tensor, scale: cutlass.Float32, eps: cutlass.Float32,
                 stream: cuda.CUstream):
        """x, y, residual, residual_out: rows x cols (runtime row strides); weight: cols; valid_len:
        rows (Int32). The operands the config does not use are never touched (stand-ins will do)."""
        c = self.cfg
        if cutlass.const_expr(x.element_type != self.in_dtype or y.element_type != self.out_dtype):
            raise TypeError("x and y must have the dtypes RowOp was made for")
        warp_words = c.rows_per_cta * c.group_warps * c.stat_words
        cluster_words = c.cluster * c.stat_words

        @cute.struct
        class Shared:
            mbar: cute.struct.MemRange[cutlass.Int64, 1]
            warp_slots: cute.struct.MemRange[cutlass.Float32, warp_words]
            cluster_slots: cute.struct.MemRange[cutlass.Float32, cluster_words]

        self.shared = Shared
        rows = cute.size(x, mode=[0])
        grid = [(rows + c.rows_per_cta - 1) // c.rows_per_cta * c.cluster, 1, 1]
        # A cluster of one is launched as a plain grid: the cluster launch path hands out CTAs more
        # slowly, which short rows (a CTA a few microseconds long) feel.
        clusters = {"cluster": [c.cluster, 1, 1]} if c.cluster > 1 else {}
        self.kernel(x, y, weight, residual, residual_out, valid_len, scale, eps).launch(
            grid=grid, block=[c.threads, 1, 1], stream=stream, **clusters)

    # -------------------------------------------------------------- device side

    @cute.kernel
    def kernel(self, x: cute.Tensor, y: cute.Tensor, weight: cute.Tensor, residual: cute.Tensor,
               residual_out: cute.Tensor, valid_len: cute.Tensor, scale: cutlass.Float32, eps: cutlass.Float32):
        c = self.cfg
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        group, lane = tidx // c.group, tidx % c.group
        row = bidx // c.cluster * c.rows_per_cta + group
        part = bidx % c.cluster  # = the CTA's rank in its cluster (clusters run along x)
        rows, cols = cute.size(x, mode=[0]), cute.size(x, mode=[1])
        live = row < rows
        # This CTA's vectors of the row: [first, end) of the row's cols / vec.
        vecs = cols // c.vec
        part_vecs = (vecs + c.cluster - 1) // c.cluster
        first = part * part_vecs
        end = cutlass.min(first + part_vecs, vecs)

        smem = utils.SmemAllocator()
        shared = smem.allocate(self.shared)
        if cutlass.const_expr(c.cluster > 1):
            # One mbarrier counts the cluster's partials in (one arrival: thread 0's expect_tx).
            # The peers may store into it only once it is initialised: the cluster barrier
            # (arrived here, waited for just before the first store, so the loads overlap it).
            mbar = shared.mbar.data_ptr()
            if tidx == 0:
                cute.arch.mbarrier_init(mbar, 1)
                cute.arch.mbarrier_init_fence()
                cute.arch.mbarrier_arrive_and_expect_tx(mbar, c.cluster * c.stat_words * 4)
            cute.arch.cluster_arrive_relaxed()

        # ---- the row's vectors into registers, as loaded (16-byte accesses; rows and vectors
        # past the edges are skipped and read as zeros)
        at = (row, live, first, end, lane)
        held = self.load_part(x, at)
        if cutlass.const_expr(c.kind == "rmsnorm" and c.residual):
            res = self.load_part(residual, at)
            # h = x + residual, rounded to the input dtype as stored: the norm is of what goes out.
            held.store((held.load().to(cutlass.Float32) + res.load().to(cutlass.Float32)).to(self.in_dtype))
            for it in cutlass.range_constexpr(c.iters):
                v = first + it * c.group + lane
                if live and v < end:
                    cute.autovec_copy(held[None, it], self.vector(residual_out, row, v))

        if cutlass.const_expr(c.kind == "softmax"):
            self.softmax(held, y, valid_len, scale, shared, at, cols, group, tidx, part)
        else:
            self.rmsnorm(held, y, weight, eps, shared, at, cols, group, tidx, part)

    @cute.jit
    def vector(self, t: cute.Tensor, row, v):
        """Vector v (vec elements) of row `row` of t: 16-byte aligned, since the row stride and
        cols are multiples of vec and the base is 16-byte aligned (fake_operands says so)."""
        return cute.local_tile(t, (1, self.cfg.vec), (row, v))[0, None]

    @cute.jit
    def load_part(self, t: cute.Tensor, at):
        """This thread's vectors of its row of t (the input dtype), as loaded; zeros for vectors
        and rows past the edges."""
        row, live, first, end, lane = at
        c = self.cfg
        part = cute.make_rmem_tensor((c.vec, c.iters), self.in_dtype)
        part.fill(0.0)
        for it in cutlass.range_constexpr(c.iters):
            v = first + it * c.group + lane
            if live and v < end:
                cute.autovec_copy(self.vector(t, row, v), part[None, it])
        return part

    @cute.jit
    def store(self, vals: cute.Tensor, y: cute.Tensor, at, it: cutlass.Constexpr):
        """The thread's vector it (vec fp32 values) into y, in y's dtype, unless it lies past the
        edges. Stored as soon as computed: the outputs never all wait in registers."""
        row, live, first, end, lane = at
        out = cute.make_rmem_tensor((self.cfg.vec,), self.out_dtype)
        out.store(vals.load().to(self.out_dtype))
        v = first + it * self.cfg.group + lane
        if live and v < end:
            cute.autovec_copy(out, self.vector(y, row, v))

    @cute.jit
    def row_again(self, held: cute.Tensor):
        """The row as loaded, for the pass after the reduction. Where its fp32 values do not fit
        the registers, through an opaque identity (prmt): else the compiler reuses the values
        widened before the reduction and keeps them all alive across it (spills)."""
        if cutlass.const_expr(self.cfg.holds_fp32()):
            return held
        words = cute.recast_tensor(held, cutlass.Int32)
        fresh = cute.make_rmem_tensor(words.layout, cutlass.Int32)
        for i in cutlass.range_constexpr(cute.size(words)):
            fresh[i] = cutlass.Int32(cute.arch.prmt(words[i], 0, 0x3210))
        return cute.recast_tensor(fresh, self.in_dtype)

    @cute.jit
    def softmax(self, held: cute.Tensor, y: cute.Tensor, valid_len: cute.Tensor, scale: cutlass.Float32, shared,
                at, cols, group, tidx, part):
        """y = e^(t - max t) / sum over the row, t = x * scale, in base 2 (log2 e folded into the
        scale). The row's (max, sum) pair is reduced once: each thread's sum is of exponentials
        against its own max, rebased to the row's when the pairs are combined (online softmax)."""
        c = self.cfg
        f32 = cutlass.Float32
        ninf = -f32.inf
        row, live, first, end, lane = at
        limit = cols
        if cutlass.const_expr(c.valid_len):
            n = cutlass.Int32(0)
            if live:
                n = valid_len[row]
            limit = cutlass.min(n, cols)
        slope = scale * f32(LOG2E)

        def ok_at(it, e):
            v = first + it * c.group + lane
            ok = live and v < end
            if cutlass.const_expr(c.valid_len):
                ok = ok and v * c.vec + e < limit
            return ok

        def t(src, it, e):
            """t * log2 e of element e of vector it of src (the row as loaded); -inf where masked
            (adds nothing, whatever x holds there)."""
            return cutlass.select_(ok_at(it, e), src[e, it].to(f32) * slope, ninf)

        def ref(m):
            """What exponentials are taken against for a max m: never -inf (-inf - -inf is NaN);
            e^(-inf - 0) = 0 and NaN stays NaN. fmax drops NaN: it reaches the sum through its
            exponential (and +inf through e^(inf - inf))."""
            return cutlass.select_(m == ninf, f32(0.0), m)

        m, s = ninf, f32(0.0)
        keep = c.holds_fp32()
        if cutlass.const_expr(keep):
            # u holds t, then e^(t - m): one exponential an element.
            u = cute.make_rmem_tensor((c.vec, c.iters), f32)
            chains = 4 if c.values_per_thread >= 16 else 1  # independent max and sum chains
            mc = [ninf] * chains
            for i in cutlass.range_constexpr(c.values_per_thread):
                u[i] = t(held, i // c.vec, i % c.vec)
                mc[i % chains] = cute.arch.fmax(mc[i % chains], u[i])
            for k in cutlass.range_constexpr(chains):
                m = cute.arch.fmax(m, mc[k])
            sc = [f32(0.0)] * chains
            for i in cutlass.range_constexpr(c.values_per_thread):
                u[i] = cute.math.exp2(u[i] - ref(m), fastmath=True)
                sc[i % chains] = sc[i % chains] + u[i]
            for k in cutlass.range_constexpr(chains):
                s = s + sc[k]
        else:
            # Too many values for fp32 registers: a running (max, sum) rebased once a vector, so
            # only one vector's t is alive at a time; the outputs take the exponentials again.
            for it in cutlass.range_constexpr(c.iters):
                ts = [t(held, it, e) for e in range(c.vec)]
                m_new = m
                for e in cutlass.range_constexpr(c.vec):
                    m_new = cute.arch.fmax(m_new, ts[e])
                acc = f32(0.0)
                for e in cutlass.range_constexpr(c.vec):
                    acc = acc + cute.math.exp2(ts[e] - ref(m_new), fastmath=True)
                s = s * cute.math.exp2(m - ref(m_new), fastmath=True) + acc
                m = m_new

        row_max, row_sum = self.reduce_row((m, s), shared, group, lane, tidx, part)

        # A NaN sum (a NaN or +inf in the row) makes the row NaN; a row with nothing above -inf
        # is zeros with valid lengths and NaN without (torch's softmax of an all -inf row).
        empty = row_max == ninf
        inv = f32(1.0) / row_sum
        if cutlass.const_expr(c.valid_len):
            inv = cutlass.select_(empty and row_sum == row_sum, f32(0.0), inv)
        else:
            inv = cutlass.select_(empty, f32.nan, inv)
        # The kept exponentials are against m: e^(m - row max) rebases them (0 for m = -inf).
        factor = cute.math.exp2(m - ref(row_max), fastmath=True) * inv
        again = self.row_again(held)
        o = cute.make_rmem_tensor((c.vec,), f32)
        for it in cutlass.range_constexpr(c.iters):
            for e in cutlass.range_constexpr(c.vec):
                if cutlass.const_expr(keep):
                    o[e] = u[e, it] * factor
                else:
                    o[e] = cute.math.exp2(t(again, it, e) - ref(row_max), fastmath=True) * inv
                if cutlass.const_expr(c.valid_len):
                    o[e] = cutlass.select_(ok_at(it, e), o[e], f32(0.0))  # padding is 0, even in a NaN row
            self.store(o, y, at, it)

    @cute.jit
    def rmsnorm(self, held: cute.Tensor, y: cute.Tensor, weight: cute.Tensor, eps: cutlass.Float32, shared, at,
                cols, group, tidx, part):
        """y = h / sqrt(mean(h^2) + eps) * weight in fp32; h stays in registers as loaded (the
        vectors past the edges are zeros, adding nothing)."""
        c = self.cfg
        f32 = cutlass.Float32
        row, live, first, end, lane = at
        chains = 4 if c.values_per_thread >= 16 else 1
        sc = [f32(0.0)] * chains
        for i in cutlass.range_constexpr(c.values_per_thread):
            h = held[i].to(f32)
            sc[i % chains] = sc[i % chains] + h * h
        ss = sc[0]
        for k in cutlass.range_constexpr(1, chains):
            ss = ss + sc[k]
        (total,) = self.reduce_row((ss,), shared, group, lane, tidx, part)
        rstd = cute.math.rsqrt(total / cols.to(f32) + eps, fastmath=True)

        again = self.row_again(held)
        # The weight's vectors are read after the reduction, one at a time (registers).
        w = cute.make_rmem_tensor((c.vec,), self.in_dtype)
        o = cute.make_rmem_tensor((c.vec,), f32)
        for it in cutlass.range_constexpr(c.iters):
            v = first + it * c.group + lane
            w.fill(0.0)
            if live and v < end:
                cute.autovec_copy(cute.local_tile(weight, (c.vec,), (v,)), w)
            for e in cutlass.range_constexpr(c.vec):
                o[e] = again[e, it].to(f32) * rstd * w[e].to(f32)
            self.store(o, y, at, it)

    # ---------------------------------------------------------------- reductions

    @cute.jit
    def combine(self, vals, width: cutlass.Constexpr):
        """vals combined over aligned groups of `width` lanes (a power of two, <= 32) by a
        butterfly: every lane of a group ends with the same bits. Softmax takes the max first and
        rebases each lane's sum to it once (one exponential a lane, not one a step)."""
        offsets = butterfly_offsets(width)
        if cutlass.const_expr(self.cfg.kind == "softmax"):
            m, s = vals
            row_max = m
            for o in cutlass.range_constexpr(len(offsets)):
                row_max = cute.arch.fmax(row_max, cute.arch.shuffle_sync_bfly(row_max, offset=offsets[o]))
            # e^(m - max) with -inf for max -inf: a part with nothing above -inf adds its 0 (or NaN).
            s = s * cute.math.exp2(m - cutlass.select_(row_max == -cutlass.Float32.inf, cutlass.Float32(0.0),
                                                       row_max), fastmath=True)
            for o in cutlass.range_constexpr(len(offsets)):
                s = s + cute.arch.shuffle_sync_bfly(s, offset=offsets[o])
            return (row_max, s)
        (total,) = vals
        for o in cutlass.range_constexpr(len(offsets)):
            total = total + cute.arch.shuffle_sync_bfly(total, offset=offsets[o])
        return (total,)

    @cute.jit
    def reduce_row(self, vals, shared, group, lane, tidx, part):
        """vals (the thread's partial statistic) combined over the row: the group's lanes
        (shuffles), the group's warps (shared memory), the cluster's CTAs (distributed shared
        memory). Every thread of the group ends with the row's statistic."""
        c = self.cfg
        words = c.stat_words
        vals = self.combine(vals, min(c.group, 32))
        if cutlass.const_expr(c.group_warps > 1):
            # Lane 0 of each warp leaves the warp's partial in slot (group, warp); then lane l of
            # every warp reads the group's slot l % warps and the warps' partials are combined
            # the same way (slot k of word i at i * n + k).
            n = c.rows_per_cta * c.group_warps
            slots = shared.warp_slots.data_ptr()
            if tidx % 32 == 0:
                for i in cutlass.range_constexpr(words):
                    slots[i * n + group * c.group_warps + lane // 32] = vals[i]
            cute.arch.sync_threads()
            mine = group * c.group_warps + tidx % c.group_warps
            vals = self.combine(tuple(slots[i * n + mine] for i in range(words)), c.group_warps)
        if cutlass.const_expr(c.cluster > 1):
            # Thread r stores this CTA's partial into slot `part` of CTA r (every thread holds it),
            # completing on r's mbarrier; each CTA waits for all of the cluster's partials, so none
            # leaves while a peer's store to it is still on its way.
            slots = shared.cluster_slots.data_ptr()
            mbar = shared.mbar.data_ptr()
            cute.arch.cluster_wait()  # every peer's mbarrier is initialised
            if tidx < c.cluster:
                for i in cutlass.range_constexpr(words):
                    cute.arch.store_async_dsmem(slots + (i * c.cluster + part), vals[i].bitcast(cutlass.Int32),
                                                mbar, tidx)
            cute.arch.mbarrier_wait(mbar, 0)
            mine = tidx % c.cluster
            vals = self.combine(tuple(slots[i * c.cluster + mine] for i in range(words)), c.cluster)
        return vals
