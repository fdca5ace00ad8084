#!/usr/bin/env bash
# The unit tests under AddressSanitizer and UndefinedBehaviorSanitizer (host code), in build-asan/.
# A sanitizer build does not default to --as-needed: it also proves the binary starts without a
# GPU driver (the CLI test reads its NEEDED entries). CI runs this after the plain tests.
# Built at -O0 -g, in unity batches (scripts/setup.sh says why): full reports, and a build of
# minutes where -O2 took half an hour on two cores. The spill check is left to the plain pass:
# it spends its minute in NVRTC and ptxas, none of it our instrumented host code.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g" \
  -DCMAKE_UNITY_BUILD=ON -DGF_SANITIZE=ON >/dev/null
cmake --build build-asan
# Leaks of the CUDA libraries' own start-up are not ours; everything else fails the run.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan -L unit -E 'fuzz|DefaultSpaceCompilesWithoutSpills' --output-on-failure
