#!/usr/bin/env bash
# Compiles the CuTe DSL kernels the GPU machine needs into a kernel cache to carry there (it has no
# nvidia-cutlass-dsl): the fast-search candidates of the llama3-8b GEMMs (bf16, and e4m3 with
# rowwise scales) and the default-search ones of the shapes of tests/gpu/cute_test.cpp. Kernels are shape-independent: a shape of the same dtypes, layout and
# epilogue compiles nothing more.
#   GEMMFORGE_HOME=.carry/gf-home scripts/precompile-cute.sh   (then carry .carry/cute-home.txz)
# Each kernel is a ~1 MB shared object, mostly the same static runtimes: one xz archive of the
# home holds a hundred of them in well under 1 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
export GEMMFORGE_HOME=${GEMMFORGE_HOME:-$PWD/.carry/gf-home}
gf=build/gemmforge
"$gf" compile -b cute --model llama3-8b --tokens 16,128,4096 -s fast
"$gf" compile -b cute --model llama3-8b --tokens 16,128,4096 --dtype e4m3 --epilogue scale=rowcol -s fast
shapes=(1x8x8:bf16 77x1000x1008:bf16 4097x1000x4104:bf16 4096x4096x4096:bf16 300x640x512:bf16:nn 1000x80x1000:f16
        200x256x128:bf16:bias+gelu_tanh 130x384x512:bf16:rowbias+relu 100x384x256:bf16:alpha=0.5+bias+residual+gelu
        16x4096x4096:bf16:silu 4096x4096x4096:e4m3-\>bf16:scale=rowcol 77x1000x1008:e4m3-\>bf16:scale=tensor
        1000x80x1024:e4m3xe5m2-\>f16:scale=rowcol+bias+gelu 4097x1000x4112:e4m3-\>bf16:scale=rowcol+residual)
"$gf" compile -b cute -s default "${shapes[@]/#/-p}"
du -sh "$GEMMFORGE_HOME/kernels"
tar cf - -C "$(dirname "$GEMMFORGE_HOME")" "$(basename "$GEMMFORGE_HOME")" | xz -9 > .carry/cute-home.txz
ls -l .carry/cute-home.txz
