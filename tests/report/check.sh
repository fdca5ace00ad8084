#!/usr/bin/env bash
# scripts/report.py turns stored bench and bench-ops JSON into the performance page: the GEMM
# tables with intervals, the verdicts, and the row ops against the copy bandwidth.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$root/tests/data/report
out=$(mktemp -d)
python3 "$root/scripts/report.py" --run-info "$data/run.json" --bench "$data/bench.json" --ops "$data/ops.json" \
  --ab "a build against itself=$data/bench.json,$data/bench.json" --heldout "$data/bench.json" --runtime "$data/runtime.json" \
  --compile "$data/compile.json" --torch "$data/torch.json" --chain "$data/chain.json" --quantize "$data/quantize.json" \
  --scaled-mm "$data/scaled_mm.json" --targets "$data/targets.json" \
  --race "a race=$data/race.json" --search-gap "fast vs exhaustive=$data/fast-candidates.json,$data/exhaustive.json" \
  --out "$out/PERFORMANCE.md" --plots "$out/plots" >/dev/null
page=$out/PERFORMANCE.md
fail() { echo "report: $*"; cat "$page"; exit 1; }
grep -q "^## GEMMs" "$page" || fail "no GEMM section"
grep -q "| llama3-8b qkv M=4096 | " "$page" || fail "no row for qkv at M=4096"
grep -Eq "^\| 4096 \| native \| 2 \| 1\.0[0-9]{2} \[" "$page" || fail "no native geomean at M=4096 near 1.03"
grep -Eq "^\| 4096 \| native .*\| faster \|$" "$page" || fail "native at M=4096 should be called faster"
grep -Eq "^\| 16 \| native .*\| slower \|$" "$page" || fail "native at M=16 should be called slower"
grep -Eq "^\| 4096 \| choice \| 2 \| 1\.0[0-9]{2} \[" "$page" || fail "no row for the tuned choice at M=4096"
grep -q "within noise" "$page" || fail "a build against itself should be within noise"
grep -q "| \`softmax:65536x4096:bf16\` | native | \`_t512_r2_v8_x1\` | 263.1 | 4.08 | 96.2 | 96.2 | 82.5 | 93.2 | 6/10 |" "$page" || fail "row-op row with each backend's best"
grep -q "^## GEMMs held out" "$page" || fail "no held-out section"
[ "$(grep -c "replayed from a CUDA graph" "$page")" = 2 ] || fail "no graph-mode summary for both sets"
grep -q "| llama3-8b qkv M=16 | 50.7 | 14.4 | 3.52 | 80 | 78 | 78 |" "$page" || fail "no row against a copy of the same bytes"
grep -q "| Runtime::gemm -> cuBLASLt | 3.60 | \[3.50, 3.80\] | 0.50 | \[0.40, 0.60\] |" "$page" || fail "runtime row"
grep -q "| native | 2 | 2.00 | 1.50 | 2.50 |" "$page" || fail "compile times: cached compiles must not count"
grep -q "| 128 | forward | gemmforge | 0.400 | \[0.400, 0.400\] | 1.250 | 5.0 | 0.0040 |" "$page" || fail "torch layer row"
grep -q "| 128 | forward | gemmforge + torch.compile | failed: RuntimeError: planted" "$page" || fail "failed torch mode"
grep -q "| \`F.linear\` | 11.00 | \[10.00, 12.00\] |" "$page" || fail "torch host overhead row"
grep -q "| llama3-8b | 16 | native + PDL | 80.00 | \[79.00, 81.00\] | 1.250 | 15.00 | the same (rel err 0.0e+00) |" "$page" || fail "chain row"
# quantization against a copy of the same bytes (3.9 TB/s), not the run's 2 GiB copy (4.0)
grep -q "| 1x128 | 4096x4096 | 1.00 | 3.00 | 3.80 | 3.90 | 97.4 | 1.0000 |" "$page" || fail "quantize row"
# scaled_mm: speed against the faster torch mode (rowwise o: 10 / 8), the geomean of o and qkv
# (sqrt(1.25 * 0.8) = 1.000), a torch mode that failed left out.
grep -q "| rowwise | llama3-8b o | 16x4096x4096 | 12.0 | 10.0 | 8.0 | 1.250 | 1.2e-03 | \`native:k_a\` |" "$page" \
  || fail "scaled_mm row"
grep -q "| rowwise | 16 | 2 | 1.000 | 0.800 |" "$page" || fail "scaled_mm geomean"
grep -q "| tensor | llama3-8b o | 16x4096x4096 | 11.0 | - | 10.0 | 1.100 |" "$page" || fail "scaled_mm without a torch mode"
grep -q "| \`4096x4096x4096:bf16\` | cutlass | \`k_ok\` | 204.0 | 0.980 | 1/2 |" "$page" || fail "race row: the best verified"
grep -q "| \`77x3584x3584:bf16\` | 10.0 | 11.0 | 1.100 | \`c\` |" "$page" || fail "search gap row"
# the targets' table (scripts/targets.py): each measure's figure and verdict, the first section.
[ "$(grep -m1 "^## " "$page")" = "## Where the issues' targets stand" ] || fail "the targets' table is not first"
grep -q "| 1 | native at M = 4096 >= 1.0x | 1.029 \[1.0[0-9]*, 1.0[0-9]*\], min 1.026 (2 GEMMs) | test | met |" "$page" \
  || fail "targets: speed, met"
grep -q "| 1 | native at M = 16, none below 1.0 | 0.979 .*, min 0.978 (2 GEMMs) | test | not met |" "$page" \
  || fail "targets: each_at_least"
# A second turn of the same GEMMs is more readings of them, not a replacement of the first.
grep -q "| 1 | native at M = 4096, two turns | 1.029 .*, min 1.026 (2 GEMMs, 4 readings) | test | met |" "$page" \
  || fail "targets: two turns"
grep -q "| 1 | native at M = 4096, N = 6144 | .*(1 GEMM) | test |" "$page" || fail "targets: problem_has"
grep -q "| 1 | native at M = 16, beside a copy | 0.980 .*(1 GEMM); a copy of the same bytes: 1.308 | test | - |" "$page" \
  || fail "targets: copy_bound"
# the launch floor: cuBLASLt's 20.02 us over (the copy's 14.4 us back to back + the smallest lone-launch cost, 2.0)
grep -q "| 1 | native at M = 16, beside its launch floor | 0.980 .*lone-launch cost (2.00 us): 1.221 | test | - |" "$page" \
  || fail "targets: launch_bound"
grep -q "| 1 | native at M = 8192 | - | test | not measured |" "$page" || fail "targets: no data"
grep -q "| 2 | cuBLASLt TFLOP/s at M = 4096, a report | 561 TFLOP/s geomean, 457 to 687 (2 GEMMs) | test | - |" "$page" \
  || fail "targets: tflops without a bound"
grep -q "| 2 | native TFLOP/s at M = 4096 | 577 TFLOP/s geomean, 473 to 703 (2 GEMMs) | test | met |" "$page" \
  || fail "targets: tflops"
grep -q "| 2 | fused within 3% | +2.0% to +5.0% (2 epilogues; worst \`128x14336x4096:e4m3:scale=rowcol+bias+gelu\`) | test | not met |" \
  "$page" || fail "targets: fused over plain"
# timed in the same rounds (one bench group): the per-round ratios' median (+2%), not the medians' (+20%)
grep -q "| 2 | fused within 3%, timed in the same rounds | +2.0% (1 epilogue; worst \`4096x4096x4096:bf16:residual\`, paired by round \[+2.0%, +20.0%\]) | test | met |" \
  "$page" || fail "targets: fused over plain, paired by round"
grep -q "| 3 | copy share, 32 MB of weights | 78% of the copy (1 GEMM) | test | not met |" "$page" || fail "targets: copy"
grep -q "| 3 | quantize | 97% of the copy (1 shape) | test | met |" "$page" || fail "targets: quantize"
grep -q "| 3 | compile | median 2.00 s (2 kernels) | test | not met |" "$page" || fail "targets: compile"
grep -q "| 3 | search gap | fast / exhaustive 1.100 geomean, worst 1.100 (1 GEMM) | test | not met |" "$page" \
  || fail "targets: search gap"
grep -q "| 3 | wins | cublaslt 1 of 1 GEMM | test | - |" "$page" || fail "targets: wins"
grep -q "| 3 | chain | 16 tokens, us: cuBLASLt (its own picks) 100.0, native 95.0, + PDL 80.0 | test | - |" "$page" || fail "targets: chain"
# scripts/summarize.py (gpu-check.sh's tables): the tuned choice and what it picked, per M.
summary=$(python3 "$root/scripts/summarize.py" "$data/bench.json")
grep -q "the tuned choice vs the faster of tuned and default cuBLASLt at M=4096: geomean 1.029 .* picked native 2" \
  <<<"$summary" || { echo "summarize: no tuned-choice line at M=4096"; echo "$summary"; exit 1; }
fused=$(python3 "$root/scripts/summarize.py" "$data/fused-grouped.json")
grep -q "native 4096x4096x4096:bf16:residual over its plain GEMM: +20.0%, paired by round +2.0%" <<<"$fused" ||
  { echo "summarize: no fused line paired by round"; echo "$fused"; exit 1; }
! grep -q "^copy .* over its plain" <<<"$fused" || { echo "summarize: a copy read as a fused kernel"; echo "$fused"; exit 1; }
# scripts/clocks.py (gpu-check.sh's last table): each step's clock and power from nvidia-smi's samples.
clocks=$(python3 "$root/scripts/clocks.py" "$root/docs/data/cute/pingpong-clocks-smi.csv" \
  "$root/docs/data/cute/pingpong-clocks-marks.txt")
grep -Eq "^bench-128x128_c2x1_pp +[0-9.]+ +1200 +945 +694 +708 +100%$" <<<"$clocks" ||
  { echo "clocks: no row for the ping-pong bench at 1200 MHz"; echo "$clocks"; exit 1; }
echo "report: tables, intervals, verdicts, both timing modes, held-out set, a copy of the same bytes, runtime, compile times, the torch layer, the PDL chain, quantization, a race, a search gap, the targets, the tuned choice and the clocks table as expected"
