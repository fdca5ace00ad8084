#!/usr/bin/env bash
# Runs on the GPU machine: the GPU tests, tuning of the llama3-8b set (twice: the second run must
# hit the DB for all 15 GEMMs), and the side-by-side benchmarks. Every step has a time limit;
# full logs go to $OUT; a short table comes last. Uses build/ as carried (or builds it).
#   scripts/gpu-check.sh [tests|tune|bench|sass|all]     (default: all)
# Knobs: GPU_TESTS_FILTER (gtest filter), SEARCH (fast|default|exhaustive, default fast),
#        BENCH_EXTRA (extra problems for the second bench, e.g. "--model llama3-70b --tokens 4096,8192").
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${OUT:-/tmp/gf-out}
mkdir -p "$out"
export GEMMFORGE_HOME=${GEMMFORGE_HOME:-/tmp/gf-home}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gf=build/gemmforge
search=${SEARCH:-fast}
status=0
step() { echo; echo "== $*"; }

[ -x "$gf" ] || bash scripts/setup.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
"$gf" doctor > "$out/doctor.txt" 2>&1

if [ "$what" = all ] || [ "$what" = tests ]; then
  step "GPU tests"
  GF_TEST_TIMEOUT=90 timeout ${T_TESTS:-150} build/tests/gf_gpu_tests --gtest_brief=1 --gtest_filter="${GPU_TESTS_FILTER:-*}" \
    > "$out/gpu-tests.log" 2>&1 || status=1
  grep -E "FAILED|TIMEOUT|PASSED|tests ran" "$out/gpu-tests.log" | tail -25
fi

if [ "$what" = all ] || [ "$what" = sass ]; then
  step "SASS of the main native variants: HGMMA count, local-memory traffic"
  rm -rf /tmp/gf-dump
  GEMMFORGE_DUMP=/tmp/gf-dump timeout 120 "$gf" compile -p 4096x4096x4096:bf16 -p 16x4096x14336:bf16 -b native \
    -s fast --no-cache >/dev/null 2>&1
  for f in /tmp/gf-dump/*.cubin; do
    sass=$(cuobjdump --dump-sass "$f")
    printf "%-66s HGMMA %4d  LDL/STL %d\n" "$(basename "$f" .cubin)" "$(grep -c HGMMA <<<"$sass")" \
      "$(grep -cE '\b(LDL|STL)\b' <<<"$sass")"
  done | tee "$out/sass.txt"
fi

if [ "$what" = all ] || [ "$what" = tune ]; then
  step "tune llama3-8b (cold), then again (DB hits)"
  "$gf" db clear >/dev/null
  start=$(date +%s.%N)
  timeout ${T_TUNE:-150} "$gf" tune --model llama3-8b --tokens 16,128,4096 -s "$search" --json "$out/tune-cold.json" \
    > "$out/tune-cold.txt" 2>&1 || status=1
  cold=$(awk "BEGIN{print $(date +%s.%N) - $start}")
  start=$(date +%s.%N)
  timeout 30 "$gf" tune --model llama3-8b --tokens 16,128,4096 -s "$search" --json "$out/tune-warm.json" \
    > "$out/tune-warm.txt" 2>&1 || status=1
  warm=$(awk "BEGIN{print $(date +%s.%N) - $start}")
  tail -2 "$out/tune-warm.txt"
  printf "tune wall time: cold %.1f s, warm %.2f s\n" "$cold" "$warm" | tee "$out/tune-times.txt"
fi

if [ "$what" = all ] || [ "$what" = bench ]; then
  step "bench llama3-8b"
  timeout ${T_BENCH:-120} "$gf" bench --model llama3-8b --tokens 16,128,4096 -s "$search" --json "$out/bench-8b.json" \
    > "$out/bench-8b.txt" 2>&1 || status=1
  if [ -n "${BENCH_EXTRA:-}" ]; then
    step "bench $BENCH_EXTRA"
    # shellcheck disable=SC2086
    timeout ${T_EXTRA:-110} "$gf" bench $BENCH_EXTRA -s "$search" --json "$out/bench-extra.json" > "$out/bench-extra.txt" 2>&1 \
      || status=1
  fi
  step "summary (us; native and cuBLASLt best, ratio = cuBLASLt / native)"
  python3 scripts/summarize.py "$out"/bench-*.json
fi
exit $status
