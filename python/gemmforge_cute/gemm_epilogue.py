"""The epilogue of gemmforge's Hopper GEMM (gemm_sm90.py), a mixin of Sm90Gemm: the whole tile's
accumulators scaled and biased on the registers (scale_and_bias), then a store piece at a time
gated, or added to beta * C and activated, and stored through shared memory by TMA (store); C
brought in by TMA ahead of it into buffers of its own (load_c); split-K's slices summed in a
workspace first (reduce_split)."""
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90

from activations import activate, swiglu_pair


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


class EpilogueSm90:
    """Sm90Gemm's epilogue methods; they read the template's configuration from self (tiling,
    epi, tile, pieces, ...)."""

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
