"""gemmforge's Hopper GEMM in CuTe DSL: D = act(alpha * A B^T + beta * C + bias).

A is M x K (K-major), B is N x K (K-major: nn.Linear's weight, "tn") or K x N (N-major, "nn"),
D and C are M x N row-major. One CTA computes one tile_m x tile_n tile of D: TMA brings A and B
tiles into a ring of shared-memory stages (multicast across a cluster of CTAs that share a row or
a column of tiles), one or two warpgroups multiply them with wgmma into fp32 registers, and the
epilogue is applied to the registers before they go out through shared memory and a TMA store.
M, N and K are runtime values: one compiled kernel serves every shape of its dtypes and layout;
TMA zero-fills the loads past the edges and clips the stores.
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


@dataclass(frozen=True)
class Epilogue:
    """What the epilogue does, fixed at compile time (alpha and beta stay runtime values)."""

    act: str = "none"  # none | relu | gelu | gelu_tanh | silu
    bias: str = "none"  # none | col (one per column of D, length N) | row (length M)
    residual: bool = False  # beta * C is added

    @property
    def needs_coords(self) -> bool:
        return self.bias != "none" or self.residual


@dataclass(frozen=True)
class Tiling:
    tile_m: int = 128  # 64 (one warpgroup) or 128 (two warpgroups stacked along M when tile_n > 128)
    tile_n: int = 128  # 64 .. 256
    cluster_m: int = 1  # CTAs of a cluster along M share B's tile by multicast
    cluster_n: int = 1  # ... along N share A's tile
    stages: int = 0  # 0: as many as shared memory holds


def activate(v, act: str):
    """act(v) for an fp32 value; act is a compile-time string."""
    if act == "relu":
        return cute.arch.fmax(v, cutlass.Float32(0.0))
    if act == "gelu":
        return cutlass.Float32(0.5) * v * (cutlass.Float32(1.0) + cute.math.erf(v * cutlass.Float32(0.70710678118654752)))
    if act == "gelu_tanh":
        inner = cutlass.Float32(0.79788456080286536) * v * (cutlass.Float32(1.0) + cutlass.Float32(0.044715) * v * v)
        return cutlass.Float32(0.5) * v * (cutlass.Float32(1.0) + cute.math.tanh(inner, fastmath=True))
    if act == "silu":
        return v / (cutlass.Float32(1.0) + cute.math.exp(-v, fastmath=True))
    return v


class Sm90Gemm:
    def __init__(self, tiling: Tiling, epilogue: Epilogue):
        if tiling.tile_m not in (64, 128):
            raise ValueError(f"tile_m must be 64 or 128, not {tiling.tile_m}")
        if tiling.tile_n not in (64, 96, 128, 160, 192, 224, 256):
            raise ValueError(f"tile_n must be a multiple of 32 in 64..256, not {tiling.tile_n}")
        if tiling.cluster_m * tiling.cluster_n > 4:
            raise ValueError("a cluster holds at most 4 CTAs here")
        self.tiling = tiling
        self.epi = epilogue
        # Two warpgroups split a 128-row tile when one would hold too many accumulators.
        self.warpgroups = 2 if tiling.tile_m == 128 and tiling.tile_n > 128 else 1
        self.threads = 128 * self.warpgroups
        self.mcast_a = tiling.cluster_n  # CTAs that receive each A tile
        self.mcast_b = tiling.cluster_m

    # ---------------------------------------------------------------- host side

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, d: cute.Tensor, c: cute.Tensor, bias: cute.Tensor,
                 alpha: cutlass.Float32, beta: cutlass.Float32, stream: cuda.CUstream):
        t = self.tiling
        self.ab_type, self.d_type = a.element_type, d.element_type
        a_major, b_major = utils.LayoutEnum.from_tensor(a), utils.LayoutEnum.from_tensor(b)
        d_layout = utils.LayoutEnum.from_tensor(d)
        self.mma = sm90.make_trivial_tiled_mma(self.ab_type, self.ab_type, a_major.sm90_mma_major_mode(),
                                               b_major.sm90_mma_major_mode(), cutlass.Float32,
                                               (self.warpgroups, 1, 1), tiler_mn=(64, t.tile_n))
        tile_k = cute.size(self.mma.shape_mnk, mode=[2]) * 4  # four wgmma k-steps a stage: 64 bf16, 128 fp8
        self.tile = (t.tile_m, t.tile_n, tile_k)
        self.epi_tile = sm90.compute_tile_shape_or_override(self.tile, self.d_type,
                                                            is_cooperative=self.warpgroups == 2)
        stage_bytes = (t.tile_m + t.tile_n) * tile_k * self.ab_type.width // 8
        self.stages = t.stages or (SMEM_BYTES - BARRIER_BYTES) // stage_bytes
        self.epi_stages = 4
        a_smem = sm90.make_smem_layout_a(a_major, self.tile, self.ab_type, self.stages)
        b_smem = sm90.make_smem_layout_b(b_major, self.tile, self.ab_type, self.stages)
        d_smem = sm90.make_smem_layout_epi(self.d_type, d_layout, self.epi_tile, self.epi_stages)

        def load_atom(tensor, smem, rows, mcast):
            op = (cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp() if mcast > 1
                  else cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp())
            return cute.nvgpu.cpasync.make_tiled_tma_atom(op, tensor, cute.slice_(smem, (None, None, 0)),
                                                          (rows, tile_k), num_multicast=mcast)

        tma_a, ta = load_atom(a, a_smem, t.tile_m, self.mcast_a)
        tma_b, tb = load_atom(b, b_smem, t.tile_n, self.mcast_b)
        tma_d, td = cute.nvgpu.cpasync.make_tiled_tma_atom(cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), d,
                                                           cute.slice_(d_smem, (None, None, 0)), self.epi_tile)

        @cute.struct
        class Shared:
            barriers: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
            sa: cute.struct.Align[cute.struct.MemRange[self.ab_type, cute.cosize(a_smem)], 1024]
            sb: cute.struct.Align[cute.struct.MemRange[self.ab_type, cute.cosize(b_smem)], 1024]

        self.shared = Shared
        # Whole clusters of tiles; the CTAs past D's edge find nothing to store (TMA clips).
        tiles_m = (cute.size(d, mode=[0]) + t.tile_m - 1) // t.tile_m
        tiles_n = (cute.size(d, mode=[1]) + t.tile_n - 1) // t.tile_n
        grid = ((tiles_m + t.cluster_m - 1) // t.cluster_m * t.cluster_m,
                (tiles_n + t.cluster_n - 1) // t.cluster_n * t.cluster_n, 1)
        self.kernel(tma_a, ta, tma_b, tb, tma_d, td, c, bias, alpha, beta, self.mma, a_smem, b_smem,
                    d_smem).launch(grid=grid, block=[self.threads, 1, 1], cluster=(t.cluster_m, t.cluster_n, 1),
                                   stream=stream)

    # -------------------------------------------------------------- device side

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, ta: cute.Tensor, tma_b: cute.CopyAtom, tb: cute.Tensor,
               tma_d: cute.CopyAtom, td: cute.Tensor, c: cute.Tensor, bias: cute.Tensor,
               alpha: cutlass.Float32, beta: cutlass.Float32, mma: cute.TiledMma, a_smem: cute.ComposedLayout,
               b_smem: cute.ComposedLayout, d_smem: cute.ComposedLayout):
        t = self.tiling
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
            cute.nvgpu.cpasync.prefetch_descriptor(tma_b)

        cluster = cute.make_layout((t.cluster_m, t.cluster_n, 1))
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        in_cluster = cluster.get_flat_coord(rank)
        # A's tile goes to the CTAs of this cluster row (same M), B's to those of its column.
        mask_a = cute.make_layout_image_mask(cluster, in_cluster, mode=1) if self.mcast_a > 1 else 0
        mask_b = cute.make_layout_image_mask(cluster, in_cluster, mode=0) if self.mcast_b > 1 else 0

        smem = utils.SmemAllocator()
        shared = smem.allocate(self.shared)
        stage_bytes = (cute.size_in_bytes(self.ab_type, cute.slice_(a_smem, (None, None, 0)))
                       + cute.size_in_bytes(self.ab_type, cute.slice_(b_smem, (None, None, 0))))
        # Every warp of every CTA that reads a stage releases it, to each CTA that wrote into it.
        consumers = (self.mcast_a + self.mcast_b - 1) * (self.threads // 32)
        ring = pipeline.PipelineTmaAsync.create(
            barrier_storage=shared.barriers.data_ptr(), num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumers),
            tx_count=stage_bytes, cta_layout_vmnk=cute.make_layout((1, *cluster.shape)))
        if cutlass.const_expr(t.cluster_m * t.cluster_n > 1):
            cute.arch.cluster_arrive_relaxed()

        sa = shared.sa.get_tensor(a_smem.outer, swizzle=a_smem.inner)
        sb = shared.sb.get_tensor(b_smem.outer, swizzle=b_smem.inner)
        sd = cute.make_tensor(cute.recast_ptr(sa.iterator, d_smem.inner, dtype=self.d_type), d_smem.outer)

        coord = (bidx, bidy, None)
        ga = cute.local_tile(ta, self.tile, coord, proj=(1, None, 1))  # (tile_m, tile_k, k tiles)
        gb = cute.local_tile(tb, self.tile, coord, proj=(None, 1, 1))
        gd = cute.local_tile(td, self.tile, coord, proj=(1, 1, None))  # coordinates of D's tile
        a_src, a_dst = self.tma_slices(tma_a, in_cluster[1], t.cluster_n, sa, ga)
        b_src, b_dst = self.tma_slices(tma_b, in_cluster[0], t.cluster_m, sb, gb)

        warpgroup = cute.arch.make_warp_uniform(tidx // 128)
        thr_mma = mma.get_slice(cute.make_layout(self.warpgroups, stride=128)(warpgroup))
        frag_a = mma.make_fragment_A(thr_mma.partition_A(sa))
        frag_b = mma.make_fragment_B(thr_mma.partition_B(sb))
        acc = cute.make_rmem_tensor(thr_mma.partition_C(gd).shape, cutlass.Float32)

        if cutlass.const_expr(t.cluster_m * t.cluster_n > 1):
            cute.arch.cluster_wait()
        else:
            cute.arch.sync_threads()

        # ---- main loop: warp 0 keeps the ring full, everyone multiplies
        k_tiles = cute.size(ga, mode=[2])
        load = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        if warp == 0:
            for _ in cutlass.range(cutlass.min(self.stages, k_tiles), unroll=1):
                self.load_stage(ring, load, tma_a, a_src, a_dst, mask_a, tma_b, b_src, b_dst, mask_b)
                load.advance()

        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, False)
        k_blocks = cute.size(frag_a, mode=[2])
        for k_tile in cutlass.range(k_tiles, unroll=1):
            ring.consumer_wait(read)
            cute.nvgpu.warpgroup.fence()
            for kb in cutlass.range_constexpr(k_blocks):
                cute.gemm(mma, acc, frag_a[None, None, kb, read.index], frag_b[None, None, kb, read.index], acc)
                mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
            cute.nvgpu.warpgroup.commit_group()
            read.advance()
            # One wgmma batch stays in flight; the stage before it is free again, and warp 0 refills
            # it (never before a release: it would wait on its own warp).
            if k_tile > 0:
                cute.nvgpu.warpgroup.wait_group(1)
                ring.consumer_release(release)
                release.advance()
                if warp == 0 and load.count < k_tiles:
                    self.load_stage(ring, load, tma_a, a_src, a_dst, mask_a, tma_b, b_src, b_dst, mask_b)
                    load.advance()
        cute.nvgpu.warpgroup.wait_group(0)
        if k_tiles > 0:
            ring.consumer_release(release)

        # ---- epilogue on the fp32 registers, then registers -> shared -> TMA store
        if cutlass.const_expr(self.epi.needs_coords):
            # (m, n) of this thread's accumulators: an identity tensor partitioned by the thread's own
            # slice of the MMA (the warpgroup's slice above gives its first thread's coordinates).
            shape_mn = (cute.size(c, mode=[0]), cute.size(c, mode=[1]))
            tile_mn = cute.local_tile(cute.make_identity_tensor(shape_mn), self.tile, coord, proj=(1, 1, None))
            self.fuse(acc, mma.get_slice(tidx).partition_C(tile_mn), c, bias, alpha, beta)
        else:
            for i in cutlass.range_constexpr(cute.size(acc)):
                acc[i] = activate(acc[i] * alpha, self.epi.act)

        # The ring's shared memory becomes the epilogue's: every CTA that multicasts into ours must be done.
        if cutlass.const_expr(t.cluster_m * t.cluster_n > 1):
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()
        else:
            cute.arch.sync_threads()
        self.store(acc, sd, gd, tma_d, mma, tidx, warp)

    @cute.jit
    def tma_slices(self, atom: cute.CopyAtom, rank_in_mcast, mcast: cutlass.Constexpr, s: cute.Tensor,
                   g: cute.Tensor):
        return cute.nvgpu.cpasync.tma_partition(atom, rank_in_mcast, cute.make_layout(mcast),
                                                cute.group_modes(s, 0, 2), cute.group_modes(g, 0, 2))

    @cute.jit
    def load_stage(self, ring, state, tma_a, a_src, a_dst, mask_a, tma_b, b_src, b_dst, mask_b):
        ring.producer_acquire(state)
        barrier = ring.producer_get_barrier(state)
        cute.copy(tma_a, a_dst[None, state.count], a_src[None, state.index], tma_bar_ptr=barrier, mcast_mask=mask_a)
        cute.copy(tma_b, b_dst[None, state.count], b_src[None, state.index], tma_bar_ptr=barrier, mcast_mask=mask_b)
        ring.producer_commit(state)

    @cute.jit
    def fuse(self, acc: cute.Tensor, coords: cute.Tensor, c: cute.Tensor, bias: cute.Tensor,
             alpha: cutlass.Float32, beta: cutlass.Float32):
        # Past D's edge the TMA store clips: those accumulators read C and the bias at a clamped
        # index (always in bounds) instead of branching.
        last_m, last_n = cute.size(c, mode=[0]) - 1, cute.size(c, mode=[1]) - 1
        for i in cutlass.range_constexpr(cute.size(acc)):
            m, n = coords[i]
            m, n = cutlass.min(m, last_m), cutlass.min(n, last_n)
            v = acc[i] * alpha
            if cutlass.const_expr(self.epi.residual):
                v = v + beta * c[m, n].to(cutlass.Float32)
            if cutlass.const_expr(self.epi.bias == "col"):
                v = v + bias[n].to(cutlass.Float32)
            if cutlass.const_expr(self.epi.bias == "row"):
                v = v + bias[m].to(cutlass.Float32)
            acc[i] = activate(v, self.epi.act)

    @cute.jit
    def store(self, acc: cute.Tensor, sd: cute.Tensor, gd: cute.Tensor, tma_d: cute.CopyAtom,
              mma: cute.TiledMma, tidx, warp):
        d_layout = utils.LayoutEnum.ROW_MAJOR
        r2s = cute.make_tiled_copy_S(
            sm90.get_smem_store_op(d_layout, elem_ty_d=self.d_type, elem_ty_acc=cutlass.Float32),
            cute.make_tiled_copy_C_atom(
                cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), self.d_type), mma))
        thr_r2s = r2s.get_slice(tidx)
        r2s_dst = thr_r2s.partition_D(sd)
        r2s_acc = r2s.retile(acc)
        piece_layout = cute.make_layout(cute.shape(thr_r2s.partition_S(sd))[:3])
        piece = cute.make_rmem_tensor_like(piece_layout, cutlass.Float32)
        piece_out = cute.make_rmem_tensor_like(piece_layout, self.d_type)
        s_src, g_dst = cute.nvgpu.cpasync.tma_partition(tma_d, 0, cute.make_layout(1), cute.group_modes(sd, 0, 2),
                                                        cute.zipped_divide(gd, self.epi_tile))
        pieces = cute.size(cute.zipped_divide(gd, self.epi_tile), mode=[1])
        grid_shape = cute.zipped_divide(gd, self.epi_tile).shape[1]
        piece_order = cute.make_layout(grid_shape, stride=(grid_shape[1], 1))
        stores = pipeline.PipelineTmaStore.create(
            num_stages=self.epi_stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.threads))
        n_piece = cute.size(piece)
        for p in cutlass.range_constexpr(pieces):
            for v in cutlass.range_constexpr(n_piece):
                piece[v] = r2s_acc[p * n_piece + v]
            piece_out.store(piece.load().to(self.d_type))
            buf = p % self.epi_stages
            cute.copy(r2s, piece_out, r2s_dst[None, None, None, buf])
            cute.arch.fence_proxy("async.shared", space="cta")
            pipeline.sync(barrier_id=1)
            if warp == 0:
                cute.copy(tma_d, s_src[None, buf], g_dst[None, piece_order.get_hier_coord(p)])
                stores.producer_commit()
                stores.producer_acquire()
            pipeline.sync(barrier_id=1)
        if warp == 0:
            stores.producer_tail()
