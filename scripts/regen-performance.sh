#!/usr/bin/env bash
# Regenerates docs/PERFORMANCE.md and docs/plots from the JSON of the GPU runs kept in docs/data/
# (scripts/report.py; each section's title names its run). Edit the list when a run adds or
# replaces a section.
set -euo pipefail
cd "$(dirname "$0")/.."
d=docs/data
python3 scripts/report.py --run-info $d/run.json --targets $d/targets.json --bench $d/bench-llama3-8b.json \
  --heldout $d/heldout-qwen2.5-7b.json $d/heldout-phi3-mini.json \
  --backend-bench \
  "Decode, one and eight tokens: native (its swap-AB kernels) beside cuBLASLt (llama3-8b; its own run, 2026-12-03 06:44 UTC, 3 rounds)=$d/bench-llama3-8b-decode-1-8.json" \
  "Decode at one token: native beside cuBLASLt, and a copy of each GEMM's bytes (llama3-8b; its own run, 2026-12-04 19:29 UTC, 3 rounds)=$d/bench-llama3-8b-decode-1-copy.json" \
  "Decode on llama3-70b, 1, 16 and 128 tokens: native beside cuBLASLt, and a copy of each GEMM's bytes (its own run, 2026-12-04 19:30 UTC, 3 rounds)=$d/bench-llama3-70b-decode.json" \
  "CuTe DSL beside cuBLASLt at 16 and 128 tokens (llama3-8b, the GEMMs its small-M ranking was fitted on; its own run, 2026-12-04 20:29 UTC, 5 rounds, the ranking without the persistent gain)=$d/bench-cute-small-llama3-8b.json" \
  "CuTe DSL beside cuBLASLt at 16 and 128 tokens on llama3-70b, held out from that fit (its own run, 2026-12-04 20:30 UTC, 5 rounds)=$d/bench-cute-small-llama3-70b.json" \
  "CuTe DSL beside cuBLASLt at 77 tokens, held out (qwen2.5-7b and phi3-mini; its own run, 2026-12-04 20:31 UTC, 5 rounds)=$d/heldout-77-cute.json" \
  "CuTe DSL beside cuBLASLt and native (llama3-8b at 4096 tokens; its own run, 2026-12-04 16:52 UTC; one CTA a tile, persistent cooperative and ping-pong schedules)=$d/bench-cute-llama3-8b-4096.json" \
  "CuTe DSL beside cuBLASLt and native at 8192 tokens (llama3-8b) and on llama3-70b at 4096 and 8192 tokens (its own run, 2026-12-04 16:56-17:02 UTC)=$d/bench-cute-large-m.json" \
  "The plain kernels of the fused run below: CuTe DSL and native beside cuBLASLt, and a copy of each decode GEMM's bytes (llama3-8b; its own run, 2026-12-04 19:27 UTC, 3 rounds)=$d/bench-cute-plain-beside-fused-llama3-8b.json" \
  "Fused epilogues (--fuse natural: o and down + residual, gate_up + SwiGLU; qkv has no bias in llama3): CuTe DSL and native beside cuBLASLt (llama3-8b; the same call, 19:28 UTC, 3 rounds; the CuTe DSL residual read by TMA)=$d/bench-cute-fused-llama3-8b.json" \
  "Held out, native beside cuBLASLt (qwen2.5-7b and phi3-mini at 77 and 1000 tokens, and primes, tiny N or K: the shapes of gpu-check.sh heldout; ON AN H100, its own run, 2026-12-05 15:25-15:27 UTC, 3 rounds, a build of 8f5aaa5's tree)=$d/heldout-h100.json" \
  "Held out at 77 tokens after swap-AB up to 128 rows: native beside cuBLASLt (qwen2.5-7b and phi3-mini; its own run, 2026-12-03 12:31 UTC)=$d/heldout-77-swapab.json" \
  "Held out at 77 tokens, three backends: CuTe DSL and native beside cuBLASLt (qwen2.5-7b and phi3-mini; its own run, 2026-12-04 19:39 UTC, after CuTe DSL's swap-AB with one wide token tile)=$d/heldout-77-three-backends.json" \
  "FP8 e4m3, rowwise scales: CuTe DSL and native beside cuBLASLt (llama3-8b at 16, 128 and 4096 tokens; its own run after the loader fix, 2026-12-03 18:08 UTC)=$d/bench-cute-fp8-rowcol-llama3-8b.json" \
  "CUTLASS C++ beside cuBLASLt and native (llama3-8b; its own run, 2026-12-03 08:59 UTC)=$d/bench-cutlass-llama3-8b.json" \
  "CUTLASS C++ beside cuBLASLt and native (llama3-70b at 4096 and 8192 tokens; its own run, 2026-12-03 14:47-14:50 UTC, 3 rounds)=$d/bench-cutlass-llama3-70b.json" \
  "CUTLASS C++, the best of its exhaustive list (16 kernels in 12 tile orders each), beside cuBLASLt (llama3-8b o, gate_up and down at 4096 tokens; its own run, 2026-12-03 15:46 UTC, 3 rounds)=$d/bench-cutlass-exhaustive.json" \
  "FP8 e4m3, per-tensor scales: CUTLASS and native beside cuBLASLt (llama3-8b; its own run, 2026-12-03 09:00 UTC, 3 rounds)=$d/bench-cutlass-fp8-tensor-llama3-8b.json" \
  "FP8 e4m3, rowwise scales: CUTLASS and native beside cuBLASLt (llama3-8b at 128 and 4096 tokens; its own run, 2026-12-03 12:08 UTC)=$d/bench-cutlass-fp8-rowcol-llama3-8b.json" \
  "FP8 e4m3, rowwise scales: native beside cuBLASLt (llama3-70b at 4096 and 8192 tokens; its own run, 2026-12-03 14:54 UTC, 3 rounds)=$d/bench-fp8-rowcol-llama3-70b.json" \
  "FP8 e4m3, 1x128 / 128x128 block scales: CUTLASS beside native, cuBLASLt refuses them (llama3-8b at 128 and 4096 tokens; its own run, 2026-12-03 12:09 UTC)=$d/bench-cutlass-fp8-block128-llama3-8b.json" \
  "FP8 e4m3, 128x128 block scales: native alone, cuBLASLt refuses them (llama3-8b at 4096 tokens; 2026-12-04 17:03 UTC, after the promotion change)=$d/bench-fp8-block128-llama3-8b.json" \
  "FP8 e4m3, rowwise scales, fused epilogues beside their plain GEMMs: native and CuTe DSL (llama3-8b o + residual, gate_up + SwiGLU, up + bias + erf GELU at 128 and 4096 tokens; cuBLASLt has none of these three epilogues with rowwise scales; its own run, 2026-12-06 00:50 UTC, 3 rounds, af0b563's build: CuTe DSL's C in the spare shared memory and SiLU by an approximate reciprocal, native's C and scales read ahead at decode tiles)=$d/fp8/bench-fused-rowcol-llama3-8b.json" \
  "FP8 e4m3, 128x128 block scales: native alone with promotion by column halves at 192 wide in its fast lists (llama3-8b at 4096 tokens; ON AN H100, its own run, 2026-12-06 03:32 UTC, 3 rounds)=$d/fp8/bench-block128-halves-h100.json" \
  "FP8 e4m3, rowwise scales, three backends: native and Triton (Inductor's scaled_mm space) beside cuBLASLt (llama3-8b at 128 and 4096 tokens; ON AN H100, its own run, 2026-12-05 15:17 UTC, 3 rounds)=$d/fp8/bench-rowcol-triton-h100.json" \
  "FP8 e4m3, 128x128 block scales: CuTe DSL beside native (llama3-8b at 4096 tokens; ON AN H100, its own run, 2026-12-05 15:11 UTC, b22e7bb's build)=$d/fp8/bench-cute-block128-h100.json" \
  "CuTe DSL beside cuBLASLt and native at 4096 and 8192 tokens (llama3-8b; ON AN H100, power-capped at 700 W through the run, its own run, 2026-12-05 15:12-15:15 UTC, 5 rounds)=$d/bench-cute-large-m-h100.json" \
  "Fused epilogues at 16 tokens (--fuse natural): CuTe DSL and native beside cuBLASLt (llama3-8b; ON AN H100, its own call, 2026-12-06 03:53 UTC, 3 rounds, 32c6287's build and the CuTe DSL kernels of 266d331's Python)=$d/cute/bench-fused-16-h100.json" \
  "Their plain kernels in the same call (03:52 UTC)=$d/cute/bench-plain-16-h100.json" \
  "Bias + erf GELU in its erfc form (the spill rules refitted on it) beside the plain GEMM: native and cuBLASLt, which has no rowwise-scaled GELU (llama3-8b up at 4096 tokens in bf16 and fp8 rowwise, fp8 at 128; its own run, 2026-12-05 05:27 UTC, 3 rounds)=$d/fp8/bench-gelu-erfc.json" \
  --race "CUTLASS's 16 kernels in 12 tile orders each and cuBLASLt's 8 in one tuner race (llama3-8b o and gate_up at 4096 tokens, -s exhaustive; 2026-12-03 15:46 UTC)=$d/cutlass/race-exhaustive-4096.json" \
         "CuTe DSL's fast list at 16 tokens in one tuner race, after the loader fix (llama3-8b o; 2026-12-03 18:04 UTC)=$d/cute-race-16.json" \
         "Every bf16 CuTe DSL kernel and cuBLASLt's in one tuner race per GEMM: the data of cute's small-M fit (llama3-8b at 16 and 128 tokens, -s exhaustive; 2026-12-04 17:02 UTC)=$d/cute-race-exhaustive-16-128.json" \
         "The same at 77 tokens (qwen2.5-7b, phi3-mini: held out from that fit) and 128 (llama3-8b), with swap-AB's one wide token tile (n96, n128) past 64 tokens (2026-12-04 19:38 UTC)=$d/cute-race-exhaustive-77-128.json" \
         "Native fp8 block scales, every kernel of the exhaustive list's g8m rasters in one race per GEMM, A's scales loaded by each thread a k-block ahead (fa47ea6's build; -s exhaustive --only g8m_scaleblock128; 2026-12-05 03:4x UTC)=$d/fp8/block-race-before.json" \
         "The same in the same device call (run just before the one above), A's scales by TMA with each stage (the first form, boxes from the tile's first row)=$d/fp8/block-race-after.json" \
         "Native fp8 block scales, every kernel of the exhaustive list's g8m rasters in one race per GEMM, promotion by column halves among them (266d331's build; -s exhaustive --only g8m_scaleblock128; 2026-12-06 03:07 UTC)=$d/fp8/block-race-halves.json" \
         "Native fp8 rowwise + bias + erf GELU (erff's), every ping-pong kernel in one race (4096x14336x4096, -s exhaustive --only _pp_; 2026-12-05 03:4x UTC)=$d/fp8/gelu-pingpong-race.json" \
  --search-gap "--search fast against exhaustive on held-out shapes: native (phi3-mini qkv and o, qwen2.5-7b o at 77 tokens, the exhaustive list's g8m rasters; races of 2026-12-03 14:43 UTC (qkv) and 2026-12-06 03:07 UTC (o), the fast lists of 8630cfd's model, not fitted on them)=$d/search/heldout-77-fast-candidates.json,$d/search/heldout-77-exhaustive.json" \
    "--search fast against exhaustive on the shapes the native model was fitted on (llama3-8b at 16, 128, 4096 and 8192 tokens, g8m rasters; races of 2026-12-06 03:05-03:08 UTC, 8630cfd's fast lists; tests/data/fitted-races.json)=$d/search/fitted-fast-candidates.json,tests/data/fitted-races.json" \
    "--search fast against exhaustive, native fp8 rowwise decode, on which no model constant was fitted (llama3-8b at 16 tokens, g8m rasters; ON AN H100, 2026-12-06 03:31 UTC; 8630cfd's fast lists)=$d/search/fp8-rowcol-decode-fast-candidates.json,$d/search/fp8-rowcol-16-exhaustive-h100.json" \
    "The same at 128 tokens (ON AN H100, 2026-12-06 03:31 UTC)=$d/search/fp8-rowcol-decode-fast-candidates.json,$d/search/fp8-rowcol-128-exhaustive-h100.json" \
    "--search fast against exhaustive on held-out shapes: CuTe DSL (qwen2.5-7b and phi3-mini at 77 tokens; the fast lists of 2026-12-05 looked up in the race of every bf16 CuTe DSL kernel of 2026-12-04 19:38 UTC, no fit on these shapes)=$d/search/cute-heldout-77-fast-candidates.json,$d/cute-race-exhaustive-77-128.json" \
    "The same on the shapes CuTe DSL's small-M ranking was fitted on (llama3-8b at 128 tokens, same race)=$d/search/cute-llama3-8b-128-fast-candidates.json,$d/cute-race-exhaustive-77-128.json" \
    "--search fast against exhaustive, native fp8 block scales at 4096 tokens (the fast lists of 2026-12-05 06:5x, whose promotion-ahead gain was fitted on this very race: in-sample)=$d/search/block128-4096-fast-candidates.json,$d/fp8/block-race-after.json" \
    "--search fast against exhaustive, native fp8 block scales at 4096 tokens, with promotion by halves in the race (266d331's fast lists; 2026-12-06 03:07 UTC)=$d/search/block128-4096-halves-fast-candidates.json,$d/fp8/block-race-halves.json" \
    "The same race, 585a899's and 8630cfd's fast lists (promotion by halves in them at 192 wide)=$d/search/block128-4096-halves-fast-candidates-585a899.json,$d/fp8/block-race-halves.json" \
  --runtime $d/runtime.json --compile $d/compile/cute-alone-llama3-8b.json $d/compile/native-alone-llama3-8b.json $d/compile/triton-alone-llama3-8b.json $d/compile/fp8-*-llama3-8b.json --ops $d/rowops-backends.json \
  --torch $d/decoder-layer.json --ab "The same problems, two builds, one run: the restructuring of issue 19 (87d3734 before, ac88451 after; 2026-12-01 21:43-21:47 UTC)=$d/ab/before-87d3734.json,$d/ab/after-ac88451.json" \
    "Native decode, two builds, one run: C's elements and the fp8 scales read ahead of the main loop at decode tiles (a9b4374 before, af0b563 after; llama3-8b in e4m3 rowwise at 16 and 128 tokens, and bf16 o and down with and without a residual at 16; 2026-12-06 00:51-00:52 UTC, one turn, 3 rounds each)=$d/ab/fp8-decode-rowcol-before-a9b4374.json,$d/ab/fp8-decode-rowcol-after-af0b563.json" \
    "The same with per-tensor scales (llama3-8b in e4m3 at 16 and 128 tokens; 2026-12-06 00:53 UTC)=$d/ab/fp8-decode-tensor-before-a9b4374.json,$d/ab/fp8-decode-tensor-after-af0b563.json" \
    "The small-M model refitted on full races (af0b563 before, 266d331 after: a trip of stages k-blocks 1 us, narrow boxes 0.9 + 0.1 * 64/BN; llama3-8b in e4m3 rowwise at 16 and 128 tokens, bf16 o and down + residual at 16, bf16 o and down at 128; 2026-12-06 03:02-03:04 UTC, turn 1 of 2, 3 rounds each)=$d/ab/refit-turn1-before-af0b563.json,$d/ab/refit-turn1-after-266d331.json" \
    "The same, turn 2 (the two builds alternated)=$d/ab/refit-turn2-before-af0b563.json,$d/ab/refit-turn2-after-266d331.json" \
    "The native model's lone ping-pong and an SM's streaming bound at small M (since replaced by an idle-SM cost), ping-pong raced at large M and promotion by halves in the block-scaled lists (266d331 before, 32c6287's model after (built from its tree before its comments were final); ON AN H100, llama3-8b bf16 at 16, 128 and 4096 tokens, 8192x6144x4096 and the held-out o at 77 tokens; 2026-12-06 03:33 UTC, one turn, 3 rounds)=$d/ab/model-h100-bf16-before.json,$d/ab/model-h100-bf16-after.json" \
    "The same in fp8 rowwise at 16 and 128 tokens (ON AN H100, 2026-12-06 03:34 UTC, one turn: the same kernel read 15.0 and 15.8 us in the two builds' runs, so the spread here is about 5%)=$d/ab/model-h100-fp8-before.json,$d/ab/model-h100-fp8-after.json" \
    "The same problems, two builds, one run: CuTe DSL's epilogue scales and bias on the whole tile, block scales promoted as vector ops (889b6da before, b22e7bb after; ON AN H100, 2026-12-05 15:21 UTC, the two builds alternated twice, 3 rounds each)=$d/ab/cute-epilogue-before-889b6da.json,$d/ab/cute-epilogue-after-b22e7bb.json" \
  --prepare "the tuning host (its local DB and kernel cache)=$d/fleet/prepare-local.json" \
            "a fresh host reading the Redis store=$d/fleet/prepare-redis-fresh-host.json" \
  --chain $d/chain/chain-llama3-8b-1.json $d/chain/chain-llama3-8b-16.json $d/chain/chain-llama3-8b-128.json \
  --quantize $d/quantize.json --out docs/PERFORMANCE.md --plots docs/plots
