#!/usr/bin/env bash
# Runs on the GPU machine: tunes one problem on the native backend, then profiles a native kernel
# with Nsight Compute (clocks left alone) and prints the key sections. Native kernels are named
# after their config; KERNEL picks one (an ncu --kernel-name filter, default any native kernel).
#   [KERNEL=sm90_bf16_..._tma1] scripts/profile-native.sh SPEC [ncu sections...]
set -uo pipefail
cd "$(dirname "$0")/.."
spec=${1:-4096x4096x4096:bf16}
shift || true
sections=${*:-SpeedOfLight WarpStateStats}
export GEMMFORGE_HOME=${GEMMFORGE_HOME:-/tmp/gf-home}
build/gemmforge tune -p "$spec" -b native -s fast >/dev/null
args=()
for s in $sections; do args+=(--section "$s"); done
ncu --clock-control none --target-processes all --kernel-name "${KERNEL:-regex:^sm90_}" --launch-skip 2 --launch-count 1 \
  "${args[@]}" build/gemmforge bench -p "$spec" -b native 2>&1 | grep -vE "^==PROF==|^\s*$" | tail -60
