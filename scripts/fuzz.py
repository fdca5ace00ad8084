#!/usr/bin/env python3
"""Feeds the gemmforge command hostile input for a bounded time and counts what goes wrong.

    scripts/fuzz.py [--gemmforge build/gemmforge] [--seconds 120] [--seed N]

Four targets, each given a share of the time: problem specs (`candidates -p`), model configs
(`candidates --hf-config`), tuning DB files (`db show`, then `db clear`) and kernel cache entries
(`compile` after the cache is damaged). For every run it checks that the command did not crash
(a signal), did not hang (a timeout), wrote any error as one line, and refused what is invalid by
construction. It prints the counts and exits 1 unless all are zero. Needs no GPU.
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import string
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 20
counts = {"runs": 0, "crashes": 0, "hangs": 0, "multi_line_errors": 0, "wrongly_accepted": 0, "wrongly_refused": 0}
examples = {}


def note(kind, what):
    counts[kind] += 1
    examples.setdefault(kind, what[:300])


def run(gf, args, env, must_fail=None, must_pass=False):
    """Runs gemmforge with args; checks the outcome. must_fail: the input is invalid."""
    if any("\0" in a for a in args):
        return None  # no argv can carry a NUL
    counts["runs"] += 1
    try:
        p = subprocess.run([gf] + args, env=env, capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        note("hangs", repr(args))
        return None
    if p.returncode < 0 or p.returncode >= 128:
        note("crashes", f"{args!r} -> {p.returncode}: {p.stderr[-300:]!r}")
        return p
    err = p.stderr.decode("utf-8", "replace")
    errors = [l for l in err.splitlines() if l.startswith("gemmforge: error:")]
    if p.returncode == 1 and errors:
        # The error is exactly one line, of printable characters.
        rest = err[err.index("gemmforge: error:"):]
        if rest.rstrip("\n").count("\n") > 0 or any(ord(c) < 32 and c not in "\n" for c in rest):
            note("multi_line_errors", f"{args!r}: {rest!r}")
    if must_fail and p.returncode == 0:
        note("wrongly_accepted", f"{args!r} ({must_fail})")
    if must_pass and p.returncode != 0:
        note("wrongly_refused", f"{args!r}: {err[-300:]!r}")
    return p


# ---- problem specs ----------------------------------------------------------------------------

VALID_TERMS = ["bias", "rowbias", "residual", "relu", "gelu", "gelu_tanh", "silu", "swiglu", "swiglu_split",
               "alpha=0.5", "beta=2"]
DTYPES = ["bf16", "f16", "e4m3", "e5m2", "bf16->f32", "f16->f32", "fp16", "bfloat16"]
NASTY = ["\n", "\x1b[31m", "\x01", "\t", "\u202e", "\xff", "::", "x", "+", "->", "-", " ", "0x10", "1e999", "nan",
         "-1", "99999999999999999999", "1e-50", ",", "%s%n", "\\", "'", '"']


def spec_cases(rng):
    m, n, k = (rng.choice([1, 7, 16, 77, 128, 1000, 4096]) for _ in range(3))
    base = f"{m}x{n}x{k}"
    # Invalid by construction: a contradiction, a lax number, an empty field, a bad dtype form.
    bad = [
        (f"{base}:bf16:bias+rowbias", "two biases"),
        (f"{base}:bf16:swiglu+swiglu_split", "two gates"),
        (f"{base}:bf16:alpha=2+alpha=3", "two alphas"),
        (f"{base}:bf16:beta=1e-50", "beta underflows"),
        (f"{base}:bf16:alpha= 1", "lax number"),
        (f"{base}:bf16:alpha=0x1p2", "hex float"),
        (f"{base}:", "empty field"),
        (f"{base}:bf16>f32", "bf16>f32"),
        (f"{base}:bf16:relu+relu", "two activations"),
        (f"-{base}:bf16", "negative size"),
        (base + ":bf16:" + "a" * 100000, "a 100 KB term"),
    ]
    case = rng.choice(bad)
    yield case
    # Valid ones, sometimes mutated into anything.
    terms = "+".join(rng.sample(VALID_TERMS[:3], rng.randint(0, 1)) + rng.sample(VALID_TERMS[3:8], rng.randint(0, 1)))
    spec = base + ":" + rng.choice(DTYPES) + (":" + rng.choice(["tn", "nn"]) if rng.random() < 0.3 else "") + \
        (":" + terms if terms else "")
    yield spec, None
    chars = list(spec)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(chars) + 1)
        op = rng.random()
        if op < 0.4:
            chars.insert(pos, rng.choice(NASTY))
        elif op < 0.7 and chars:
            del chars[min(pos, len(chars) - 1)]
        else:
            chars.insert(pos, rng.choice(string.printable))
    yield "".join(chars), None


def fuzz_specs(gf, env, deadline, rng):
    while time.time() < deadline:
        for spec, invalid in spec_cases(rng):
            run(gf, ["candidates", "-b", "native", "-s", "fast", "--top-k", "1", "-p", spec], env, must_fail=invalid)


# ---- model configs ----------------------------------------------------------------------------

LLAMA = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
         "vocab_size": 128256, "head_dim": 128, "attention_bias": False}
HOSTILE_VALUES = [0, -1, 2 ** 63 - 1, 2 ** 64 - 1, 1.5, "128", None, [], {}, True, 1e308, 5, 3]


def fuzz_configs(gf, env, deadline, rng, tmp):
    path = os.path.join(tmp, "config.json")
    while time.time() < deadline:
        cfg = dict(LLAMA)
        field = rng.choice(list(cfg))
        value = rng.choice(HOSTILE_VALUES)
        cfg[field] = value
        invalid = None
        if field != "attention_bias" and not (isinstance(value, int) and not isinstance(value, bool) and 0 < value
                                             <= 2 ** 24):
            invalid = f"{field}={value!r}"
        if field == "attention_bias" and not isinstance(value, bool):
            invalid = f"attention_bias={value!r}"
        if field == "num_key_value_heads" and isinstance(value, int) and not isinstance(value, bool) and value > 0 \
                and 32 % value:
            invalid = "kv heads do not divide heads"
        if field == "head_dim" and value is None:
            invalid = None  # null head_dim: the default
        if field == "num_key_value_heads" and value is None:
            invalid = None
        text = json.dumps(cfg)
        if rng.random() < 0.2:  # broken JSON
            cut = rng.randrange(len(text))
            text, invalid = text[:cut], "truncated JSON"
        with open(path, "w") as f:
            f.write(text)
        run(gf, ["candidates", "-b", "native", "-s", "fast", "--top-k", "1", "--tokens", "16", "--hf-config", path],
            env, must_fail=invalid)
    run(gf, ["candidates", "-b", "native", "--hf-config", "/dev/zero"], env, must_fail="/dev/zero")


# ---- tuning DB files --------------------------------------------------------------------------

def fuzz_db(gf, env, deadline, rng, tmp):
    good = os.path.join(tmp, "good.db")
    con = sqlite3.connect(good)
    con.executescript("PRAGMA user_version = 0; CREATE TABLE decisions (problem TEXT, device TEXT);")
    con.close()
    run(gf, ["db", "--db", good, "show"], env, must_pass=True)  # converts it to the current schema
    blob = open(good, "rb").read()
    while time.time() < deadline:
        path = os.path.join(tmp, "damaged.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        data = bytearray(blob)
        kind = rng.choice(["truncate", "flip", "random", "zero", "foreign", "newer", "bad_row"])
        if kind == "truncate":
            data = data[:rng.randrange(len(data))]
        elif kind == "flip":
            for _ in range(rng.randint(1, 50)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == "random":
            data = bytearray(rng.randbytes(rng.randint(1, 20000)))
        elif kind == "zero":
            data = bytearray(len(data))
        with open(path, "wb") as f:
            f.write(data)
        if kind in ("foreign", "newer", "bad_row"):
            os.remove(path)
            con = sqlite3.connect(path)
            if kind == "foreign":
                con.executescript("CREATE TABLE users (name TEXT);")
            elif kind == "newer":
                con.executescript("PRAGMA user_version = 99; CREATE TABLE t (x);")
            con.close()
            if kind == "bad_row":
                run(gf, ["db", "--db", path, "show"], env, must_pass=True)
                con = sqlite3.connect(path)
                con.execute("INSERT INTO decisions VALUES ('p', 'd', 'gemm', 'b', 'v', 'c', '{broken', 1, 1, 'fast', "
                            "1, 'b', 't')")
                con.commit()
                con.close()
        run(gf, ["db", "--db", path, "show"], env, must_pass=kind == "bad_row")
        run(gf, ["db", "--db", path, "export"], env)
        run(gf, ["db", "--db", path, "clear"], env, must_pass=True)  # recovers any file


# ---- kernel cache entries ---------------------------------------------------------------------

def fuzz_cache(gf, env, deadline, rng, tmp):
    args = ["compile", "-o", "softmax:64x1024:bf16", "-s", "fast", "--top-k", "1", "--json"]
    out = os.path.join(tmp, "compile.json")
    run(gf, args + [out], env, must_pass=True)
    kernels = os.path.join(env["GEMMFORGE_HOME"], "kernels")
    while time.time() < deadline:
        bins = [f for f in os.listdir(kernels) if f.endswith(".bin")]
        if not bins:
            run(gf, args + [out], env, must_pass=True)
            continue
        victim = os.path.join(kernels, rng.choice(bins))
        data = bytearray(open(victim, "rb").read())
        kind = rng.choice(["truncate", "flip", "zero", "random", "envelope"])
        if kind == "truncate":
            data = data[:rng.randrange(max(1, len(data)))]
        elif kind == "flip":
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == "zero":
            data = bytearray(len(data))
        elif kind == "random":
            data = bytearray(rng.randbytes(len(data)))
        if kind == "envelope":
            with open(victim[:-4] + ".json", "w") as f:
                f.write(rng.choice(["", "{", "[]", '{"bytes": 1, "hash": "0"}']))
        else:
            with open(victim, "wb") as f:
                f.write(data)
        p = run(gf, args + [out], env, must_pass=True)
        if p is not None and p.returncode == 0:
            for row in json.load(open(out)):
                if row["cached"] and row["ok"] is False:
                    note("wrongly_accepted", f"a damaged cache entry was served: {row['name']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemmforge", default="build/gemmforge")
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    gf = os.path.abspath(a.gemmforge)
    tmp = tempfile.mkdtemp(prefix="gemmforge-fuzz-")
    env = dict(os.environ, GEMMFORGE_HOME=os.path.join(tmp, "home"), GEMMFORGE_LOG="warn")
    share = a.seconds / 4
    start = time.time()
    try:
        fuzz_specs(gf, env, start + share, rng)
        fuzz_configs(gf, env, start + 2 * share, rng, tmp)
        fuzz_db(gf, env, start + 3 * share, rng, tmp)
        fuzz_cache(gf, env, start + 4 * share, rng, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bad = {k: v for k, v in counts.items() if k != "runs" and v}
    print(f"fuzz (seed {a.seed}, {time.time() - start:.0f} s): " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for kind, what in examples.items():
        print(f"  first of {kind}: {what}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
