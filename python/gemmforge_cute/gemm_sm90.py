"""gemmforge's Hopper GEMM in CuTe DSL: D = act(alpha * scale_a * scale_b * A B^T + beta * C + bias),
or D = silu(G_gate) * G_up over the same pre-activation G (SwiGLU).

A is M x K (K-major), B is N x K (K-major: nn.Linear's weight, "tn") or K x N (N-major, "nn"),
D and C are M x N, row-major or M-major (swap-AB: the C++ side hands over the transposed problem,
D^T = B A^T, whose D^T read M-major is D); A and B are 16-bit or fp8 (then with per-tensor or
per-row/column fp32 scales). TMA brings A and B tiles into a ring of shared-memory stages
(multicast across a cluster of CTAs that share a row or a column of tiles), one or two warpgroups
multiply them with wgmma into fp32 registers. The epilogue scales the whole tile's registers and adds
the bias (reading each vector once a row or column the thread holds; the gate's pairs the gate's
and the up rows' halves of the accumulators next), then adds C and activates a store piece at a
time, as they go out through shared memory and a TMA store; C comes in by TMA ahead of it, a piece
at a time, into buffers of its own. Two schedules:
- plain: one CTA a tile; warp 0 keeps the ring full between its own wgmma.
- persistent: one CTA an SM (a cluster per cluster slot), tiles handed out in a static order; a
  producer warpgroup (its registers given to the others) loads the next tile's stages while the
  consumers run this tile's epilogue, which stores through a buffer of its own. Cooperative: the
  consumer warpgroups share each tile. Ping-pong: two consumer warpgroups take every other tile,
  each a whole tile, so one's epilogue runs under the other's multiplies.
M, N and K are runtime values: one compiled kernel serves every shape of its dtypes and layout;
TMA zero-fills the loads past the edges and clips the stores.
SwiGLU: B's gate and up rows (N/2 each; "split": the first and second halves of B, "interleaved":
its even and odd rows) come in through two TMA descriptors, a CTA's gate rows and the matching up
rows into the first and second half of each stage's B rows, and one wgmma as wide as both
multiplies them: a thread holds each gate column c and its up column c + tile_n/2 (wgmma's
columns go in groups of 8 across a thread's registers), so the halves of its accumulators pair
up as the gate's and the up rows' (gate_and_up_accumulators); D has N/2 columns.
"""
from dataclasses import dataclass
import math

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90

SMEM_BYTES = 232448  # sm_90's opt-in shared memory per block
BARRIER_BYTES = 1024  # room for the pipeline's mbarriers
# The persistent schedule's register split (setmaxnreg) with two consumer warpgroups: the producer
# needs few, the consumers' accumulators many (128 x 256 tiles: 128 fp32 a thread). With one
# consumer, 256 threads start with enough.
PRODUCER_REGISTERS = 40
CONSUMER_REGISTERS = 232
# C (the residual) comes in by TMA, a store piece at a time, into buffers of its own: this many
# pieces ahead of the epilogue at least, and as many more as the main loop's stages leave room for
# (a 128 x 256 tile: 6 of its 8). The persistent schedule's loader warp fills them for the next tile
# while its stages multiply, and the one-CTA-a-tile kernel before its main loop, so the epilogue
# finds C in shared memory instead of waiting on each piece's loads from global memory.
C_STAGES = 4


@dataclass(frozen=True)
class Epilogue:
    """What the epilogue does, fixed at compile time (alpha and beta stay runtime values)."""

    act: str = "none"  # none | relu | gelu | gelu_tanh | silu
    bias: str = "none"  # none | col (one per column of D, length N) | row (length M)
    residual: bool = False  # beta * C is added
    # none | tensor (one fp32 each for A and B) | rowcol (M for A's rows, N for B's) | block128 (A's
    # per 1x128 group along K, ceil(K/128) x M; B's per 128x128 block, ceil(N/128) x ceil(K/128)):
    # block scales apply in the main loop, to each k-block's products (promote).
    scale: str = "none"
    gate: str = "none"  # none | split | interleaved: SwiGLU over B's gate and up rows (see the module)

    @property
    def needs_coords(self) -> bool:
        """Whether the epilogue reads vectors (a bias, rowwise scales) at the accumulators'
        coordinates (scale_and_bias)."""
        return self.bias != "none" or self.scale == "rowcol"

    @property
    def block_scaled(self) -> bool:
        return self.scale == "block128"


@dataclass(frozen=True)
class Tiling:
    tile_m: int = 128  # 64 (one warpgroup), 128 (two stacked along M when tile_n > 128) or 256 (two, two M steps)
    tile_n: int = 128  # 64 .. 256
    cluster_m: int = 1  # CTAs of a cluster along M share B's tile by multicast
    cluster_n: int = 1  # ... along N share A's tile
    stages: int = 0  # 0: as many as shared memory holds
    persistent: bool = False  # the warp-specialized persistent schedule (else one CTA a tile)
    split_k: int = 1  # one CTA a tile and a K-slice: the slices' fp32 sums meet in a workspace
    pingpong: bool = False  # persistent: two consumer warpgroups on alternate tiles (else cooperative)


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


def by_row(acc_shape):
    """A layout over wgmma's accumulators a thread, ((2 columns, 2 rows 8 apart, column groups), M
    steps, N steps), that reads each accumulator's row's element of a (2, M steps) tensor: a row's
    value broadcast (stride 0) across its columns, so arithmetic with it is one vector op."""
    assert acc_shape[0][:2] == (2, 2), f"wgmma's accumulators a thread: ((2, 2, groups), M, N), not {acc_shape}"
    return cute.make_layout(acc_shape, stride=((0, 1, 0), 2, 0))


def by_col(acc_shape):
    """The same for each accumulator's column's element of a (2, column groups, N steps) tensor."""
    assert acc_shape[0][:2] == (2, 2), f"wgmma's accumulators a thread: ((2, 2, groups), M, N), not {acc_shape}"
    return cute.make_layout(acc_shape, stride=((1, 0, 2), 0, 2 * acc_shape[0][2]))


class Sm90Gemm:
    def __init__(self, tiling: Tiling, epilogue: Epilogue):
        if tiling.tile_m not in (64, 128, 256):
            raise ValueError(f"tile_m must be 64, 128 or 256, not {tiling.tile_m}")
        if tiling.tile_n not in (16, 32, 64, 96, 128, 160, 192, 224, 256):
            raise ValueError(f"tile_n must be 16, 32 or a multiple of 32 in 64..256, not {tiling.tile_n}")
        if tiling.cluster_m * tiling.cluster_n > 4:
            raise ValueError("a cluster holds at most 4 CTAs here")
        if tiling.split_k > 1 and (tiling.persistent or tiling.cluster_m * tiling.cluster_n > 1):
            raise ValueError("split-K is for the one-CTA-a-tile schedule without clusters")
        if tiling.pingpong and not tiling.persistent:
            raise ValueError("ping-pong is a persistent schedule")
        if tiling.pingpong and tiling.tile_m * tiling.tile_n > 128 * 128:
            raise ValueError("a ping-pong warpgroup holds its whole tile: at most 128 x 128")
        if tiling.tile_m == 256 and (not tiling.persistent or tiling.pingpong or tiling.tile_n > 192):
            raise ValueError("256-row tiles are cooperative persistent, at most 192 wide (two warpgroups of "
                             "two 64-row M steps each, 192 accumulators a thread)")
        if epilogue.gate != "none" and (epilogue.residual or epilogue.act != "none" or epilogue.bias == "row"):
            raise ValueError("SwiGLU takes no residual, activation or per-row bias")
        if epilogue.block_scaled and (tiling.tile_m > 128 or tiling.tile_n not in (64, 128)
                                      or (tiling.pingpong and tiling.tile_m != 64)):
            raise ValueError("block scales: tiles of 64 or 128 rows (ping-pong: 64) and 64 or 128 columns (a tile's "
                             "columns, or a gated tile's gate and up halves, each in one of B's 128-row blocks; the "
                             "k-block's products beside the accumulators take 64 registers a thread more)")
        self.tiling = tiling
        self.epi = epilogue
        self.gated = epilogue.gate != "none"
        # B's block scales a tile takes each k-block: a split gate's gate and up rows lie in blocks of
        # their own (interleaved, both in one).
        self.scale_halves = 2 if epilogue.gate == "split" and epilogue.scale == "block128" else 1
        # C, the gate and the activation go a store piece at a time (store): on the whole tile at
        # once, C's values spill the widest tiles, and so do the gate's exponentials and reciprocals
        # (ptxas hoists them all). The scales and the bias run on the whole tile first
        # (scale_and_bias): a vector's value serves a row or a column of it.
        # Columns of the output tile (and of the epilogue's MMA): a gated CTA multiplies tile_n of
        # B's rows, half gate and half up, into tile_n / 2 output columns.
        self.out_n = tiling.tile_n // 2 if self.gated else tiling.tile_n
        # Warpgroups that multiply one tile: two split a 128-row tile when one would hold too many
        # accumulators (cooperative), and share a 256-row one in the MMA's two M steps of 128 rows
        # (the first warpgroup rows 0-63 and 128-191, the second the rest); a ping-pong
        # warpgroup holds its tile alone.
        # Block scales hold each k-block's products beside the accumulators: two warpgroups a 128-row tile.
        self.warpgroups = 2 if tiling.tile_m == 256 or (tiling.tile_m == 128 and not tiling.pingpong and (
            tiling.tile_n > 128 or epilogue.block_scaled)) else 1
        self.tile_threads = 128 * self.warpgroups
        self.groups = 2 if tiling.pingpong else 1  # consumer groups on different tiles
        self.consumer_threads = self.tile_threads * self.groups
        # The persistent schedule's producer is a warpgroup of its own (setmaxnreg works per warpgroup).
        self.threads = self.consumer_threads + (128 if tiling.persistent else 0)
        self.mcast_a = tiling.cluster_n  # CTAs that receive each A tile
        self.mcast_b = tiling.cluster_m
        # ptxas hoists the approximate reciprocals of every store piece ahead of the first store (an
        # IEEE division's branches keep them in place): in 256-wide tiles beside rowwise scales, or
        # beside 192 accumulators a thread, the DSL's ptxas spilled 8-64 bytes (2026-12-05). There
        # the activations and ping-pong gates divide the IEEE way; the cooperative gate
        # (swiglu_pair) takes half the reciprocals and spills no more than the IEEE division did
        # (2026-12-07).
        accumulators = tiling.tile_m * tiling.tile_n // self.tile_threads
        self.ieee_div = accumulators >= 192 or (tiling.tile_n >= 256 and epilogue.scale == "rowcol")

    # ---------------------------------------------------------------- host side

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, d: cute.Tensor, c: cute.Tensor, bias: cute.Tensor,
                 scale_a: cute.Tensor, scale_b: cute.Tensor, partials: cute.Tensor, counters: cute.Tensor,
                 alpha: cutlass.Float32, beta: cutlass.Float32, max_clusters: cutlass.Int32, stream: cuda.CUstream):
        """max_clusters: the clusters that fit on the GPU at once (the persistent schedule's grid).
        partials and counters: split-K's workspace (reduce_split), zero between launches."""
        t = self.tiling
        self.a_type, self.b_type, self.d_type = a.element_type, b.element_type, d.element_type
        a_major, b_major = utils.LayoutEnum.from_tensor(a), utils.LayoutEnum.from_tensor(b)
        d_layout = self.d_layout = utils.LayoutEnum.from_tensor(d)  # row-major, or M-major (swap-AB's D^T)
        self.mma_kind = (self.a_type, self.b_type, a_major.sm90_mma_major_mode(), b_major.sm90_mma_major_mode(),
                         cutlass.Float32, (self.warpgroups, 1, 1))
        self.mma = sm90.make_trivial_tiled_mma(*self.mma_kind, tiler_mn=(64, self.out_n))
        tile_k = cute.size(self.mma.shape_mnk, mode=[2]) * 4  # four wgmma k-steps a stage: 64 bf16, 128 fp8
        self.tile = (t.tile_m, self.out_n, tile_k)  # the output tile; B's rows a stage: tile_n
        self.tile_mn = (t.tile_m, t.tile_n)  # what the main loop multiplies (gated: gate and up columns)
        self.epi_tile = sm90.compute_tile_shape_or_override(self.tile, self.d_type,
                                                            is_cooperative=self.warpgroups == 2)
        self.epi_stages = 4
        self.pieces_n = self.out_n // self.epi_tile[1]  # store pieces along N; a tile holds self.pieces
        self.pieces = t.tile_m // self.epi_tile[0] * self.pieces_n
        self.piece_bytes = self.epi_tile[0] * self.epi_tile[1] * self.d_type.width // 8
        self.c_stages = min(C_STAGES, self.pieces) if self.epi.residual else 0
        # The plain schedule's epilogue reuses the ring; the persistent one's has its own buffers,
        # since the producer is already filling the ring with the next tile. C's are always its own.
        epi_bytes = self.groups * (self.epi_stages if t.persistent else 0) * self.piece_bytes
        c_bytes = self.groups * self.c_stages * self.piece_bytes
        stage_bytes = (t.tile_m * self.a_type.width + t.tile_n * self.b_type.width) * tile_k // 8
        self.stages = t.stages or (SMEM_BYTES - BARRIER_BYTES - epi_bytes - c_bytes) // stage_bytes
        if cutlass.const_expr(self.epi.residual):  # what the stages leave holds more of C's pieces
            spare = SMEM_BYTES - BARRIER_BYTES - epi_bytes - c_bytes - self.stages * stage_bytes
            self.c_stages = min(self.pieces, self.c_stages + max(spare, 0) // (self.groups * self.piece_bytes))
        a_smem = sm90.make_smem_layout_a(a_major, self.tile, self.a_type, self.stages)
        # B's tile_n rows a stage; gated, its gate rows then its up rows, each half's layout b_half's.
        b_smem = sm90.make_smem_layout_b(b_major, (t.tile_m, t.tile_n, tile_k), self.b_type, self.stages)
        b_half = sm90.make_smem_layout_b(b_major, self.tile, self.b_type, self.stages)
        # Each consumer group stores through epi_stages buffers of its own.
        d_smem = sm90.make_smem_layout_epi(self.d_type, d_layout, self.epi_tile, self.epi_stages * self.groups)
        # C's buffers, like D's (C has D's dtype and layout): c_stages a consumer group.
        c_smem = sm90.make_smem_layout_epi(self.d_type, d_layout, self.epi_tile, max(self.c_stages, 1) * self.groups)

        def load_atom(tensor, smem, rows, mcast):
            op = (cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp() if mcast > 1
                  else cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp())
            return cute.nvgpu.cpasync.make_tiled_tma_atom(op, tensor, cute.slice_(smem, (None, None, 0)),
                                                          (rows, tile_k), num_multicast=mcast)

        tma_a, ta = load_atom(a, a_smem, t.tile_m, self.mcast_a)
        if cutlass.const_expr(self.gated):
            gate, up = self.gate_and_up(b)
            tma_b, tb = load_atom(gate, b_half, self.out_n, self.mcast_b)
            tma_u, tu = load_atom(up, b_half, self.out_n, self.mcast_b)
        else:
            tma_b, tb = load_atom(b, b_smem, t.tile_n, self.mcast_b)
            tma_u, tu = tma_b, tb  # not used
        tma_d, td = cute.nvgpu.cpasync.make_tiled_tma_atom(cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), d,
                                                           cute.slice_(d_smem, (None, None, 0)), self.epi_tile)
        if cutlass.const_expr(self.epi.residual):
            tma_c, tc = cute.nvgpu.cpasync.make_tiled_tma_atom(cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), c,
                                                               cute.slice_(c_smem, (None, None, 0)), self.epi_tile)
        else:
            tma_c, tc = tma_d, td  # not used
        tiles_m = (cute.size(d, mode=[0]) + t.tile_m - 1) // t.tile_m
        tiles_n = (cute.size(d, mode=[1]) + self.out_n - 1) // self.out_n
        cluster = (t.cluster_m, t.cluster_n, 1)
        operands = (tma_a, ta, tma_b, tb, tma_u, tu, tma_d, td, tma_c, tc, c, bias, scale_a, scale_b, alpha, beta,
                    self.mma, a_smem, b_smem, d_smem, c_smem)
        b_elems = cute.cosize(b_smem)
        c_elems = cute.cosize(c_smem) if self.epi.residual else 8
        c_barrier_count = max(self.c_stages, 1) * 2 * self.groups
        # Swizzled buffers start on 1024 bytes; C's, where unused, takes 16 bytes at the end instead
        # (aligned, it would pad a kilobyte the stages count on).
        c_align = 1024 if self.epi.residual else 16
        if cutlass.const_expr(t.persistent):
            @cute.struct
            class SharedPersistent:
                barriers: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
                c_barriers: cute.struct.MemRange[cutlass.Int64, c_barrier_count]
                sa: cute.struct.Align[cute.struct.MemRange[self.a_type, cute.cosize(a_smem)], 1024]
                sb: cute.struct.Align[cute.struct.MemRange[self.b_type, b_elems], 1024]
                sd: cute.struct.Align[cute.struct.MemRange[self.d_type, cute.cosize(d_smem)], 1024]
                sc: cute.struct.Align[cute.struct.MemRange[self.d_type, c_elems], c_align]

            self.shared = self.fits(SharedPersistent)
            schedule = utils.PersistentTileSchedulerParams((tiles_m, tiles_n, 1), cluster)
            grid = utils.StaticPersistentTileScheduler.get_grid_shape(schedule, max_clusters)
            self.persistent_kernel(*operands, schedule).launch(grid=grid, block=[self.threads, 1, 1],
                                                               cluster=cluster, stream=stream)
        else:
            @cute.struct
            class Shared:
                barriers: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
                c_barriers: cute.struct.MemRange[cutlass.Int64, c_barrier_count]
                last: cute.struct.MemRange[cutlass.Int32, 1]  # split-K: the tile's arrivals before this CTA's
                sa: cute.struct.Align[cute.struct.MemRange[self.a_type, cute.cosize(a_smem)], 1024]
                sb: cute.struct.Align[cute.struct.MemRange[self.b_type, b_elems], 1024]
                sc: cute.struct.Align[cute.struct.MemRange[self.d_type, c_elems], c_align]

            self.shared = self.fits(Shared)
            # Whole clusters of tiles; the CTAs past D's edge find nothing to store (TMA clips).
            grid = ((tiles_m + t.cluster_m - 1) // t.cluster_m * t.cluster_m,
                    (tiles_n + t.cluster_n - 1) // t.cluster_n * t.cluster_n, t.split_k)
            self.kernel(*operands, partials, counters).launch(grid=grid, block=[self.threads, 1, 1], cluster=cluster,
                                                              stream=stream)

    def fits(self, shared):
        """shared (the kernel's shared-memory struct), once its size fits sm_90's opt-in limit (the
        launch would fail on the GPU; the compile here would not)."""
        size = -(-shared.size_in_bytes() // 1024) * 1024  # the launch allocates whole kilobytes
        if size > SMEM_BYTES:
            raise ValueError(f"{size} bytes of shared memory, more than sm_90's {SMEM_BYTES}")
        return shared

    @cute.jit
    def gate_and_up(self, b: cute.Tensor):
        """B's gate rows and up rows as two N/2 x K tensors: its halves ("split") or its even and
        odd rows ("interleaved", a doubled row stride). K-major B only; the up rows start 16-byte
        aligned, since B's row pitch is."""
        half = cute.size(b, mode=[0]) // 2
        ld = b.stride[0]
        interleaved = self.epi.gate == "interleaved"
        rows = cute.make_layout((half, cute.size(b, mode=[1])), stride=(ld * 2 if interleaved else ld, 1))
        up_offset = ld if interleaved else half * ld
        up = cute.make_ptr(self.b_type, (b.iterator + up_offset).toint(), cute.AddressSpace.gmem, assumed_align=16)
        return cute.make_tensor(b.iterator, rows), cute.make_tensor(up, rows)

    def multiply_mma(self, mma: cute.TiledMma):
        """The main loop's MMA: mma (the output tile's), or for a gated tile one over both its
        halves of B's rows, gate then up, so each k-step is one wgmma tile_n wide (two of half that
        width re-read A from shared memory)."""
        if cutlass.const_expr(not self.gated):
            return mma
        return sm90.make_trivial_tiled_mma(*self.mma_kind, tiler_mn=(64, self.tiling.tile_n))

    @cute.jit
    def gate_and_up_rows(self, sb: cute.Tensor):
        """The stages' gate rows and up rows of B: its first and second out_n rows (gated), where
        the two descriptors load. Ungated, B's rows and a stand-in."""
        if cutlass.const_expr(not self.gated):
            return sb, sb
        rows = (self.out_n, self.tile[2])
        return cute.local_tile(sb, rows, (0, 0, None)), cute.local_tile(sb, rows, (1, 0, None))

    def gate_and_up_accumulators(self, acc_all: cute.Tensor):
        """The gate's and the up rows' accumulators within acc_all, in the output tile's
        arrangement (mma's): a thread holds each column c of the first half and c + out_n of the
        second, wgmma's column groups of 8 being the last of its accumulators' first mode. Ungated,
        acc_all and a stand-in."""
        if cutlass.const_expr(not self.gated):
            return acc_all, acc_all
        (pair, rows, groups), steps, cols = cute.shape(acc_all)
        stride = acc_all.layout.stride
        assert (pair, rows, cols) == (2, 2, 1) and stride[0] == (1, 2, 4) and (steps == 1 or stride[1] == 4 * groups), \
            f"wgmma's accumulators, compact: {acc_all.layout}"
        half = cute.make_layout(((2, 2, groups // 2), steps, 1), stride=((1, 2, 4), stride[1], stride[2]))
        return cute.make_tensor(acc_all.iterator, half), cute.make_tensor(acc_all.iterator + 2 * groups, half)

    def b_row(self, col, half: int, n):
        """B's row behind output column col (of N rows of B): col itself, or a gated tile's gate
        (half 0) or up (half 1) row, 2 col and 2 col + 1 ("interleaved") or col and N/2 + col
        ("split")."""
        if not self.gated:
            return col
        if self.epi.gate == "interleaved":
            return 2 * col + half
        return col + half * (n // 2)

    # -------------------------------------------------------------- device side

    @cute.jit
    def setup(self, tma_a: cute.CopyAtom, tma_b: cute.CopyAtom, tma_u: cute.CopyAtom, tma_d: cute.CopyAtom,
              tma_c: cute.CopyAtom, warp):
        """What both schedules start with: descriptors prefetched, the barriers of the ring and of
        C's buffers (one ring of them a consumer group) made, the multicast masks. The caller waits
        for the cluster (or the CTA) before using them."""
        t = self.tiling
        if warp == 0:
            cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
            cute.nvgpu.cpasync.prefetch_descriptor(tma_b)
            if cutlass.const_expr(self.gated):
                cute.nvgpu.cpasync.prefetch_descriptor(tma_u)
            cute.nvgpu.cpasync.prefetch_descriptor(tma_d)
            if cutlass.const_expr(self.epi.residual):
                cute.nvgpu.cpasync.prefetch_descriptor(tma_c)
        cluster = cute.make_layout((t.cluster_m, t.cluster_n, 1))
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        in_cluster = cluster.get_flat_coord(rank)
        # A's tile goes to the CTAs of this cluster row (same M), B's to those of its column.
        mask_a = cute.make_layout_image_mask(cluster, in_cluster, mode=1) if self.mcast_a > 1 else 0
        mask_b = cute.make_layout_image_mask(cluster, in_cluster, mode=0) if self.mcast_b > 1 else 0
        smem = utils.SmemAllocator()
        shared = smem.allocate(self.shared)
        # C's pieces: each CTA loads its own into c_stages buffers a consumer group (c_state); every
        # warp of the group releases a piece once it has read it. The ring's creation below fences
        # and syncs these barriers' init too.
        c_ring = None
        if cutlass.const_expr(self.epi.residual):
            c_ring = pipeline.PipelineTmaAsync.create(
                barrier_storage=shared.c_barriers.data_ptr(), num_stages=self.groups * self.c_stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.tile_threads // 32),
                tx_count=self.piece_bytes, defer_sync=True)
        stage_bytes = self.tile[2] * (t.tile_m * self.a_type.width + t.tile_n * self.b_type.width) // 8
        # Every consumer warp of every CTA that reads a stage releases it, to each CTA that wrote into
        # it (ping-pong: the warps of the one group whose tile the stage holds).
        consumers = (self.mcast_a + self.mcast_b - 1) * (self.tile_threads // 32)
        ring = pipeline.PipelineTmaAsync.create(
            barrier_storage=shared.barriers.data_ptr(), num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumers),
            tx_count=stage_bytes, cta_layout_vmnk=cute.make_layout((1, *cluster.shape)))
        if cutlass.const_expr(t.cluster_m * t.cluster_n > 1):
            cute.arch.cluster_arrive_relaxed()
        return shared, ring, c_ring, in_cluster, mask_a, mask_b

    @cute.jit
    def cluster_wait(self):
        if cutlass.const_expr(self.tiling.cluster_m * self.tiling.cluster_n > 1):
            cute.arch.cluster_wait()
        else:
            cute.arch.sync_threads()

    @cute.jit
    def scale_factor(self, scale_a: cute.Tensor, scale_b: cute.Tensor, alpha: cutlass.Float32):
        """alpha, times the per-tensor scales where they are that."""
        if cutlass.const_expr(self.epi.scale == "tensor"):
            return alpha * scale_a[0] * scale_b[0]
        return alpha

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, ta: cute.Tensor, tma_b: cute.CopyAtom, tb: cute.Tensor,
               tma_u: cute.CopyAtom, tu: cute.Tensor, tma_d: cute.CopyAtom, td: cute.Tensor, tma_c: cute.CopyAtom,
               tc: cute.Tensor, c: cute.Tensor, bias: cute.Tensor, scale_a: cute.Tensor, scale_b: cute.Tensor,
               alpha: cutlass.Float32, beta: cutlass.Float32, mma: cute.TiledMma,
               a_smem: cute.ComposedLayout, b_smem: cute.ComposedLayout, d_smem: cute.ComposedLayout,
               c_smem: cute.ComposedLayout, partials: cute.Tensor, counters: cute.Tensor):
        t = self.tiling
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, bidz = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        shared, ring, c_ring, in_cluster, mask_a, mask_b = self.setup(tma_a, tma_b, tma_u, tma_d, tma_c, warp)
        c_src = (c_ring, tma_c, tc, shared.sc.get_tensor(c_smem.outer, swizzle=c_smem.inner))

        sa = shared.sa.get_tensor(a_smem.outer, swizzle=a_smem.inner)
        sb = shared.sb.get_tensor(b_smem.outer, swizzle=b_smem.inner)
        sg, su = self.gate_and_up_rows(sb)
        sd = cute.make_tensor(cute.recast_ptr(sa.iterator, d_smem.inner, dtype=self.d_type), d_smem.outer)

        coord = (bidx, bidy, None)
        ga = cute.local_tile(ta, self.tile, coord, proj=(1, None, 1))  # (tile_m, tile_k, k tiles)
        gb = cute.local_tile(tb, self.tile, coord, proj=(None, 1, 1))
        gu = cute.local_tile(tu, self.tile, coord, proj=(None, 1, 1))
        gd = cute.local_tile(td, self.tile, coord, proj=(1, 1, None))  # coordinates of D's tile
        a_s, a_g = self.tma_slices(tma_a, in_cluster[1], t.cluster_n, sa, ga)
        b_s, b_g = self.tma_slices(tma_b, in_cluster[0], t.cluster_m, sg, gb)
        u_s, u_g = self.tma_slices(tma_u, in_cluster[0], t.cluster_m, su, gu)
        loads = (tma_a, a_s, a_g, mask_a, tma_b, b_s, b_g, mask_b, tma_u, u_s, u_g)

        warpgroup = cute.arch.make_warp_uniform(tidx // 128)
        mma_all = self.multiply_mma(mma)
        thr_mma = mma_all.get_slice(cute.make_layout(self.warpgroups, stride=128)(warpgroup))
        frag_a = mma_all.make_fragment_A(thr_mma.partition_A(sa))
        frag_b = mma_all.make_fragment_B(thr_mma.partition_B(sb))
        acc_all = cute.make_rmem_tensor(thr_mma.partition_C(cute.make_identity_tensor(self.tile_mn)).shape,
                                        cutlass.Float32)
        acc, acc_u = self.gate_and_up_accumulators(acc_all)
        # Block scales: each k-block's products, in two sets (promote_ahead), promoted into acc_all.
        parts = self.block_parts(acc_all.shape)
        factor = self.scale_factor(scale_a, scale_b, alpha)
        self.cluster_wait()

        # ---- main loop: warp 0 keeps the ring full, everyone multiplies
        k_tiles = cute.size(ga, mode=[2])
        scales = self.block_scale_source(mma, tidx, c, scale_a, scale_b, (bidx, bidy), k_tiles)
        k_first = 0
        if cutlass.const_expr(t.split_k > 1):
            # Slice bidz of the k-blocks (the last slices may hold none).
            per = (k_tiles + t.split_k - 1) // t.split_k
            k_first = cutlass.min(bidz * per, k_tiles)
            k_tiles = cutlass.min(k_first + per, k_tiles) - k_first
        acc_all.fill(0.0)
        load = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        if warp == 0:
            for _ in cutlass.range(cutlass.min(self.stages, k_tiles), unroll=1):
                self.load_stage(ring, load, *loads, k_first)
                load.advance()
            # C's first pieces arrive during the main loop. Split-K: in every slice, since which one
            # finishes last (and runs the epilogue) is not known yet; loaded after the reduction, they
            # held the last slice up by a load's latency (+3.1% for o + residual at 16 tokens).
            if cutlass.const_expr(self.epi.residual):
                self.load_c(c_src, (bidx, bidy), 0, 0, 0, self.c_stages)

        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        # Zeroed accumulators and wgmma always accumulating: an accumulate flag that turns on inside the
        # loop made ptxas serialize every wgmma of the loop (its warning C7514, 2026-12-03).
        mma_all.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
        k_blocks = cute.size(frag_a, mode=[2])
        if cutlass.const_expr(self.epi.block_scaled):
            read, release, load = self.multiply_block_scaled(mma_all, acc_all, parts, frag_a, frag_b, ring, read,
                                                             release, scales, k_tiles, k_first, (warp, load, loads))
        else:
            for k_tile in cutlass.range(k_tiles, unroll=1):
                ring.consumer_wait(read)
                cute.nvgpu.warpgroup.fence()
                for kb in cutlass.range_constexpr(k_blocks):
                    cute.gemm(mma_all, acc_all, frag_a[None, None, kb, read.index], frag_b[None, None, kb, read.index],
                              acc_all)
                cute.nvgpu.warpgroup.commit_group()
                read.advance()
                # One wgmma batch stays in flight; the stage before it is free again, and warp 0 refills
                # it (never before a release: it would wait on its own warp).
                if k_tile > 0:
                    cute.nvgpu.warpgroup.wait_group(1)
                    ring.consumer_release(release)
                    release.advance()
                    if warp == 0 and load.count < k_tiles:
                        self.load_stage(ring, load, *loads, k_first)
                        load.advance()
            cute.nvgpu.warpgroup.wait_group(0)
            if k_tiles > 0:
                ring.consumer_release(release)

        tile = (bidx, bidy)
        if cutlass.const_expr(t.split_k > 1):
            last = cute.make_tensor(shared.last.data_ptr(), cute.make_layout(1))
            if self.reduce_split(acc_all, mma_all, tidx, c, partials, counters, last, tile):
                self.finish(acc, acc_u, mma, tidx, warp, c, c_src, bias, scale_a, scale_b, factor, beta, tile, sd, gd,
                            tma_d)
            else:
                self.land_c(c_src)
        else:
            self.finish(acc, acc_u, mma, tidx, warp, c, c_src, bias, scale_a, scale_b, factor, beta, tile, sd, gd,
                        tma_d)

    @cute.jit
    def finish(self, acc: cute.Tensor, acc_u: cute.Tensor, mma: cute.TiledMma, tidx, warp, c: cute.Tensor, c_src,
               bias: cute.Tensor,
               scale_a: cute.Tensor, scale_b: cute.Tensor, factor: cutlass.Float32, beta: cutlass.Float32, tile,
               sd: cute.Tensor, gd: cute.Tensor, tma_d: cute.CopyAtom):
        """The plain kernel's epilogue: scaled and biased (gated: SwiGLU) on the registers, then stored
        through the ring's memory."""
        t = self.tiling
        self.scale_and_bias(acc, acc_u, mma, tidx, c, bias, scale_a, scale_b, factor, tile)
        # The ring's shared memory becomes the epilogue's: every CTA that multicasts into ours must be done.
        if cutlass.const_expr(t.cluster_m * t.cluster_n > 1):
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()
        else:
            cute.arch.sync_threads()
        stores = pipeline.PipelineTmaStore.create(
            num_stages=self.epi_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.tile_threads))
        self.store(acc, acc_u, sd, gd, tma_d, mma, tidx, warp == 0, stores, 0, 0, c_src, beta, tile)
        if warp == 0:
            stores.producer_tail()

    @cute.jit
    def land_c(self, c_src):
        """A split-K slice that does not run the epilogue: C's first pieces, loaded for it all the
        same, land before the CTA exits (a TMA load must not outlive its shared memory)."""
        if cutlass.const_expr(self.epi.residual):
            for p in cutlass.range_constexpr(self.c_stages):
                c_src[0].consumer_wait(self.c_state(p, 0, producer=False))

    @cute.jit
    def reduce_split(self, acc: cute.Tensor, mma: cute.TiledMma, tidx, c: cute.Tensor, partials: cute.Tensor,
                     counters: cute.Tensor, last: cute.Tensor, tile):
        """Split-K: adds this slice's products into the fp32 partials (whole tiles, row-major, zero
        between launches) at each accumulator's coordinates, then counts the slice in on the tile's
        counter. The last slice to arrive reads the sum back into acc, leaves the partials and the
        counter zero again, and returns True: it runs the epilogue. acc and mma are the main loop's
        (a gated tile's: its gate and up columns together, tile_n of B's rows)."""
        t = self.tiling
        tiles_n = (cute.size(c, mode=[1]) + t.tile_n - 1) // t.tile_n
        pitch = tiles_n * t.tile_n
        ident = cute.make_identity_tensor((cute.size(c, mode=[0]), pitch))
        coords = mma.get_slice(tidx).partition_C(cute.local_tile(ident, self.tile_mn, tile))
        for i in cutlass.range_constexpr(cute.size(acc)):
            m, n = coords[i]
            cute.arch.red(partials.iterator + (m * pitch + n), acc[i], op="add", dtype="f32", sem="relaxed",
                         scope="gpu")
        cute.arch.fence_acq_rel_gpu()
        cute.arch.sync_threads()
        tile_id = tile[0] * tiles_n + tile[1]
        if tidx == 0:
            last[0] = cute.arch.atomic_add(counters.iterator + tile_id, cutlass.Int32(1), sem="acq_rel", scope="gpu")
        cute.arch.sync_threads()
        is_last = last[0] == t.split_k - 1
        if is_last:
            cute.arch.fence_acq_rel_gpu()
            for i in cutlass.range_constexpr(cute.size(acc)):
                m, n = coords[i]
                acc[i] = cute.arch.load(partials.iterator + (m * pitch + n), cutlass.Float32, cop="cg")
                partials[m * pitch + n] = cutlass.Float32(0.0)
            if tidx == 0:
                counters[tile_id] = cutlass.Int32(0)
        return is_last

    @cute.kernel
    def persistent_kernel(self, tma_a: cute.CopyAtom, ta: cute.Tensor, tma_b: cute.CopyAtom, tb: cute.Tensor,
                          tma_u: cute.CopyAtom, tu: cute.Tensor, tma_d: cute.CopyAtom, td: cute.Tensor,
                          tma_c: cute.CopyAtom, tc: cute.Tensor, c: cute.Tensor, bias: cute.Tensor,
                          scale_a: cute.Tensor, scale_b: cute.Tensor, alpha: cutlass.Float32, beta: cutlass.Float32,
                          mma: cute.TiledMma, a_smem: cute.ComposedLayout, b_smem: cute.ComposedLayout,
                          d_smem: cute.ComposedLayout, c_smem: cute.ComposedLayout,
                          schedule: utils.PersistentTileSchedulerParams):
        t = self.tiling
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        shared, ring, c_ring, in_cluster, mask_a, mask_b = self.setup(tma_a, tma_b, tma_u, tma_d, tma_c, warp)
        c_src = (c_ring, tma_c, tc, shared.sc.get_tensor(c_smem.outer, swizzle=c_smem.inner))

        sa = shared.sa.get_tensor(a_smem.outer, swizzle=a_smem.inner)
        sb = shared.sb.get_tensor(b_smem.outer, swizzle=b_smem.inner)
        sg, su = self.gate_and_up_rows(sb)
        sd = shared.sd.get_tensor(d_smem.outer, swizzle=d_smem.inner)
        ga = cute.local_tile(ta, (t.tile_m, self.tile[2]), (None, None))  # (tile_m, tile_k, tiles m, k tiles)
        gb = cute.local_tile(tb, (self.out_n, self.tile[2]), (None, None))
        gu = cute.local_tile(tu, (self.out_n, self.tile[2]), (None, None))
        a_s, a_g = self.tma_slices(tma_a, in_cluster[1], t.cluster_n, sa, ga)
        b_s, b_g = self.tma_slices(tma_b, in_cluster[0], t.cluster_m, sg, gb)
        u_s, u_g = self.tma_slices(tma_u, in_cluster[0], t.cluster_m, su, gu)
        k_tiles = cute.size(ga, mode=[3])
        self.cluster_wait()

        warpgroup = cute.arch.make_warp_uniform(tidx // 128)
        if warpgroup == 0:
            # ---- the producer: one thread streams every tile's k-blocks through the ring
            if cutlass.const_expr(self.consumer_threads == 256):
                cute.arch.warpgroup_reg_dealloc(PRODUCER_REGISTERS)
            if warp == 0:
                tiles = utils.StaticPersistentTileScheduler.create(schedule, cute.arch.block_idx(),
                                                                   cute.arch.grid_dim())
                work = tiles.initial_work_tile_info()
                load = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
                while work.is_valid_tile:
                    tile = work.tile_idx
                    a_tile, b_tile = a_g[(None, tile[0], None)], b_g[(None, tile[1], None)]
                    u_tile = u_g[(None, tile[1], None)]
                    load.reset_count()
                    for _ in cutlass.range(k_tiles, unroll=1):
                        self.load_stage(ring, load, tma_a, a_s, a_tile, mask_a, tma_b, b_s, b_tile, mask_b, tma_u, u_s,
                                        u_tile)
                        load.advance()
                    tiles.advance_to_next_work()
                    work = tiles.get_current_work()
                # A CTA must not exit while its peers may still arrive on its barriers.
                ring.producer_tail(load)
            if cutlass.const_expr(self.epi.residual):
                # C's loaders, one warp a consumer group: each of the group's tiles, piece by piece,
                # as its buffers free up (the first ones during the tile's main loop).
                for group in cutlass.range_constexpr(self.groups):
                    if warp == 1 + group:
                        tiles = utils.StaticPersistentTileScheduler.create(schedule, cute.arch.block_idx(),
                                                                           cute.arch.grid_dim())
                        if cutlass.const_expr(self.groups == 2):
                            tiles.advance_to_next_work(advance_count=group)
                        work = tiles.get_current_work()
                        loaded = cutlass.Int32(0)  # the group's tiles
                        while work.is_valid_tile:
                            self.load_c(c_src, (work.tile_idx[0], work.tile_idx[1]), group, loaded, 0, self.pieces)
                            loaded = loaded + 1
                            tiles.advance_to_next_work(advance_count=self.groups)
                            work = tiles.get_current_work()
        else:
            # ---- the consumers: multiply each tile, then its epilogue
            if cutlass.const_expr(self.consumer_threads == 256):
                cute.arch.warpgroup_reg_alloc(CONSUMER_REGISTERS)
            # The consumer group (ping-pong: the warpgroup; it takes every other tile) and the
            # thread's index among its tile's threads.
            group = warpgroup - 1 if self.groups == 2 else 0
            ctidx = tidx - 128 - group * self.tile_threads
            mma_all = self.multiply_mma(mma)
            thr_mma = mma_all.get_slice(cute.make_layout(self.warpgroups, stride=128)(warpgroup - 1 - group))
            frag_a = mma_all.make_fragment_A(thr_mma.partition_A(sa))
            frag_b = mma_all.make_fragment_B(thr_mma.partition_B(sb))
            acc_shape = thr_mma.partition_C(cute.make_identity_tensor(self.tile_mn)).shape
            acc_all = cute.make_rmem_tensor(acc_shape, cutlass.Float32)
            acc, acc_u = self.gate_and_up_accumulators(acc_all)
            parts = self.block_parts(acc_shape)
            factor = self.scale_factor(scale_a, scale_b, alpha)
            k_blocks = cute.size(frag_a, mode=[2])
            stores = pipeline.PipelineTmaStore.create(
                num_stages=self.epi_stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.tile_threads))
            first_warp = warp == 4 + group * (self.tile_threads // 32)
            tiles = utils.StaticPersistentTileScheduler.create(schedule, cute.arch.block_idx(), cute.arch.grid_dim())
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            # Ping-pong's turns: a group's mainloop starts once the other's on the tile before is done
            # (its turn barrier, arrived on by the other group). Beyond the overlap it buys, this
            # keeps the producer within one ring of every stage a group waits for: a wait on a
            # stage's parity cannot tell rounds of the ring apart further out.
            my_turn = pipeline.NamedBarrier(barrier_id=3 + group, num_threads=self.consumer_threads)
            their_turn = pipeline.NamedBarrier(barrier_id=4 - group, num_threads=self.consumer_threads)
            mine = cutlass.Int32(0)  # tiles this group has stored
            if cutlass.const_expr(self.groups == 2):
                # The producer streams every tile of this CTA in order: group 1 starts at the second,
                # past the first tile's stages (no branch: group 0 moves by 0).
                tiles.advance_to_next_work(advance_count=group)
                read.advance(k_tiles * group)
                release.advance(k_tiles * group)
            work = tiles.get_current_work()
            mma_all.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
            while work.is_valid_tile:
                tile = work.tile_idx
                acc_all.fill(0.0)
                if cutlass.const_expr(self.groups == 2):
                    if group + mine > 0:  # all but the CTA's first tile wait their turn
                        my_turn.arrive_and_wait()
                # The plain kernel's loops without their refills.
                if cutlass.const_expr(self.epi.block_scaled):
                    scales = self.block_scale_source(mma, ctidx, c, scale_a, scale_b, (tile[0], tile[1]), k_tiles)
                    # Zero again: else the sets live on through the epilogue (the wgmma read them).
                    for half in cutlass.range_constexpr(2):
                        parts[half][0].fill(0.0)
                    read, release, _ = self.multiply_block_scaled(mma_all, acc_all, parts, frag_a, frag_b, ring,
                                                                  read, release, scales, k_tiles, 0, None)
                else:
                    for k_tile in cutlass.range(k_tiles, unroll=1):
                        ring.consumer_wait(read)
                        cute.nvgpu.warpgroup.fence()
                        for kb in cutlass.range_constexpr(k_blocks):
                            cute.gemm(mma_all, acc_all, frag_a[None, None, kb, read.index],
                                      frag_b[None, None, kb, read.index], acc_all)
                        cute.nvgpu.warpgroup.commit_group()
                        read.advance()
                        # One wgmma batch stays in flight; the stage before it goes back to the producer.
                        if k_tile > 0:
                            cute.nvgpu.warpgroup.wait_group(1)
                            ring.consumer_release(release)
                            release.advance()
                    cute.nvgpu.warpgroup.wait_group(0)
                    if k_tiles > 0:
                        ring.consumer_release(release)
                        release.advance()
                if cutlass.const_expr(self.groups == 2):
                    their_turn.arrive()  # unmatched after the CTA's last tile: harmless at exit
                self.scale_and_bias(acc, acc_u, mma, ctidx, c, bias, scale_a, scale_b, factor, (tile[0], tile[1]))
                gd = cute.local_tile(td, self.tile, (tile[0], tile[1], None), proj=(1, 1, None))
                self.store(acc, acc_u, sd, gd, tma_d, mma, ctidx, first_warp, stores, mine, group, c_src, beta,
                           (tile[0], tile[1]))
                mine = mine + 1
                if cutlass.const_expr(self.groups == 2):
                    # The other group's next tile: its stages are not ours.
                    tiles.advance_to_next_work(advance_count=2)
                    read.advance(k_tiles)
                    release.advance(k_tiles)
                else:
                    tiles.advance_to_next_work()
                work = tiles.get_current_work()
            if first_warp:
                stores.producer_tail()

    @cute.jit
    def block_scale_source(self, mma: cute.TiledMma, tidx, c: cute.Tensor, scale_a: cute.Tensor,
                           scale_b: cute.Tensor, tile, k_tiles):
        """Where block scales come from for tile (m, n): scale_a from the offsets of the rows this
        thread's accumulators hold (two a 64-row M step, r and r + 8; clamped into M), scale_b from
        the offsets of the 128-row blocks of B that hold the tile's columns (gated: its gate rows'
        and its up rows', B's rows 2j and 2j + 1 or j and N/2 + j of output column j; the space
        keeps each half in one block). None without them."""
        if cutlass.const_expr(not self.epi.block_scaled):
            return None
        coords = self.coordinates(mma, tidx, c, tile)
        assert cute.rank(cute.shape(coords)[0]) == 3 and cute.shape(coords)[0][:2] == (2, 2), \
            "wgmma's accumulators a thread: (2 columns, 2 rows 8 apart, column groups) an M step"
        m_steps = cute.size(coords, mode=[1])
        last_m = cute.size(c, mode=[0]) - 1
        rows = cute.make_rmem_tensor((2, m_steps), cutlass.Int32)
        for step in cutlass.range_constexpr(m_steps):
            for r in cutlass.range_constexpr(2):
                rows[r, step] = cutlass.min(coords[(0, r, 0), step, 0][0], last_m)
        # B's (nb, kb) lies at nb * k_tiles + kb; a cluster's tile past N (TMA brings it zeros) reads
        # the last block's, in bounds.
        n = cute.size(c, mode=[1])
        last_block = (n - 1) // 128
        first = tile[1] * self.out_n  # the tile's first output column
        col_blocks = tuple(cutlass.min(self.b_row(first, h, n) // 128, last_block) * k_tiles
                           for h in range(self.scale_halves))
        return rows, col_blocks, cute.size(c, mode=[0]), scale_a, scale_b

    def block_parts(self, acc_shape):
        """Block scales' two sets of a k-block's products (promote_ahead), each with its k-block's
        scales: A's for this thread's rows and B's for the tile (a gated tile's gate and up halves:
        one each, from B's blocks of their rows). Zero: promoting a set adds
        nothing until a k-block fills it. Last, the MMA that starts a set from zero: the DSL's
        tracer loses a rebind of the kernel's MMA's accumulate flag made inside a helper."""
        if cutlass.const_expr(not self.epi.block_scaled):
            return None
        fresh = sm90.make_trivial_tiled_mma(*self.mma_kind, tiler_mn=(64, self.tiling.tile_n))
        fresh.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, False)
        parts = []
        for _ in range(2):
            products = cute.make_rmem_tensor(acc_shape, cutlass.Float32)
            products.fill(0.0)
            row_scales = cute.make_rmem_tensor((2, cute.size(acc_shape, mode=[1])), cutlass.Float32)
            row_scales.fill(0.0)
            col_scale = cute.make_rmem_tensor(self.scale_halves, cutlass.Float32)
            col_scale.fill(0.0)
            parts.append((products, row_scales, col_scale))
        return (*parts, fresh)

    @cute.jit
    def multiply_block_scaled(self, mma: cute.TiledMma, acc: cute.Tensor, parts, frag_a: cute.Tensor,
                              frag_b: cute.Tensor, ring, read, release, source, k_tiles, k_first,
                              refill: cutlass.Constexpr):
        """A tile's main loop with block scales, k-blocks k_first .. k_first + k_tiles - 1, both
        schedules'. The k-blocks alternate between the two sets of products, so each keeps its
        registers. In runs of four, one k-block's wgmma stay in flight while the one before is
        awaited (wait 1), its stage released and its products promoted: the tensor cores do not
        drain between k-blocks. Each run ends drained (its last set promoted after), since ptxas
        serializes every wgmma (C7514) where a group is in flight across a loop's back edge; a
        promotion between a run's first two k-blocks made ptxas drain there too (its SASS: one
        DEPBAR 0x0 a run now, against one a k-block before). The k-blocks past the last whole run
        go one at a time, each drained (promote_ahead). refill: the one-CTA-a-tile kernel's
        (warp, load state, loads), whose warp 0 refills each stage it releases; None for the
        persistent one's producer. Returns the states advanced (read, release, load), which the
        DSL's tracer does not carry out of a helper through their attributes."""
        load = refill[1] if cutlass.const_expr(refill is not None) else read
        runs = k_tiles // 4
        for run in cutlass.range(runs, unroll=1):
            for j in cutlass.range_constexpr(4):
                ring.consumer_wait(read)
                self.issue_block(mma, parts[j % 2], parts[2], frag_a, frag_b, read.index, source,
                                 k_first + run * 4 + j)
                read.advance()
                if cutlass.const_expr(j > 0):
                    cute.nvgpu.warpgroup.wait_group(1)
                    release, load = self.give_back(ring, release, load, refill, k_tiles, k_first)
                    self.promote(acc, parts[1 - j % 2])
            cute.nvgpu.warpgroup.wait_group(0)
            release, load = self.give_back(ring, release, load, refill, k_tiles, k_first)
            self.promote(acc, parts[1])
        rest = k_tiles - runs * 4
        for pair in cutlass.range((rest + 1) // 2, unroll=1):
            for half in cutlass.range_constexpr(2):
                if half == 0 or pair * 2 + half < rest:
                    ring.consumer_wait(read)
                    self.promote_ahead(mma, acc, parts, half, frag_a, frag_b, read.index, source,
                                       k_first + runs * 4 + pair * 2 + half)
                    read.advance()
                    release, load = self.give_back(ring, release, load, refill, k_tiles, k_first)
        self.promote_rest(acc, parts)
        return read, release, load

    @cute.jit
    def give_back(self, ring, release, load, refill: cutlass.Constexpr, k_tiles, k_first):
        """A stage whose wgmma are done goes back to the producer; in the one-CTA-a-tile kernel
        warp 0 refills it (never before the release: it would wait on its own warp). Returns the
        states advanced (release, load)."""
        ring.consumer_release(release)
        release.advance()
        if cutlass.const_expr(refill is not None):
            if refill[0] == 0 and load.count < k_tiles:
                self.load_stage(ring, load, *refill[2], k_first)
                load.advance()
        return release, load

    @cute.jit
    def issue_block(self, mma: cute.TiledMma, part, fresh: cute.TiledMma, frag_a: cute.Tensor,
                    frag_b: cute.Tensor, stage, source, k):
        """One k-block's wgmma into a set of products (from zero), committed as one group, with
        its k-block's scales loaded into the set meanwhile."""
        products, row_scales, col_scale = part
        rows, col_blocks, m, scale_a, scale_b = source
        for i in cutlass.range_constexpr(cute.size(rows)):
            row_scales[i] = scale_a[k * m + rows[i]]  # A's (kb, m) lies at kb * M + m
        for h in cutlass.range_constexpr(self.scale_halves):
            col_scale[h] = scale_b[col_blocks[h] + k]
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(frag_a, mode=[2])):
            cute.gemm(mma if kb > 0 else fresh, products, frag_a[None, None, kb, stage],
                      frag_b[None, None, kb, stage], products)
        cute.nvgpu.warpgroup.commit_group()

    @cute.jit
    def promote_ahead(self, mma: cute.TiledMma, acc: cute.Tensor, parts, half: cutlass.Constexpr,
                      frag_a: cute.Tensor, frag_b: cute.Tensor, stage, source, k):
        """One k-block with block scales on its own: its wgmma into parts[half], the other set,
        the k-block before's, promoted into acc while they run, then the wgmma awaited (wait 0: a
        wait that left the group in flight across the loop's back edge would serialize them)."""
        self.issue_block(mma, parts[half], parts[2], frag_a, frag_b, stage, source, k)
        self.promote(acc, parts[1 - half])
        cute.nvgpu.warpgroup.wait_group(0)

    @cute.jit
    def promote_rest(self, acc: cute.Tensor, parts):
        """After a tile's last k-block: the set not yet promoted into acc; the other adds zero, its
        scale zeroed when it was promoted. (Branching on which one instead put ptxas's injected
        wait in the middle of every k-block's promotion and spilled the plain 128x128 kernel;
        the cost of this way: an e5m2 input holding Inf gives NaN where the reference has Inf.)"""
        for half in cutlass.range_constexpr(2):
            self.promote(acc, parts[half])

    @cute.jit
    def promote(self, acc: cute.Tensor, part):
        """acc += products * (A's row scale * B's block scale): one k-block's products into the
        fp32 accumulators (the FP8 wgmma's own keep about 14 bits, too few for K in the
        thousands)."""
        products, row_scales, col_scale = part
        if cutlass.const_expr(self.scale_halves == 1):
            halves = ((acc, products),)
        else:  # a split gate's: its gate and its up columns, each with its block's scale
            halves = tuple(zip(self.gate_and_up_accumulators(acc), self.gate_and_up_accumulators(products)))
        for h in cutlass.range_constexpr(len(halves)):
            into, part_h = halves[h]
            rows = cute.make_tensor(row_scales.iterator, by_row(cute.shape(into)))
            into.store(into.load() + part_h.load() * (rows.load() * col_scale[h]))
        col_scale.fill(0.0)  # promoted: promote_rest adds nothing more of it

    @cute.jit
    def tma_slices(self, atom: cute.CopyAtom, rank_in_mcast, mcast: cutlass.Constexpr, s: cute.Tensor,
                   g: cute.Tensor):
        """(shared, global) sides of a TMA load: the ring's stages and the tensor's tiles."""
        return cute.nvgpu.cpasync.tma_partition(atom, rank_in_mcast, cute.make_layout(mcast),
                                                cute.group_modes(s, 0, 2), cute.group_modes(g, 0, 2))

    @cute.jit
    def load_stage(self, ring, state, tma_a, a_s, a_g, mask_a, tma_b, b_s, b_g, mask_b, tma_u, u_s, u_g,
                   k_first=0):
        """k-block k_first + state.count of A and B (gated: B's gate rows, then its up rows) into the
        ring's stage state.index."""
        ring.producer_acquire(state)
        barrier = ring.producer_get_barrier(state)
        k = state.count + k_first
        cute.copy(tma_a, a_g[None, k], a_s[None, state.index], tma_bar_ptr=barrier, mcast_mask=mask_a)
        cute.copy(tma_b, b_g[None, k], b_s[None, state.index], tma_bar_ptr=barrier, mcast_mask=mask_b)
        if cutlass.const_expr(self.gated):
            cute.copy(tma_u, u_g[None, k], u_s[None, state.index], tma_bar_ptr=barrier, mcast_mask=mask_b)
        ring.producer_commit(state)

    @cute.jit
    def scale_and_bias(self, acc: cute.Tensor, acc_u: cute.Tensor, mma: cute.TiledMma, tidx, c: cute.Tensor,
                       bias: cute.Tensor, scale_a: cute.Tensor, scale_b: cute.Tensor, factor: cutlass.Float32, tile):
        """acc = factor * acc [* A's row scale * B's column scale] + bias, in place, at each
        accumulator's coordinates in tile (m, n) of c, clamped into D (past its edge the TMA store
        clips). Each vector is read once a row or a column the thread holds (2 rows an M step, 2
        columns a column group), not once an accumulator: read at every accumulator, the scales
        doubled the rowwise kernels' trace. A gated tile's acc and acc_u are output column j's
        gate and up columns: B's rows j and N/2 + j ("split") or 2j and 2j + 1 ("interleaved")."""
        halves = (acc, acc_u) if cutlass.const_expr(self.gated) else (acc,)
        if cutlass.const_expr(not self.epi.needs_coords):
            for t in halves:
                t.store(t.load() * factor)
        else:
            rowcol, bias_kind = self.epi.scale == "rowcol", self.epi.bias
            coords = self.coordinates(mma, tidx, c, tile)
            groups, steps, n_steps = cute.shape(acc)[0][2], cute.size(acc, mode=[1]), cute.size(acc, mode=[2])
            n = cute.size(c, mode=[1])
            last_m, last_n = cute.size(c, mode=[0]) - 1, (n // 2 if cutlass.const_expr(self.gated) else n) - 1
            row_factor = cute.make_rmem_tensor(by_row(cute.shape(acc)), cutlass.Float32)
            row_bias = cute.make_rmem_tensor(by_row(cute.shape(acc)), cutlass.Float32)
            for step in cutlass.range_constexpr(steps):
                for r in cutlass.range_constexpr(2):
                    i = (0, r, 0), step, 0
                    m = cutlass.min(coords[i][0], last_m)
                    row_factor[i] = factor * scale_a[m] if cutlass.const_expr(rowcol) else factor
                    if cutlass.const_expr(bias_kind == "row"):
                        row_bias[i] = bias[m].to(cutlass.Float32)
            for h in cutlass.range_constexpr(len(halves)):
                col_scale = cute.make_rmem_tensor(by_col(cute.shape(acc)), cutlass.Float32)
                col_bias = cute.make_rmem_tensor(by_col(cute.shape(acc)), cutlass.Float32)
                for nn in cutlass.range_constexpr(n_steps):
                    for g in cutlass.range_constexpr(groups):
                        for j in cutlass.range_constexpr(2):
                            i = (j, 0, g), 0, nn
                            b_row = self.b_row(cutlass.min(coords[i][1], last_n), h, n)
                            if cutlass.const_expr(rowcol):
                                col_scale[i] = scale_b[b_row]
                            if cutlass.const_expr(bias_kind == "col"):
                                col_bias[i] = bias[b_row].to(cutlass.Float32)
                v = halves[h].load() * row_factor.load()
                if cutlass.const_expr(rowcol):
                    v = v * col_scale.load()
                if cutlass.const_expr(bias_kind == "col"):
                    v = v + col_bias.load()
                if cutlass.const_expr(bias_kind == "row"):
                    v = v + row_bias.load()
                halves[h].store(v)

    @cute.jit
    def coordinates(self, mma: cute.TiledMma, tidx, c: cute.Tensor, tile):
        """(m, n) of this thread's accumulators of tile (m, n), past D's edge too: an identity tensor
        partitioned by the thread's own slice of the MMA (the warpgroup's slice gives its first
        thread's coordinates)."""
        shape_mn = (cute.size(c, mode=[0]), cute.size(c, mode=[1]))
        tile_mn = cute.local_tile(cute.make_identity_tensor(shape_mn), self.tile, (*tile, None), proj=(1, 1, None))
        return mma.get_slice(tidx).partition_C(tile_mn)

    def c_state(self, count, group, producer: bool):
        """The state of C's ring at a consumer group's count-th load: its buffer (the group's are
        group * c_stages onwards) and the phase a producer (the buffer's release) or a consumer
        (its load) waits for."""
        count = cutlass.Int32(count)
        phase = (count // self.c_stages) % 2
        return pipeline.PipelineState(self.groups * self.c_stages, count, group * self.c_stages + count % self.c_stages,
                                      1 - phase if producer else phase)

    @cute.jit
    def load_c(self, c_src, tile, group, tiles_before, first: cutlass.Constexpr, count: cutlass.Constexpr):
        """C's store pieces first .. first + count - 1 of tile (m, n) into the group's buffers, by
        TMA: the group's ring holds piece p of its tiles_before-th tile as its
        (tiles_before * pieces + p)-th load. Issued by one warp."""
        c_ring, tma_c, tc, sc = c_src
        gc = cute.local_tile(tc, self.tile, (*tile, None), proj=(1, 1, None))
        c_s, c_g = cute.nvgpu.cpasync.tma_partition(tma_c, 0, cute.make_layout(1), cute.group_modes(sc, 0, 2),
                                                    cute.zipped_divide(gc, self.epi_tile))
        for p in cutlass.range_constexpr(first, first + count):
            state = self.c_state(tiles_before * self.pieces + p, group, producer=True)
            c_ring.producer_acquire(state)
            cute.copy(tma_c, c_g[None, (p // self.pieces_n, p % self.pieces_n)], c_s[None, state.index],
                      tma_bar_ptr=c_ring.producer_get_barrier(state))

    @cute.jit
    def store(self, acc: cute.Tensor, acc_u: cute.Tensor, sd: cute.Tensor, gd: cute.Tensor, tma_d: cute.CopyAtom,
              mma: cute.TiledMma, tidx, storer, stores, tiles_before, group, c_src, beta: cutlass.Float32, tile):
        """The tile's registers (scaled and biased by scale_and_bias) through sd's buffers and TMA
        stores to gd, piece by piece, gating each piece (SwiGLU: silu(acc) * acc_u, the gate's and
        the up rows' pre-activations), or adding beta * C and activating it, on the way. tidx is
        the thread's index among its tile's threads, storer the warp that issues the stores; the
        consumer group's buffers continue round-robin from the tiles_before tiles it stored
        already. C's piece of tile (m, n) is read from its buffer in the accumulators'
        arrangement (ldmatrix, the mirror of the store's stmatrix). The one-CTA-a-tile kernel's
        storer loads C's next pieces as the buffers free up."""
        c_atom = cute.make_tiled_copy_C_atom(
            cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(self.d_layout.is_m_major_c(), 4), self.d_type), mma)
        r2s = cute.make_tiled_copy_S(
            sm90.get_smem_store_op(self.d_layout, elem_ty_d=self.d_type, elem_ty_acc=cutlass.Float32), c_atom)
        thr_r2s = r2s.get_slice(tidx)
        r2s_dst = thr_r2s.partition_D(sd)
        r2s_acc = r2s.retile(acc)
        piece_layout = cute.make_layout(cute.shape(thr_r2s.partition_S(sd))[:3])
        piece_out = cute.make_rmem_tensor_like(piece_layout, self.d_type)
        piece_c = cute.make_rmem_tensor_like(piece_layout, self.d_type)
        if cutlass.const_expr(self.epi.residual):
            s2r = cute.make_tiled_copy_S(
                cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(self.d_layout.is_m_major_c(), 4), self.d_type),
                c_atom)
            thr_s2r = s2r.get_slice(tidx)
            s2r_src = thr_s2r.partition_S(c_src[3])
            s2r_dst = thr_s2r.retile(piece_c)
        s_src, g_dst = cute.nvgpu.cpasync.tma_partition(tma_d, 0, cute.make_layout(1), cute.group_modes(sd, 0, 2),
                                                        cute.zipped_divide(gd, self.epi_tile))
        consumers = pipeline.NamedBarrier(barrier_id=1 + group, num_threads=self.tile_threads)
        n_piece = cute.size(piece_layout)
        # The accumulators piece by piece, (element, piece), and a piece's registers as one vector;
        # a gated tile's gate and up accumulators a piece's two halves at a time, (element, half,
        # piece), which swiglu_pair gates together (acc_u has acc's layout).
        by_piece = cute.composition(r2s_acc.layout, cute.make_layout((n_piece, self.pieces)))
        acc_pieces = cute.make_tensor(r2s_acc.iterator, by_piece)
        r2s_up = r2s.retile(acc_u)
        up_pieces = cute.make_tensor(r2s_up.iterator, by_piece)
        half = n_piece // 2
        by_half = cute.composition(r2s_acc.layout, cute.make_layout((half, 2, self.pieces), stride=(1, half, n_piece)))
        gate_halves = cute.make_tensor(r2s_acc.iterator, by_half)
        up_halves = cute.make_tensor(r2s_up.iterator, by_half)
        out_halves = cute.make_tensor(piece_out.iterator, cute.make_layout((half, 2)))

        def flat(t):
            return cute.make_tensor(t.iterator, cute.make_layout(n_piece))
        for p in cutlass.range_constexpr(self.pieces):
            # Elementwise on the piece as a whole: one vector op each, not one an element (which
            # traced and compiled 6-12% slower to the same SASS but for a few instructions). A gate
            # has no C and no activation beside it. One reciprocal for two gates (swiglu_pair)
            # trades a special-function result for 1.5 FMA-pipe instructions an element: that pays
            # where the epilogue runs alone, not beside the other consumer group's wgmma
            # (ping-pong), which each FMA-pipe instruction slows (native-notes v30).
            if cutlass.const_expr(self.gated and self.tiling.pingpong):
                flat(piece_out).store((activate(acc_pieces[None, p].load(), "silu", self.ieee_div)
                                       * up_pieces[None, p].load()).to(self.d_type))
            elif cutlass.const_expr(self.gated):
                gated = swiglu_pair(gate_halves[None, 0, p].load(), up_halves[None, 0, p].load(),
                                    gate_halves[None, 1, p].load(), up_halves[None, 1, p].load())
                for h in cutlass.range_constexpr(2):
                    out_halves[None, h].store(gated[h].to(self.d_type))
            else:
                vals = acc_pieces[None, p].load()
                if cutlass.const_expr(self.epi.residual):
                    c_read = self.c_state(tiles_before * self.pieces + p, group, producer=False)
                    c_src[0].consumer_wait(c_read)
                    cute.copy(s2r, s2r_src[None, None, None, c_read.index], s2r_dst)
                    c_src[0].consumer_release(c_read)
                    vals = vals + beta * flat(piece_c).load().to(cutlass.Float32)
                flat(piece_out).store(activate(vals, self.epi.act, self.ieee_div).to(self.d_type))
            buf = group * self.epi_stages + (tiles_before * self.pieces + p) % self.epi_stages
            cute.copy(r2s, piece_out, r2s_dst[None, None, None, buf])
            cute.arch.fence_proxy("async.shared", space="cta")
            consumers.arrive_and_wait()
            if storer:
                cute.copy(tma_d, s_src[None, buf], g_dst[None, (p // self.pieces_n, p % self.pieces_n)])
                stores.producer_commit()
                stores.producer_acquire()
                if cutlass.const_expr(self.epi.residual and not self.tiling.persistent
                                      and p + self.c_stages < self.pieces):
                    self.load_c(c_src, tile, 0, 0, p + self.c_stages, 1)  # every warp released piece p
            consumers.arrive_and_wait()
