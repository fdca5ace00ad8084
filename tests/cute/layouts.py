"""The layout facts python/gemmforge_cute/gemm_sm90.py and its mixins rely on, checked on the DSL's
layout algebra at trace time (no GPU): where wgmma's accumulators of a thread sit in its tile.

- Block scales (block_scale_source): the accumulators ((j, r, g), step, n) of a thread share the
  row of ((0, r, 0), step, 0): one A scale each r and M step.
- SwiGLU (gate_and_up_accumulators): in the main loop's MMA, as wide as B's gate and up rows
  together, column group g < groups/2 of a thread holds the output MMA's element of the same index
  (the gate's), and g + groups/2 that column plus tile_n/2 (its up value); the accumulators of the
  kernel's rmem tensor are compact, (2, 2, groups) at strides (1, 2, 4).
Exits 77 (skipped) where nvidia-cutlass-dsl is missing.
"""
import os
import sys

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
try:
    import cutlass
    import cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90
except ImportError as e:
    print(f"skipped: nvidia-cutlass-dsl is missing ({e})")
    sys.exit(77)

THREADS = (0, 37, 101, 127, 128, 205, 255)  # of each warp of the first warpgroup, and of the second
failures = []


def mma(warpgroups, width):
    k = cute.nvgpu.OperandMajorMode.K
    return sm90.make_trivial_tiled_mma(cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, k, k, cutlass.Float32,
                                       (warpgroups, 1, 1), tiler_mn=(64, width))


def coords(tiled, tidx, tile_m, tile_n):
    return tiled.get_slice(tidx).partition_C(cute.make_identity_tensor((tile_m, tile_n)))


def block_rows(tile_m, tile_n, warpgroups):
    tiled = mma(warpgroups, tile_n)
    for tidx in THREADS[:3 + 4 * (warpgroups - 1)]:
        c = coords(tiled, tidx, tile_m, tile_n)
        (_, _, groups), steps, cols = cute.shape(c)
        for step in range(steps):
            for r in range(2):
                row = c[(0, r, 0), step, 0][0]
                for n in range(cols):
                    for g in range(groups):
                        for j in range(2):
                            if c[(j, r, g), step, n][0] != row:
                                failures.append(f"block rows {tile_m}x{tile_n}: thread {tidx} ({j},{r},{g}),{step},{n}")


def gate_halves(tile_m, tile_n, warpgroups):
    whole, out = mma(warpgroups, tile_n), mma(warpgroups, tile_n // 2)
    half = tile_n // 2
    for tidx in THREADS[:3 + 4 * (warpgroups - 1)]:
        c, o = coords(whole, tidx, tile_m, tile_n), coords(out, tidx, tile_m, half)
        (_, _, groups), steps, _ = cute.shape(c)
        if cute.shape(o) != ((2, 2, groups // 2), steps, 1):
            failures.append(f"gate {tile_m}x{tile_n}: output partition {cute.shape(o)} against {cute.shape(c)}")
            return
        for step in range(steps):
            for g in range(groups // 2):
                for r in range(2):
                    for j in range(2):
                        gate, up, want = c[(j, r, g), step, 0], c[(j, r, g + groups // 2), step, 0], o[(j, r, g), step, 0]
                        if tuple(gate) != tuple(want) or (up[0], up[1]) != (want[0], want[1] + half):
                            failures.append(f"gate {tile_m}x{tile_n}: thread {tidx} ({j},{r},{g}),{step}: "
                                            f"{gate} {up} against {want}")
    acc = cute.make_rmem_tensor(coords(whole, 0, tile_m, tile_n).shape, cutlass.Float32)
    if acc.layout.stride[0] != (1, 2, 4):
        failures.append(f"gate {tile_m}x{tile_n}: accumulators not compact: {acc.layout}")


@cute.jit
def check():
    for tile_m, tile_n, warpgroups in ((64, 64, 1), (64, 128, 1), (128, 64, 2), (128, 128, 2)):
        block_rows(tile_m, tile_n, warpgroups)
    # Gated tiles: one warpgroup (64 rows; 128 in two M steps up to 128 wide), two past 128 wide.
    for tile_m, tile_n, warpgroups in ((64, 128, 1), (64, 256, 1), (128, 128, 1), (128, 256, 2)):
        gate_halves(tile_m, tile_n, warpgroups)


cute.compile(check, options="--gpu-arch sm_90a")
if failures:
    print("\n".join(failures[:20]))
    sys.exit(1)
print("layouts: block scales' rows and SwiGLU's halves as gemm_sm90.py assumes")
