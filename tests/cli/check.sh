#!/usr/bin/env bash
# The gemmforge command as a user meets it, without a GPU: it starts with no driver (nothing
# records libcuda.so as needed), refuses bad options in one line, and a compile that cannot write
# its cache reports the failed candidates (table and JSON) instead of aborting.
#   check.sh path/to/gemmforge
set -u
gf=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "cli: $*"; exit 1; }

readelf -d "$gf" | grep -q 'libcuda\.so' && fail "the binary records libcuda.so as needed"
GEMMFORGE_HOME=$tmp/home "$gf" doctor >"$tmp/doctor" 2>&1 || fail "doctor does not run without a GPU"
# It says of the CuTe DSL either what compiles (pin, flavor, arch) or why nothing can here.
grep -Eq '^gemm cute .*(compiles with nvidia-cutlass-dsl [0-9.]+, cu12 flavor, for sm_90a|cannot compile here: .+)' \
  "$tmp/doctor" || fail "doctor's CuTe DSL line: $(grep cute "$tmp/doctor")"

# Bad options: a non-zero exit and an error of one line, never a silent default.
for args in "candidates -s bogus" "compile -s bogus" "candidates -b ," "candidates --dtype f33 -p 64x64x64:bf16" \
            "candidates --fuse weird -p 64x64x64:bf16" "candidates --tokens 16,,128" "tune --timeout nan" \
            "tune --timeout inf" "tune --timeout -1" "candidates -b nosuch" "tune --shard 2/2 -p 64x64x64:bf16" \
            "tune --shard x -p 64x64x64:bf16" "tune --gpus 0,,1 -p 64x64x64:bf16" "tune --gpus all -p 64x64x64:bf16" \
            "db --db redis://:hunter2@host:0 show" "db --db rediss://:hunter2@host show"; do
  # shellcheck disable=SC2086
  if GEMMFORGE_HOME=$tmp/home "$gf" $args >"$tmp/out" 2>"$tmp/err"; then fail "'gemmforge $args' was accepted"; fi
  lines=$(grep -c . "$tmp/err")
  [ "$lines" -le 3 ] || fail "'gemmforge $args' wrote $lines lines of error: $(cat "$tmp/err")"
  grep -q hunter2 "$tmp/err" && fail "'gemmforge $args' printed the password: $(cat "$tmp/err")"
done
# A problem no backend can run (fp8 K that no 16-byte row holds) is an error once every backend has
# said why; asked of one backend, its reason is the answer.
for cmd in candidates compile; do
  if GEMMFORGE_HOME=$tmp/home "$gf" $cmd -p 128x256x520:e4m3 >"$tmp/out" 2>"$tmp/err"; then
    fail "$cmd of a problem no backend runs exited 0"
  fi
  grep -q "no backend can run 128x256x520:e4m3" "$tmp/err" || fail "$cmd's error: $(cat "$tmp/err")"
  grep -q "no candidates from native: .*K % 16" "$tmp/out" || fail "$cmd does not say why: $(cat "$tmp/out")"
done
GEMMFORGE_HOME=$tmp/home "$gf" candidates -p 128x256x520:e4m3 -b native >/dev/null 2>&1 || fail "candidates -b native failed"
# Without a GPU, prepare says so in one line.
if GEMMFORGE_HOME=$tmp/home "$gf" prepare -p 64x64x64:bf16 >/dev/null 2>"$tmp/err"; then fail "prepare ran without a GPU"; fi
[ "$(grep -c . "$tmp/err")" -eq 1 ] && grep -q "needs a GPU" "$tmp/err" || fail "prepare without a GPU: $(cat "$tmp/err")"
# So do bench-chain and bench-launch.
for cmd in bench-chain bench-launch; do
  if GEMMFORGE_HOME=$tmp/home "$gf" "$cmd" >/dev/null 2>"$tmp/err"; then fail "$cmd ran without a GPU"; fi
  [ "$(grep -c . "$tmp/err")" -eq 1 ] && grep -q "needs a GPU" "$tmp/err" || fail "$cmd without a GPU: $(cat "$tmp/err")"
done
# Without a GPU, --gpus says so, and what still works.
GEMMFORGE_HOME=$tmp/home "$gf" tune --gpus all -p 64x64x64:bf16 >/dev/null 2>"$tmp/err"
grep -q "gemmforge compile" "$tmp/err" || fail "--gpus without a GPU does not say what still works: $(cat "$tmp/err")"

# A pinned candidate (no GPU needed): listed as pinned; a name the backend lacks is refused in one line.
pinned=sm90_bf16_bf16_tn_128x256x64_co_s4_c2_k1_x1_g8m_plain_tma2
GEMMFORGE_HOME=$tmp/home "$gf" db pin -p 4096x4096x4096:bf16 -b native --candidate $pinned >/dev/null \
  || fail "db pin failed"
GEMMFORGE_HOME=$tmp/home "$gf" db show | grep -q "$pinned .* pinned " || fail "db show does not list the pin"
if GEMMFORGE_HOME=$tmp/home "$gf" db pin -p 4096x4096x4096:bf16 -b native --candidate nope >/dev/null 2>"$tmp/err"; then
  fail "a candidate the backend lacks was pinned"
fi
[ "$(grep -c . "$tmp/err")" -eq 1 ] && grep -q "no candidate 'nope'" "$tmp/err" || fail "bad pin: $(cat "$tmp/err")"

# The DB travels (a pin with it): an export imports into an empty DB and exports the same again;
# garbage is refused.
GEMMFORGE_HOME=$tmp/home "$gf" db export --json "$tmp/e.json" >/dev/null || fail "db export failed"
grep -q '"pinned"' "$tmp/e.json" || fail "the export lacks the pin"
GEMMFORGE_HOME=$tmp/other "$gf" db import "$tmp/e.json" >/dev/null || fail "db import of an export failed"
GEMMFORGE_HOME=$tmp/other "$gf" db export --json "$tmp/e2.json" >/dev/null && cmp -s "$tmp/e.json" "$tmp/e2.json" \
  || fail "export -> import -> export changed the export"
echo '{"decisions": [1]}' >"$tmp/bad.json"
if GEMMFORGE_HOME=$tmp/other "$gf" db import "$tmp/bad.json" >/dev/null 2>"$tmp/err"; then fail "garbage imported"; fi
[ "$(grep -c . "$tmp/err")" -eq 1 ] || fail "a refused import wrote more than one line: $(cat "$tmp/err")"

# Record-then-tune: a --from file of GEMM and row-op keys (duplicates merged); a bad line is named.
printf '64x128x256:bf16\n# a comment\nrmsnorm:64x1024:bf16\n64x128x256:bf16\n' >"$tmp/recorded.txt"
GEMMFORGE_HOME=$tmp/home "$gf" candidates --from "$tmp/recorded.txt" -b native -s fast --top-k 1 >"$tmp/out" 2>&1 \
  || fail "candidates --from failed: $(tail -3 "$tmp/out")"
[ "$(grep -c '^64x128x256:bf16 ' "$tmp/out")" -eq 1 ] || fail "--from did not list its GEMM once: $(cat "$tmp/out")"
grep -q '^rmsnorm:64x1024:bf16' "$tmp/out" || fail "--from did not list its row op: $(cat "$tmp/out")"
printf '64x128x256:bf16\n64x128x:bf16\n' >"$tmp/bad.txt"
if GEMMFORGE_HOME=$tmp/home "$gf" candidates --from "$tmp/bad.txt" >/dev/null 2>"$tmp/err"; then fail "bad --from accepted"; fi
grep -q "line 2" "$tmp/err" || fail "a bad --from line is not named: $(cat "$tmp/err")"

# A kernel cache that cannot be written (GEMMFORGE_HOME is a file): every candidate fails to
# compile, each one reported, the JSON written, exit 1, no abort.
touch "$tmp/home-is-a-file"
GEMMFORGE_HOME=$tmp/home-is-a-file "$gf" compile -o softmax:64x1024:bf16 -s fast --top-k 2 --json "$tmp/c.json" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "compile with an unwritable cache exited $rc (want 1): $(tail -3 "$tmp/err")"
grep -q ' NO ' "$tmp/out" || fail "compile printed no table of failed candidates: $(cat "$tmp/out")"
python3 -c "import json,sys; rows=json.load(open(sys.argv[1])); assert rows and not any(r['ok'] for r in rows)" "$tmp/c.json" \
  || fail "compile wrote no JSON of its failed candidates"
# A machine without the CuTe DSL (GEMMFORGE_PYTHON names no Python) lists cute candidates and names
# the miss of a kernel that is not in its cache, with what to do.
GEMMFORGE_HOME=$tmp/home GEMMFORGE_PYTHON=/nonexistent/python3 "$gf" compile -b cute -p 64x128x256:bf16 -s fast \
  --top-k 1 >"$tmp/out" 2>&1 && fail "a cute compile without the DSL succeeded"
grep -q "not compiled.*gemmforge compile -b cute" "$tmp/out" || fail "a cute cache miss is not named: $(cat "$tmp/out")"

echo "cli: starts without a driver, refuses bad options in one line (no password printed), exports and imports the DB, tunes --from a recorded file, reports compile failures, names a CuTe DSL cache miss"
