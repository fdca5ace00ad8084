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

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90

from gemm_block_scaled import BlockScaledSm90
from gemm_epilogue import EpilogueSm90

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


class Sm90Gemm(EpilogueSm90, BlockScaledSm90):
    """The template; its epilogue (gemm_epilogue.py) and block-scaled main loop
    (gemm_block_scaled.py) are mixins."""

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
