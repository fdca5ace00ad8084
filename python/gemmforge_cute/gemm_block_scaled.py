"""FP8 block scales in gemmforge's Hopper GEMM (gemm_sm90.py), a mixin of Sm90Gemm: each k-block's
products come into registers of their own beside the accumulators, then are promoted into them
with their k-block's scales (A's per row, B's per 128x128 block) while the next k-block's wgmma
run."""
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90

from gemm_epilogue import by_row


class BlockScaledSm90:
    """Sm90Gemm's block-scaled main loop; it reads the template's configuration from self."""

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
