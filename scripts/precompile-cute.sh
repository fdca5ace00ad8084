#!/usr/bin/env bash
# Compiles the CuTe DSL kernels the GPU machine needs into a kernel cache to carry there (it has no
# nvidia-cutlass-dsl): the fast-search candidates of the llama3-8b GEMMs (bf16 up to 8192 tokens,
# fused as in a decoder layer, and e4m3 with rowwise and block scales), every bf16 kernel at 16 and 128
# tokens, the held-out models' fast lists (qwen2.5-7b, phi3-mini at 77 and 1000 tokens), the
# default-search ones of the shapes of tests/gpu/cute_test.cpp, and the row ops of bench-ops and
# tests/gpu/rowop_backends_test.cpp. Kernels are shape-independent: a shape of the same dtypes,
# layout and epilogue (a row op of the same op, dtypes and config) compiles nothing more.
#   GEMMFORGE_HOME=.carry/gf-home scripts/precompile-cute.sh   (then carry .carry/cute-home.txz)
# Each kernel is a ~1 MB shared object, mostly the same static runtimes: one xz archive of the
# home holds a hundred of them in well under 1 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
export GEMMFORGE_HOME=${GEMMFORGE_HOME:-$PWD/.carry/gf-home}
gf=build/gemmforge
# The kernels' cache keys hash the Python the binary embeds: build it from this tree first, or the
# GPU host's binary looks for keys of other sources.
cmake --build build >/dev/null
"$gf" compile -b cute --model llama3-8b --tokens 16,128,4096,8192 -s fast
"$gf" compile -b cute --model llama3-8b --tokens 16,128,4096 --dtype e4m3 --epilogue scale=rowcol -s fast
"$gf" compile -b cute --model llama3-8b --tokens 16,128,4096 --dtype e4m3 --epilogue scale=block128 -s fast
"$gf" compile -b cute --model llama3-8b --tokens 16,128,4096,8192 --fuse natural -s fast  # gate_up+swiglu, qkv+bias, ...
# gpu-check.sh fused: e4m3 rowwise o + residual, gate_up + SwiGLU, up + bias + GELU at 128 and 4096 tokens.
for m in 128 4096; do
  "$gf" compile -b cute -s fast -p "${m}x4096x4096:e4m3->bf16:scale=rowcol+residual" \
    -p "${m}x28672x4096:e4m3->bf16:scale=rowcol+swiglu" -p "${m}x14336x4096:e4m3->bf16:scale=rowcol+bias+gelu"
done
# Every bf16 kernel of the decode sizes (gpu-check.sh cute with CUTE_EXHAUSTIVE_TOKENS), and 70b's fast lists.
"$gf" compile -b cute --model llama3-8b --tokens 16,128 -s exhaustive
"$gf" compile -b cute --model llama3-70b --tokens 16,128 -s exhaustive
"$gf" compile -b cute --model llama3-70b --tokens 4096,8192 -s fast
# The held-out models of gpu-check.sh heldout, for the tuned choice over every backend there.
for model in qwen2.5-7b phi3-mini; do
  "$gf" compile -b cute --model "$model" --tokens 77,1000 -s fast
  "$gf" compile -b cute --model "$model" --tokens 77 -s exhaustive  # the race that fits the small-M model at 77
done
shapes=(1x8x8:bf16 77x1000x1008:bf16 4097x1000x4104:bf16 4096x4096x4096:bf16 300x640x512:bf16:nn 1000x80x1000:f16
        200x256x128:bf16:bias+gelu_tanh 130x384x512:bf16:rowbias+relu 100x384x256:bf16:alpha=0.5+bias+residual+gelu
        16x4096x4096:bf16:silu 4096x4096x4096:e4m3-\>bf16:scale=rowcol 77x1000x1008:e4m3-\>bf16:scale=tensor
        1000x80x1024:e4m3xe5m2-\>f16:scale=rowcol+bias+gelu 4097x1000x4112:e4m3-\>bf16:scale=rowcol+residual
        77x1040x1008:bf16:swiglu 130x400x512:bf16:bias+swiglu_split 1000x96x1024:e4m3-\>bf16:scale=rowcol+swiglu
        5x4104x4096:bf16:rowbias+relu 33x1000x1008:e4m3-\>bf16:scale=rowcol+bias 64x1000x1000:f16:alpha=0.5+bias+residual
        16x1000x4104:bf16:alpha=0.5+residual 4100x4000x2048:bf16:residual 4100x6000x1024:bf16:bias+gelu_tanh
        4100x6000x1024:bf16:swiglu 4100x4000x2048:bf16:bias+gelu 4100x6000x1024:e4m3-\>bf16:scale=rowcol+swiglu
        77x1000x1008:e4m3-\>bf16:scale=block128 4097x1000x4112:e4m3-\>bf16:scale=block128+bias+gelu
        1000x384x4096:e4m3xe5m2-\>f16:scale=block128+residual 16x4096x4096:e4m3-\>bf16:scale=block128
        1x136x128:e4m3-\>bf16:scale=block128+rowbias+silu 33x2064x4096:e4m3-\>bf16:scale=rowcol+swiglu_split
        130x512x4096:e4m3-\>bf16:scale=block128+swiglu 77x2176x1024:e4m3-\>bf16:scale=block128+bias+swiglu_split
        16x4096x4096:e4m3-\>bf16:scale=block128+swiglu)
"$gf" compile -b cute -s default "${shapes[@]/#/-p}"
# Row ops: bench-ops' default set (its default search) and the shapes of tests/gpu/rowop_backends_test.cpp.
ops=(softmax:262144x1024:bf16 softmax:65536x4096:bf16 softmax:16384x16384:bf16 softmax:4096x65536:bf16
     softmax:1024x262144:bf16 rmsnorm:262144x1024:bf16 rmsnorm:65536x4096:bf16 rmsnorm:16384x16384:bf16
     rmsnorm:4096x65536:bf16 rmsnorm:1024x262144:bf16
     softmax:77x1000:f16 softmax:300x4096:bf16-\>f32 softmax+valid:64x4096:bf16 softmax:8x262144:bf16
     softmax+valid:8x65536:bf16 softmax:1000x24:f32 rmsnorm:1000x4096:bf16 rmsnorm+residual:333x1000:bf16
     rmsnorm+residual:8x262144:f16 rmsnorm:3x8:f32 rmsnorm:130x16384:bf16-\>f32 softmax:4x256:f32 softmax:4x65536:f32)
"$gf" compile -b cute -s default "${ops[@]/#/-o}"
du -sh "$GEMMFORGE_HOME/kernels"
# Written aside and moved into place: an archive cut short (a session ending mid-write) once
# reached the GPU host, where some of the benchmark's kernels were then cache misses.
tar cf - -C "$(dirname "$GEMMFORGE_HOME")" "$(basename "$GEMMFORGE_HOME")" | xz -9 > .carry/cute-home.txz.part
mv .carry/cute-home.txz.part .carry/cute-home.txz
ls -l .carry/cute-home.txz
