#!/usr/bin/env bash
# Runs on the GPU machine: GPU tests, tuning of the llama3-8b set (twice: the second run must hit
# the DB), and the side-by-side benchmark. Prints a short table last. Uses build/ as carried, or
# builds it when the build dependencies are there.
#   scripts/gpu-check.sh [tests|sass|tune|bench|all]   (default: all)
# GPU_TESTS_FILTER (a gtest filter) and BENCH_ARGS (extra arguments of gemmforge bench) narrow a run.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${OUT:-/tmp/gf-out}
mkdir -p "$out"
export GEMMFORGE_HOME=${GEMMFORGE_HOME:-/tmp/gf-home}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gf=build/gemmforge
status=0

[ -x "$gf" ] || bash scripts/setup.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
"$gf" doctor

if [ "$what" = all ] || [ "$what" = tests ]; then
  echo "== GPU tests"
  build/tests/gf_gpu_tests --gtest_brief=1 --gtest_filter="${GPU_TESTS_FILTER:-*}" 2>&1 | tee "$out/gpu-tests.log" | tail -40
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if [ "$what" = all ] || [ "$what" = sass ]; then
  echo "== SASS of the main native variants: HGMMA count, local-memory traffic"
  rm -rf /tmp/gf-dump
  GEMMFORGE_DUMP=/tmp/gf-dump "$gf" compile -p 4096x4096x4096:bf16 -p 16x4096x14336:bf16 -b native -s fast --no-cache >/dev/null
  for f in /tmp/gf-dump/*.cubin; do
    sass=$(cuobjdump --dump-sass "$f")
    printf "%-64s HGMMA %4d  LDL/STL %d\n" "$(basename "$f" .cubin)" "$(grep -c HGMMA <<<"$sass")" \
      "$(grep -cE '\b(LDL|STL)\b' <<<"$sass")"
  done
fi

if [ "$what" = all ] || [ "$what" = tune ]; then
  echo "== tune llama3-8b (cold), then again (DB hits)"
  "$gf" db clear >/dev/null
  /usr/bin/time -f "tune cold: %e s" "$gf" tune --model llama3-8b --tokens 16,128,4096 --json "$out/tune-cold.json" \
    2>&1 | tail -22 || status=1
  /usr/bin/time -f "tune warm: %e s" "$gf" tune --model llama3-8b --tokens 16,128,4096 --json "$out/tune-warm.json" \
    2>&1 | tail -3 || status=1
fi

if [ "$what" = all ] || [ "$what" = bench ]; then
  echo "== bench llama3-8b"
  "$gf" bench --model llama3-8b --tokens 16,128,4096 ${BENCH_ARGS:-} --json "$out/bench.json" | tee "$out/bench.txt" || status=1
fi
exit $status
