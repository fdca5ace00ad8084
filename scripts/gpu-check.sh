#!/usr/bin/env bash
# Runs on the GPU machine: the GPU tests, tuning of the llama3-8b set (twice: the second run must
# hit the DB for all 15 GEMMs), and the side-by-side benchmarks. Every step has a time limit;
# full logs go to $OUT; a short table comes last. Uses build/ as carried (or builds it).
#   scripts/gpu-check.sh [tests|tune|bench|heldout|runtime|launch|python|cute|ab|rowops|faults|sass|epilogue|ops|triton|search|cutlass|fused|fp8|chain|fleet|all]
#   (default: all)
#   tests: GPU tests; tune: llama3-8b tuned twice; bench: backends side by side (llama3-8b, BENCH_EXTRA);
#   heldout: the same for shapes no cost-model constant was fitted on (qwen2.5-7b, phi3-mini at odd
#   token counts, and odd shapes: primes, tiny N or K); runtime: host time of a gf::Runtime::gemm call
#   over a bare cuBLASLt call; launch: an empty kernel's device time alone and back to back (decode
#   GEMMs' launch shapes: what a lone launch costs before any work);
#   ab: the llama3-8b bench (or AB_ARGS' problems) of another build (BEFORE=path/to/gemmforge, made
#   by scripts/build-at.sh REV) and of this one, one after the other (AB_TURNS times); rowops:
#   bench-ops of the default row ops (and of BEFORE's, when given); faults: bench-ops
#   with planted faulty row-op configs; epilogue: fused vs cuBLASLt fused vs eager; ops: bench-ops
#   beside torch; triton: the Triton backend beside torch.compile max-autotune; search: --search fast
#   against the exhaustive best in one run (SEARCH_PROBLEMS); python: the Python package's GPU tests and
#   the decoder-layer benchmark, fp8 quantization and fp8 GEMMs beside torch (the package staged by
#   scripts/stage-python.sh in .carry/py);
#   cute: the CuTe DSL GPU tests (GEMMs, and the Triton and CuTe DSL row ops) and benches from kernels
#   compiled by scripts/precompile-cute.sh: llama3-8b at CUTE_TOKENS (in e4m3 with each scale kind of
#   CUTE_FP8_SCALES, default "rowcol block128"; CUTE_TESTS=0 skips the tests, CUTE_BF16=0 bf16,
#   CUTE_FP8=0 e4m3, CUTE_FUSE=0 the decoder layer's fused GEMMs), then
#   bench-ops with native, triton and cute side by side (CUTE_ROWOPS=0 skips it); with
#   CUTE_EXHAUSTIVE_TOKENS=16,128, every bf16 kernel against cuBLASLt's in a race per GEMM (llama3-8b, 70b).
#   cutlass: the CUTLASS backend's units compiled (nothing, where the carried kernel cache holds them:
#   CUTLASS_CACHE, default .carry/cutlass-kernels, is copied into $GEMMFORGE_HOME/kernels first; the
#   headers for the rest from a carried .carry/nvidia_cutlass-4.2.0.0-*.whl where pip has none), its
#   GPU tests, then the llama3-8b bench with -b cutlass,cublaslt,native (CUTLASS_BF16=0 skips it), and
#   e4m3 benches at M = 128, 4096 for each scale kind of CUTLASS_FP8_SCALES (e.g. "rowcol block128").
#   fused: fp8 fused epilogues (o + residual, gate_up + SwiGLU, up + bias + GELU) beside their plain
#   GEMMs, -b cublaslt,native,cute, for each scale kind of FUSED_SCALES (default rowcol) at FUSED_TOKENS
#   (default "128 4096"), and with FUSED_BF16_TOKENS (e.g. "16 128 4096") bf16 o and down + residual and
#   gate_up + SwiGLU beside their plain GEMMs in one call; the CuTe DSL kernels from the carried cache as for "cute".
#   fp8: the fp8 GPU tests (native, cuBLASLt), then llama3-8b in e4m3 with each scale kind of
#   FP8_SCALES (default "rowcol block128 tensor") at FP8_TOKENS (default 128,4096), -b cublaslt,native
#   (and triton, but for block128).
#   chain: bench-chain (a layer's GEMMs back to back, with and without programmatic dependent
#   launch, beside cuBLASLt) for CHAIN_MODELS at CHAIN_TOKENS.
#   fleet: two tuners sharing GPU 0 (--gpus 0,0) store the llama3-8b set in a Redis store (redis-server
#   from PATH or staged by scripts/stage-redis.sh), then `gemmforge prepare` times a serving start on
#   that host, on a fresh host reading the store, and on a fresh host with no decisions.
#   "all" is tests, sass, tune, bench, heldout, runtime. Last, every run prints the GPU's clock and
#   power through each step (scripts/clocks.py over nvidia-smi's samples).
# Knobs: SKIP_PYTEST=1 (python: the benchmarks alone), T_FP8_TESTS, T_FP8_BENCH (seconds per scale kind), FP8_SKIP_TESTS=1; GPU_TESTS_FILTER (gtest filter; default: all but Cutlass* and Cute*, which their steps run), SEARCH (fast|default|exhaustive, default fast),
#        SEARCH_PROBLEMS and SEARCH_ONLY (a name filter for the exhaustive side of "search"), FITTED_GROUP
#        (1, 2 or 3: "search" races a third of the cost model's fitted shapes instead, for store-races.py),
#        BENCH_EXTRA (extra problems for the second bench, e.g. "--model llama3-70b --tokens 4096,8192"),
#        BENCH_ROUNDS (interleaved rounds of each bench, odd; default 5), HELDOUT_TOKENS, HELDOUT_BACKENDS
#        (e.g. cublaslt,native; default all).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
what=${1:-all}
out=${OUT:-/tmp/gf-out}
mkdir -p "$out"
export GEMMFORGE_HOME=${GEMMFORGE_HOME:-/tmp/gf-home}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gf=build/gemmforge
search=${SEARCH:-fast}
status=0
# Each step's start, beside the GPU's clock and power sampled every 100 ms (scripts/clocks.py puts
# them side by side last): the H200 holds its power cap through sustained GEMMs and gives up clock.
step() {
  echo; echo "== $*"
  echo "$(date -u '+%Y/%m/%d %H:%M:%S.%N') $*" >> "$out/clock-marks.txt"
}

[ -x "$gf" ] || bash scripts/setup.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
: > "$out/clock-marks.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 100 \
  > "$out/clocks.csv" 2>/dev/null &
clocks_pid=$!
"$gf" doctor > "$out/doctor.txt" 2>&1

# The CuTe DSL kernels come compiled (this machine has no DSL): the home scripts/precompile-cute.sh
# filled, carried as .carry/cute-home.txz and unpacked here as GEMMFORGE_HOME.
use_carried_cute_kernels() {
  if [ -f .carry/cute-home.txz ]; then
    python3 -c "import tarfile; tarfile.open('.carry/cute-home.txz').extractall('/tmp/gf-cute')" 2>/dev/null || {
      echo "the carried CuTe DSL kernels (.carry/cute-home.txz) are damaged: run scripts/precompile-cute.sh again"
      status=1
    }
    export GEMMFORGE_HOME=/tmp/gf-cute/gf-home
  fi
}

if [ "$what" = all ] || [ "$what" = tests ]; then
  # The row-op tests run every backend, CuTe DSL's among them: they read the carried kernels (this
  # step only: the later steps of `all` keep the caller's home).
  home=${GEMMFORGE_HOME-unset}
  use_carried_cute_kernels
  step "GPU tests"
  GF_TEST_TIMEOUT=90 timeout "${T_TESTS:-480}" build/tests/gf_gpu_tests --gtest_brief=1 --gtest_filter="${GPU_TESTS_FILTER:-*-*Cutlass*:*Cute*}" \
    > "$out/gpu-tests.log" 2>&1 || { rc=$?; status=1; [ $rc = 124 ] && echo "GPU tests: stopped at ${T_TESTS:-480} s"; }
  if [ "$home" = unset ]; then unset GEMMFORGE_HOME; else export GEMMFORGE_HOME=$home; fi
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
  timeout "${T_TUNE:-240}" "$gf" tune --model llama3-8b --tokens 16,128,4096 -s "$search" --json "$out/tune-cold.json" \
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
  timeout "${T_BENCH:-240}" "$gf" bench --model llama3-8b --tokens 16,128,4096 -s "$search" --rounds "${BENCH_ROUNDS:-5}" \
    --json "$out/bench-8b.json" \
    > "$out/bench-8b.txt" 2>&1 || status=1
  if [ -n "${BENCH_EXTRA:-}" ]; then
    step "bench $BENCH_EXTRA"
    # shellcheck disable=SC2086
    timeout "${T_EXTRA:-110}" "$gf" bench $BENCH_EXTRA -s "$search" --rounds "${BENCH_ROUNDS:-5}" --json "$out/bench-extra.json" \
      > "$out/bench-extra.txt" 2>&1 || status=1
  fi
  step "summary (us; native and cuBLASLt best, ratio = cuBLASLt / native)"
  python3 scripts/summarize.py "$out"/bench-*.json
fi
if [ "$what" = cute ]; then
  use_carried_cute_kernels
  if [ "${CUTE_TESTS:-1}" = 1 ]; then
    step "CuTe DSL: GPU tests (GEMMs; Triton and CuTe DSL row ops) from the carried kernel cache"
    GF_TEST_TIMEOUT=90 timeout "${T_CUTE_TESTS:-300}" build/tests/gf_gpu_tests --gtest_brief=1 \
      --gtest_filter='*Cute*:*RowOpBackend*' > "$out/cute-tests.log" 2>&1 || status=1
    grep -E "FAILED|PASSED|tests ran" "$out/cute-tests.log" | tail -30
  fi
  if [ "${CUTE_BF16:-1}" = 1 ]; then
    step "CuTe DSL: llama3-8b at M = ${CUTE_TOKENS:-16,128,4096} (bf16) beside cuBLASLt and native"
    timeout "${T_CUTE_BENCH:-240}" "$gf" bench --model llama3-8b --tokens "${CUTE_TOKENS:-16,128,4096}" \
      -b cublaslt,native,cute -s fast --rounds "${BENCH_ROUNDS:-5}" --json "$out/bench-cute.json" \
      > "$out/bench-cute.txt" 2>&1 || status=1
    python3 scripts/summarize.py "$out/bench-cute.json"
  fi
  if [ "${CUTE_FP8:-1}" = 1 ]; then
    for scale in ${CUTE_FP8_SCALES:-rowcol block128}; do
      step "CuTe DSL: llama3-8b e4m3 scale=$scale at M = ${CUTE_TOKENS:-16,128,4096} beside cuBLASLt and native"
      timeout "${T_CUTE_FP8_BENCH:-200}" "$gf" bench --model llama3-8b --tokens "${CUTE_TOKENS:-16,128,4096}" \
        --dtype e4m3 --epilogue "scale=$scale" -b cublaslt,native,cute -s fast --rounds "${BENCH_ROUNDS:-5}" \
        --json "$out/bench-cute-fp8-$scale.json" > "$out/bench-cute-fp8-$scale.txt" 2>&1 || status=1
      python3 scripts/summarize.py "$out/bench-cute-fp8-$scale.json"
    done
  fi
  if [ "${CUTE_FUSE:-1}" = 1 ]; then
    # The decoder layer's fused GEMMs (gate_up+swiglu, qkv+bias, o/down+residual): each backend's
    # fused kernel against its plain one above.
    timeout "${T_CUTE_FUSE_BENCH:-240}" "$gf" bench --model llama3-8b --tokens "${CUTE_TOKENS:-16,128,4096}" \
      --fuse natural -b cublaslt,native,cute -s fast --rounds "${BENCH_ROUNDS:-5}" \
      --json "$out/bench-cute-fused.json" > "$out/bench-cute-fused.txt" 2>&1 || status=1
    python3 scripts/summarize.py "$out/bench-cute-fused.json"
  fi
  if [ -n "${CUTE_EXHAUSTIVE_TOKENS:-}" ]; then
    # Every bf16 kernel against cuBLASLt's in one race per GEMM: the data of cute's small-M ranking.
    for model in llama3-8b llama3-70b; do
      step "CuTe DSL: every kernel (-s exhaustive) beside cuBLASLt's, $model at M = $CUTE_EXHAUSTIVE_TOKENS"
      timeout "${T_CUTE_RACES:-200}" "$gf" tune -f -b cublaslt,cute -s exhaustive --model "$model" \
        --tokens "$CUTE_EXHAUSTIVE_TOKENS" --json "$out/cute-races-$model.json" > "$out/cute-races-$model.txt" 2>&1 \
        || status=1
      python3 -c "import sys; sys.path.insert(0, 'scripts'); import report; print('\n'.join(report.race_section(sys.argv[1])))" \
        "$out/cute-races-$model.json" || status=1
    done
  fi
  if [ "${CUTE_ROWOPS:-1}" = 1 ]; then
    step "row ops: native, Triton and CuTe DSL side by side (bench-ops' default set)"
    timeout "${T_ROWOPS3:-330}" "$gf" bench-ops -b native,triton,cute --max-configs "${ROWOPS_CONFIGS:-12}" \
      --json "$out/rowops-backends.json" > "$out/rowops-backends.txt" 2>&1 || status=1
    tail -14 "$out/rowops-backends.txt"
  fi
fi
# Fused epilogues beside their plain GEMMs in one bench call, cublaslt, native, cute: bench times
# each fused GEMM and its plain one in the same rounds, so that they share the clock (two calls
# apart, one kernel read up to 4% apart at 4096 tokens; two problems of one call, minutes apart):
#   bench_fused NAME TOKENS DTYPE SEP NxK:EPI...   (plain MxNxK:DTYPE, fused MxNxK:DTYPE SEP EPI)
bench_fused() {
  local name=$1 tokens=$2 dtype=$3 sep=$4 m pe probs=()
  shift 4
  for m in $tokens; do
    for pe in "$@"; do
      probs+=(-p "${m}x${pe%%:*}:$dtype" -p "${m}x${pe%%:*}:$dtype$sep${pe#*:}")
    done
  done
  step "fused epilogues beside their plain GEMMs, $name, at M = $tokens"
  timeout "${T_FUSED:-300}" "$gf" bench -b cublaslt,native,cute -s fast --rounds "${BENCH_ROUNDS:-3}" "${probs[@]}" \
    --json "$out/bench-fused-$name.json" > "$out/bench-fused-$name.txt" 2>&1 || status=1
  python3 scripts/summarize.py "$out/bench-fused-$name.json"
}
if [ "$what" = fused ]; then
  # fp8 fused epilogues (llama3-8b's o + residual, gate_up + SwiGLU, up + bias + erf GELU; each
  # scale kind of FUSED_SCALES at FUSED_TOKENS): what each costs native and cute over its plain
  # kernel, the issues' 3%. With FUSED_BF16_TOKENS issue 24's bf16 set too: o and down + residual,
  # gate_up + SwiGLU.
  use_carried_cute_kernels
  for scale in ${FUSED_SCALES-rowcol}; do  # FUSED_SCALES= (empty): none
    bench_fused "$scale" "${FUSED_TOKENS:-128 4096}" "e4m3->bf16:scale=$scale" + \
      4096x4096:residual 28672x4096:swiglu 14336x4096:bias+gelu
  done
  if [ -n "${FUSED_BF16_TOKENS:-}" ]; then
    bench_fused bf16 "$FUSED_BF16_TOKENS" bf16 : 4096x4096:residual 4096x14336:residual 28672x4096:swiglu
  fi
fi

if [ "$what" = fp8 ]; then
  if [ -z "${FP8_SKIP_TESTS:-}" ]; then
    step "fp8 GPU tests: native (each scale kind, promoted and not) and cuBLASLt"
    GF_TEST_TIMEOUT=200 timeout "${T_FP8_TESTS:-300}" build/tests/gf_gpu_tests --gtest_brief=1 \
      --gtest_filter='*Fp8*:*CublasLt*' > "$out/fp8-tests.log" 2>&1 || status=1
    grep -E "FAILED|TIMEOUT|PASSED|tests ran|rel_err|Failure" "$out/fp8-tests.log" | tail -40
  fi
  for scale in ${FP8_SCALES:-rowcol block128 tensor}; do
    # Triton's templates take per-tensor and rowwise scales: three backends compete there.
    backends=cublaslt,native
    [ "$scale" = block128 ] || backends=$backends,triton
    step "bench llama3-8b e4m3 scale=$scale at M = ${FP8_TOKENS:-128,4096}, -b $backends"
    timeout "${T_FP8_BENCH:-200}" "$gf" bench --model llama3-8b --tokens "${FP8_TOKENS:-128,4096}" --dtype e4m3 \
      --epilogue "scale=$scale" -b "$backends" -s "$search" --rounds "${BENCH_ROUNDS:-5}" \
      --json "$out/bench-fp8-$scale.json" > "$out/bench-fp8-$scale.txt" 2>&1 || status=1
    grep -vE "compile|measure" "$out/bench-fp8-$scale.txt" | tail -24
  done
fi
if [ "$what" = python ]; then
  step "Python package: GPU tests, then the llama3-8b decoder layer beside torch"
  export PYTHONPATH=$PWD/.carry/py:$PWD${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$PWD/.carry/py:$LD_LIBRARY_PATH
  if [ "${SKIP_PYTEST:-0}" != 1 ]; then
    timeout "${T_PYTEST:-240}" python3 -m pytest -q -x tests/python > "$out/pytest.log" 2>&1 || status=1
    tail -4 "$out/pytest.log"
  fi
  # Cold on both sides: no tuning DB, kernel cache, Triton or Inductor cache from the steps before.
  fresh() { mktemp -d /tmp/gf-cold.XXXXXX; }
  GEMMFORGE_HOME=$(fresh) TRITON_CACHE_DIR=$(fresh) TORCHINDUCTOR_CACHE_DIR=$(fresh) \
    timeout "${T_LAYER:-330}" python3 -m examples.bench_decoder_layer --tokens "${LAYER_TOKENS:-128,4096}" \
    --json "$out/decoder-layer.json" > "$out/decoder-layer.txt" 2>&1 || status=1
  tail -20 "$out/decoder-layer.txt"
  step "fp8 quantization (tensor, static, delayed, row, 1x128, 128x128) beside torch"
  timeout "${T_QUANT:-150}" python3 bench/quantize_vs_torch.py --json "$out/quantize.json" > "$out/quantize.txt" 2>&1 \
    || status=1
  tail -27 "$out/quantize.txt"
  step "fp8 GEMMs (tensor, rowwise, block scales) beside torch._scaled_mm, fast accumulation off and on"
  timeout "${T_SCALED_MM:-400}" python3 bench/scaled_mm_vs_torch.py --tokens "${SCALED_MM_TOKENS:-16,128,4096}" \
    --json "$out/scaled-mm.json" > "$out/scaled-mm.txt" 2>&1 || status=1
  tail -26 "$out/scaled-mm.txt"
fi

if [ "$what" = chain ]; then
  step "a decoder layer's GEMMs back to back: cuBLASLt, native, native + PDL (CHAIN_MODELS at CHAIN_TOKENS)"
  for model in ${CHAIN_MODELS:-llama3-8b llama3-70b}; do
    # The chain runs native's tuned choices, as a serving process would (untuned, its first-ranked kernels).
    tokens=${CHAIN_TOKENS:-1 16 128}
    timeout "${T_CHAIN_TUNE:-200}" "$gf" tune --model "$model" --tokens "${tokens// /,}" --fuse natural -b native -s fast \
      > "$out/chain-tune-$model.txt" 2>&1 || status=1
    tail -1 "$out/chain-tune-$model.txt"
    for t in $tokens; do
      timeout "${T_CHAIN:-60}" "$gf" bench-chain -m "$model" --tokens "$t" --json "$out/chain-$model-$t.json" \
        > "$out/chain-$model-$t.txt" 2>&1 || status=1
      tail -5 "$out/chain-$model-$t.txt"
    done
  done
fi

if [ "$what" = fleet ]; then
  # A Redis store on this machine (its redis-server, or the one scripts/stage-redis.sh put in
  # .carry/redis). Host A: two tuners sharing GPU 0 (--gpus 0,0) store the llama3-8b set there.
  # Then the start-up of a serving process (gemmforge prepare) three ways: host A again (its local
  # DB and kernel cache), a fresh host B on the store (no local DB, no kernel cache), and a fresh
  # host C with neither (every problem on its default).
  step "fleet: --gpus 0,0 into Redis, then warm starts: local DB, Redis on a fresh host, nothing"
  redis=$(command -v redis-server || echo .carry/redis/redis-server)
  port=${REDIS_PORT:-6391}
  LD_LIBRARY_PATH=$PWD/.carry/redis:$LD_LIBRARY_PATH "$redis" --port "$port" --bind 127.0.0.1 --save "" \
    --appendonly no --daemonize yes --logfile "$out/redis.log" || status=1
  url=redis://127.0.0.1:$port/0
  rm -rf /tmp/gf-fleet-a /tmp/gf-fleet-b /tmp/gf-fleet-c
  model=(--model llama3-8b --tokens 16,128,4096)
  GEMMFORGE_HOME=/tmp/gf-fleet-a GEMMFORGE_DB=$url timeout "${T_FLEET_TUNE:-300}" "$gf" tune "${model[@]}" -s "$search" \
    -b "${FLEET_BACKENDS:-cublaslt,native}" --gpus 0,0 > "$out/fleet-tune.txt" 2>&1 || status=1
  tail -3 "$out/fleet-tune.txt"
  GEMMFORGE_HOME=/tmp/gf-fleet-a "$gf" db export --json "$out/fleet-export.json" || status=1
  # Every problem once, each a verified candidate's decision (the tuner stores nothing else).
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['decisions']; print(len(d), 'decisions stored by the two tuners'); sys.exit(len(d) != 15)" \
    "$out/fleet-export.json" || status=1
  for host in a b c; do
    db=$url
    [ $host = a ] && db=/tmp/gf-fleet-a/tuning.db
    [ $host = c ] && db=/tmp/gf-fleet-c/tuning.db
    GEMMFORGE_HOME=/tmp/gf-fleet-$host timeout 120 "$gf" prepare "${model[@]}" --db "$db" \
      --json "$out/prepare-$host.json" > "$out/prepare-$host.txt" 2>&1 || status=1
    echo "host $host: $(tail -1 "$out/prepare-$host.txt")"
  done
  pkill -f "redis-server.*:$port"
fi

if [ "$what" = all ] || [ "$what" = heldout ]; then
  for model in qwen2.5-7b phi3-mini; do
    step "bench $model (held out) at M = ${HELDOUT_TOKENS:-77,1000}"
    timeout "${T_HELDOUT:-200}" "$gf" bench --model "$model" --tokens "${HELDOUT_TOKENS:-77,1000}" -s "$search" \
      ${HELDOUT_BACKENDS:+-b "$HELDOUT_BACKENDS"} \
      --rounds "${BENCH_ROUNDS:-5}" --json "$out/heldout-$model.json" > "$out/heldout-$model.txt" 2>&1 || status=1
  done
  # Issue 26's other held-out shapes: primes, tiny N or K, K that no 16-byte row holds (HELDOUT_ODD=0 skips).
  if [ "${HELDOUT_ODD:-1}" = 1 ]; then
    step "bench odd shapes (held out: primes, tiny N or K)"
    odd=(997x1009x1024 4093x4096x4096 127x11008x4096 1000x16x4096 4096x4096x16 77x4096x64 257x2053x1000 3x4096x1013)
    timeout "${T_HELDOUT:-200}" "$gf" bench "${odd[@]/#/-p}" -s "$search" ${HELDOUT_BACKENDS:+-b "$HELDOUT_BACKENDS"} \
      --rounds "${BENCH_ROUNDS:-5}" --json "$out/heldout-odd.json" > "$out/heldout-odd.txt" 2>&1 || status=1
  fi
  python3 scripts/summarize.py "$out"/heldout-*.json
fi

if [ "$what" = all ] || [ "$what" = runtime ]; then
  step "host time of a Runtime::gemm call over a bare cuBLASLt call"
  timeout "${T_RUNTIME:-120}" "$gf" bench-runtime --json "$out/runtime.json" > "$out/runtime.txt" 2>&1 || status=1
  tail -6 "$out/runtime.txt"
fi

if [ "$what" = launch ]; then
  step "device time of an empty kernel alone and back to back, decode GEMMs' launch shapes"
  timeout "${T_LAUNCH:-120}" "$gf" bench-launch --json "$out/launch.json" > "$out/launch.txt" 2>&1 || status=1
  tail -7 "$out/launch.txt"
fi

if [ "$what" = ab ]; then
  [ -x "${BEFORE:-}" ] || { echo "ab: BEFORE=path/to/the/other/gemmforge is needed"; exit 1; }
  # AB_ARGS: the problems (default the llama3-8b set); AB_TURNS: the two builds alternated this often.
  ab_args=${AB_ARGS:-"--model llama3-8b --tokens 16,128,4096"}
  for turn in $(seq "${AB_TURNS:-1}"); do
    for side in before after; do
      bin=$gf
      [ $side = before ] && bin=$BEFORE
      step "bench ($ab_args) with the $side build ($bin), turn $turn"
      # shellcheck disable=SC2086
      GEMMFORGE_HOME=/tmp/gf-home-$side timeout "${T_AB:-280}" "$bin" bench $ab_args \
        -s "$search" --rounds "${BENCH_ROUNDS:-5}" --json "$out/ab-$side-$turn.json" > "$out/ab-$side-$turn.txt" 2>&1 || status=1
      tail -1 "$out/ab-$side-$turn.txt"
    done
    python3 scripts/summarize.py "$out/ab-before-$turn.json" | tail -6
    python3 scripts/summarize.py "$out/ab-after-$turn.json" | tail -6
  done
fi

if [ "$what" = rowops ]; then
  for side in before after; do
    bin=$gf
    [ $side = before ] && bin=${BEFORE:-}
    [ -x "$bin" ] || continue
    step "bench-ops with the $side build ($bin)"
    GEMMFORGE_HOME=/tmp/gf-home-$side timeout "${T_ROWOPS:-200}" "$bin" bench-ops --json "$out/rowops-$side.json" \
      > "$out/rowops-$side.txt" 2>&1 || status=1
    tail -12 "$out/rowops-$side.txt"
  done
fi

if [ "$what" = faults ]; then
  step "bench-ops with planted faulty row-op configs (illegal address, hang, wrong values, abort)"
  GEMMFORGE_PLANT_FAULTS=1 timeout "${T_FAULTS:-150}" "$gf" bench-ops -o softmax:65536x4096:bf16 -o rmsnorm:4096x65536:bf16 \
    -b native,faulty --max-configs 4 --timeout 20 --force --json "$out/faults.json" > "$out/faults.txt" 2>&1 || status=1
  tail -4 "$out/faults.txt"
fi

if [ "$what" = epilogue ]; then
  step "epilogues: bias+gelu_tanh (qkv, gate_up at M=128, 4096), SwiGLU (gate_up), residual (o, down)"
  timeout "${T_EPI:-300}" "$gf" bench -s "$search" --json "$out/bench-epilogue.json" \
    -p 128x6144x4096:bf16:bias+gelu_tanh -p 4096x6144x4096:bf16:bias+gelu_tanh \
    -p 128x28672x4096:bf16:bias+gelu_tanh -p 4096x28672x4096:bf16:bias+gelu_tanh \
    -p 4096x28672x4096:bf16:swiglu -p 4096x57344x8192:bf16:swiglu \
    -p 4096x4096x4096:bf16:residual -p 4096x4096x14336:bf16:residual -p 4096x4096x4096:bf16 -p 4096x4096x14336:bf16 \
    > "$out/bench-epilogue.txt" 2>&1 || status=1
  grep -vE "compile|measure" "$out/bench-epilogue.txt" | tail -60
fi

if [ "$what" = search ]; then
  step "--search fast against exhaustive, native, one run (SEARCH_PROBLEMS${FITTED_GROUP:+, fitted shapes group $FITTED_GROUP})"
  probs=${SEARCH_PROBLEMS:-"-p 4096x4096x4096:bf16 -p 128x28672x4096:bf16 -p 16x4096x14336:bf16"}
  if [ -n "${FITTED_GROUP:-}" ]; then
    # The shapes the cost model was fitted on (tests/data/fitted-races.json), every third from group
    # 1, 2 or 3: scripts/store-races.py stores the run's tune-exhaustive.json there afterwards.
    probs=$(python3 -c "import json, sys; races = json.load(open('tests/data/fitted-races.json'))['races']
print(' '.join('-p ' + r['problem'] for r in races[int(sys.argv[1]) - 1::3]))" "$FITTED_GROUP") || status=1
  fi
  # shellcheck disable=SC2086
  "$gf" candidates $probs -b native -s fast --json "$out/fast-candidates.json" >/dev/null 2>&1
  # SEARCH_ONLY (e.g. _g8m_) keeps the candidates whose names contain it: at M <= 1000 raster
  # groups hardly matter (one or two rows of tiles), and dropping them cuts the run threefold.
  # shellcheck disable=SC2086
  timeout "${T_SEARCH:-400}" "$gf" tune -f $probs -b native -s exhaustive ${SEARCH_ONLY:+--only "$SEARCH_ONLY"} \
    --json "$out/tune-exhaustive.json" \
    > "$out/tune-exhaustive.txt" 2>&1 || status=1
  python3 scripts/search_gap.py "$out/fast-candidates.json" "$out/tune-exhaustive.json"
fi

if [ "$what" = ops ]; then
  step "memory-bound ops beside torch eager and torch.compile"
  timeout "${T_OPS:-400}" python3 bench/ops_vs_torch.py --gemmforge "$gf" --json "$out/ops.json" > "$out/ops.txt" 2>&1 || status=1
  tail -14 "$out/ops.txt"
fi

if [ "$what" = triton ]; then
  step "Triton backend beside torch.compile max-autotune (Triton templates)"
  timeout "${T_TRITON:-500}" python3 bench/triton_vs_inductor.py --gemmforge "$gf" --json "$out/triton.json" \
    > "$out/triton.txt" 2>&1 || status=1
  tail -14 "$out/triton.txt"
fi
if [ "$what" = cutlass ]; then
  step "CUTLASS: units from the carried cache (compiling what it lacks), GPU tests, llama3-8b beside cuBLASLt and native"
  cache=${CUTLASS_CACHE:-.carry/cutlass-kernels}
  # scripts/precompile-cutlass.sh leaves the units as one xz archive too.
  if [ -f .carry/cutlass.txz ]; then
    mkdir -p "$cache"
    python3 -c "import tarfile, sys; tarfile.open('.carry/cutlass.txz').extractall(sys.argv[1])" "$cache" || status=1
  fi
  mkdir -p "$GEMMFORGE_HOME/kernels"
  [ -d "$cache" ] && cp -n "$cache"/cutlass90_* "$GEMMFORGE_HOME/kernels/" 2>/dev/null
  # The headers, for units the cache lacks: from a carried wheel where the package is missing (the
  # GPU machine has no network).
  if ! python3 -c "import importlib.util as u; assert u.find_spec('cutlass_library')" 2>/dev/null; then
    for whl in .carry/nvidia_cutlass-4.2.0.0-*.whl; do
      [ -f "$whl" ] && python3 -m pip install --quiet --no-deps "$whl" > "$out/cutlass-pip.log" 2>&1
    done
  fi
  # The units the GPU tests and the bench use (scripts/precompile-cutlass.sh builds the same set).
  timeout "${T_CUTLASS_COMPILE:-900}" bash scripts/precompile-cutlass.sh "$gf" > "$out/cutlass-compile.txt" 2>&1 || status=1
  grep -E "cold compiles|failed|error" "$out/cutlass-compile.txt" | tail -12
  GF_TEST_TIMEOUT=300 timeout "${T_CUTLASS_TESTS:-900}" build/tests/gf_gpu_tests --gtest_brief=1 \
    --gtest_filter='*Cutlass*' > "$out/cutlass-tests.log" 2>&1 || status=1
  grep -E "FAILED|TIMEOUT|PASSED|tests ran" "$out/cutlass-tests.log" | tail -25
  if [ "${CUTLASS_BF16:-1}" = 1 ]; then
    timeout "${T_CUTLASS_BENCH:-400}" "$gf" bench --model llama3-8b --tokens 16,128,4096 -b cutlass,cublaslt,native \
      -s "$search" --rounds "${BENCH_ROUNDS:-5}" --json "$out/bench-cutlass.json" > "$out/bench-cutlass.txt" 2>&1 || status=1
    grep -vE "compile|measure" "$out/bench-cutlass.txt" | tail -40
  fi
  for scale in ${CUTLASS_FP8_SCALES:-}; do
    step "CUTLASS e4m3 scale=$scale, llama3-8b at M = 128, 4096, beside cuBLASLt and native"
    timeout "${T_CUTLASS_FP8_BENCH:-200}" "$gf" bench --model llama3-8b --tokens 128,4096 --dtype e4m3 \
      --epilogue "scale=$scale" -b cutlass,cublaslt,native -s "$search" --rounds "${BENCH_ROUNDS:-5}" \
      --json "$out/bench-cutlass-fp8-$scale.json" > "$out/bench-cutlass-fp8-$scale.txt" 2>&1 || status=1
    python3 scripts/summarize.py "$out/bench-cutlass-fp8-$scale.json"
  done
fi
kill "$clocks_pid" 2>/dev/null
step "the GPU's clock and power through each step (busy samples)"
python3 scripts/clocks.py "$out/clocks.csv" "$out/clock-marks.txt"
exit $status
