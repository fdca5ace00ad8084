#!/usr/bin/env bash
# Compares the machine code of two GEMMFORGE_DUMP folders kernel by kernel: a restructuring of the
# device code that should change nothing is shown to change nothing without a GPU. Addresses and
# the name of the kernel's own source are left out; everything else must match.
#   scripts/sass-diff.sh OLD_DUMP_DIR NEW_DUMP_DIR
# Dump with e.g. GEMMFORGE_DUMP=DIR gemmforge compile -p 4096x4096x4096:bf16 --no-cache -b native.
set -euo pipefail
old=$1 new=$2
cuobjdump=$(command -v cuobjdump || true)
[ -n "$cuobjdump" ] || [ ! -x /usr/local/cuda/bin/cuobjdump ] || cuobjdump=/usr/local/cuda/bin/cuobjdump
if [ -z "$cuobjdump" ]; then  # Triton's wheel carries one
  cuobjdump=$(python3 -c "import triton, os; print(os.path.join(os.path.dirname(triton.__file__), 'backends/nvidia/bin/cuobjdump'))" 2>/dev/null || true)
fi
[ -x "$cuobjdump" ] || { echo "sass-diff: no cuobjdump (CUDA toolkit or pip install triton)" >&2; exit 2; }
sass() { "$cuobjdump" --dump-sass "$1" 2>/dev/null | grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed -E 's#/\*[0-9a-f]+\*/##g'; }
same=0 differ=0 missing=0
for f in "$old"/*.cubin; do
  b=$(basename "$f")
  if [ ! -f "$new/$b" ]; then missing=$((missing + 1)); echo "missing in $new: $b"; continue; fi
  if [ "$(sass "$f" | md5sum)" = "$(sass "$new/$b" | md5sum)" ]; then same=$((same + 1)); else differ=$((differ + 1)); echo "DIFFERS: $b"; fi
done
echo "sass-diff: $same kernels identical, $differ differ, $missing missing"
[ "$differ" -eq 0 ] && [ "$missing" -eq 0 ]
