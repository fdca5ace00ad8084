#!/usr/bin/env bash
# Compiles the CUTLASS backend's units that the llama3-8b set (--search fast, plain and with its
# natural epilogues, and e4m3 with per-tensor scales) and the GPU tests (tests/gpu/cutlass_test.cpp) use into the kernel cache,
# $GEMMFORGE_HOME/kernels. Units are shape-independent: these few serve every shape of their dtype,
# layout and epilogue. Carry the cutlass90_* files of that folder to a machine without the CUTLASS
# headers (scripts/gpu-check.sh cutlass reads them from .carry/cutlass-kernels).
#   scripts/precompile-cutlass.sh [path/to/gemmforge]   (then carry .carry/cutlass.txz, which
#   gpu-check.sh cutlass unpacks)
set -euo pipefail
cd "$(dirname "$0")/.."
gf=${1:-build/gemmforge}
"$gf" compile -b cutlass -s fast -p 130x384x512:bf16:rowbias+relu -p '77x1000x1024:e4m3->bf16:scale=tensor+rowbias' \
  -p '200x520x256:e4m3->bf16:scale=rowcol+rowbias+gelu' -p '76x1024x1152:e4m3->bf16:scale=block128+rowbias'
"$gf" compile -b cutlass --model llama3-8b --tokens 4096 -s fast
"$gf" compile -b cutlass --model llama3-8b --tokens 4096 -s fast --fuse natural
"$gf" compile -b cutlass -s exhaustive -p 77x1000x1008:bf16
"$gf" compile -b cutlass -s fast -p 130x384x512:bf16:bias+gelu -p 200x256x72:f16:nn \
  -p 96x128x64:bf16:alpha=2+residual+silu -p '136x264x128:bf16->f32:bias+gelu_tanh' -p 64x128x256:f16:bias+relu \
  -p '4096x4096x4096:e4m3->bf16:scale=tensor' -p '77x1000x1024:e4m3->bf16:scale=tensor+bias+gelu' \
  -p '4096x4096x4096:e4m3->bf16:scale=rowcol' -p '200x520x256:e4m3->bf16:scale=rowcol+bias+gelu' \
  -p '4096x4096x4096:e4m3->bf16:scale=block128' -p '76x1024x1152:e4m3->bf16:scale=block128+bias'
home=${GEMMFORGE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/gemmforge}
mkdir -p .carry
tar cf - -C "$home/kernels" $(cd "$home/kernels" && ls cutlass90_*) | xz -9 > .carry/cutlass.txz
ls -l .carry/cutlass.txz
