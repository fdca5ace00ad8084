#!/usr/bin/env bash
# The unit tests under AddressSanitizer and UndefinedBehaviorSanitizer (host code), in build-asan/.
# A sanitizer build does not default to --as-needed: it also proves the binary starts without a
# GPU driver (the CLI test reads its NEEDED entries). CI runs this after the plain tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGF_SANITIZE=ON >/dev/null
cmake --build build-asan
# Leaks of the CUDA libraries' own start-up are not ours; everything else fails the run.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan -L unit -E 'fuzz' --output-on-failure
