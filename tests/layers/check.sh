#!/usr/bin/env bash
# The build's layering holds: a layer's include path reaches down (harness sees the backends) but
# not up (the backends cannot see the tuner, nor its public header).
#   check.sh CXX BUILD_DIR
set -u
cxx=$1 layers=$2/layers
probe() { printf '#include "%s"\n' "$2" | "$cxx" -std=c++20 -fsyntax-only -I"$layers/$1" -x c++ - 2>&1; }
probe harness backends/registry.hpp >/dev/null || { echo "harness cannot include backends/registry.hpp"; exit 1; }
for bad in "backends tune/worker.hpp" "backends gemmforge/tuner.hpp" "core cuda/check.hpp" "runtime tune/worker.hpp"; do
  set -- $bad
  if probe "$1" "$2" | grep -q "No such file"; then continue; fi
  echo "layer $1 can include $2"; exit 1
done
echo "layers: downward includes resolve, upward ones do not"
