#!/usr/bin/env bash
# Builds the gemmforge binary of another revision for `gpu-check.sh ab` (BEFORE=...), beside this
# checkout: a git worktree of REV in /tmp/gf-at-REV, configured as scripts/setup.sh configures
# build/, its binary copied to .carry/gemmforge-REV (carried to the GPU machine).
#   scripts/build-at.sh REV    (then: BEFORE=.carry/gemmforge-REV scripts/gpu-check.sh ab)
set -euo pipefail
cd "$(dirname "$0")/.."
rev=$(git rev-parse --short "${1:?usage: scripts/build-at.sh REV}")
tree=/tmp/gf-at-$rev
[ -d "$tree" ] || git worktree add --detach "$tree" "$rev" >/dev/null
cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$tree/build" --target gemmforge
mkdir -p .carry
cp "$tree/build/gemmforge" ".carry/gemmforge-$rev"
echo ".carry/gemmforge-$rev"
