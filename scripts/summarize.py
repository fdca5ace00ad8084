#!/usr/bin/env python3
"""Summarizes `gemmforge bench --json` files: one line per problem with every backend's median
microseconds and the ratio of native, Triton, CuTe DSL and CUTLASS to the best cuBLASLt kernel, then geomeans per M
(also paired by round, where the files carry every round's time), and the same for the tuned choice
(the row bench marks chosen: what a Runtime would run) with the backends it picked.

    scripts/summarize.py [--markdown] bench-*.json
"""
import math
import os
import statistics
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_stats import fused_overhead, load_bench, plain_of  # noqa: E402

markdown = "--markdown" in sys.argv
paths = [a for a in sys.argv[1:] if a != "--markdown" and os.path.exists(a)]
problems = load_bench(paths)
rows = {key: {b: r["us"] for b, r in e["rows"].items() if b != "choice"}
        for key, e in problems.items() if e["rows"]}
rounds = {key: {b: r["round_us"] for b, r in e["rows"].items()} for key, e in problems.items()}
labels = {key: e["label"] for key, e in problems.items()}
chosen = {key: (e["rows"]["choice"]["backend"], e["rows"]["choice"]["us"])
          for key, e in problems.items() if "choice" in e["rows"]}  # the tuned choice: what a Runtime runs
backends = sorted({b for times in rows.values() for b in times})
ratio_of = [b for b in ("native", "triton", "cute", "cutlass") if b in backends]
if markdown:
    print("| GEMM | key | " + " | ".join(f"{b} us" for b in backends) + " | " +
          " | ".join(f"{b}/cuBLASLt" for b in ratio_of) + " |")
    print("|---" * (2 + len(backends) + len(ratio_of)) + "|")
else:
    print(f"{'problem':40} " + " ".join(f"{b[:12]:>12}" for b in backends))
ratios = defaultdict(list)
# The same against the faster of cuBLASLt's tuned and rank-0 (default) kernels in this run: the
# tuned pick comes from single timings and is sometimes the slower of the two in the bench.
ratios_best = defaultdict(list)
# And paired by round: the median over rounds of cuBLASLt's time / native's in the same round.
# Rounds interleave the rows, so a pair ran seconds apart; drift over the run cancels.
ratios_paired = defaultdict(list)
best_of = {}  # problem -> the faster of cuBLASLt's tuned and default kernels
for key, times in rows.items():
    lt = times.get("cublaslt")
    # Speed relative to the tuned cuBLASLt kernel: above 1 is faster.
    rel = {b: lt / times[b] for b in ratio_of if lt and times.get(b)}
    m = int(key.split("x")[0])
    best = best_of[key] = min(t for t in (lt, times.get("cublaslt-default")) if t) if lt else None
    for b, r in rel.items():
        ratios[(b, m)].append(r)
        ratios_best[(b, m)].append(best / times[b])
        rb, rl = rounds[key].get(b), rounds[key].get("cublaslt")
        if rb and rl and len(rb) == len(rl) > 1:  # older files carry medians only
            ratios_paired[(b, m)].append(statistics.median(l / x for l, x in zip(rl, rb)))
    if markdown:
        cells = [f"{times[b]:.1f}" if b in times else "-" for b in backends]
        cells += [f"{rel[b]:.3f}" if b in rel else "-" for b in ratio_of]
        print(f"| {labels[key]} | `{key}` | " + " | ".join(cells) + " |")
    else:
        print(f"{labels[key][:40]:40} " +
              " ".join(f"{times[b]:12.1f}" if b in times else f"{'-':>12}" for b in backends))
if markdown:
    print()
def geomean(rs):
    return math.exp(sum(map(math.log, rs)) / len(rs))


for (b, m), rs in sorted(ratios.items()):
    best = ratios_best[(b, m)]
    print(f"{'- ' if markdown else ''}{b} vs cuBLASLt at M={m}: geomean {geomean(rs):.3f} (min {min(rs):.3f}) "
          f"over {len(rs)} GEMMs; against the faster of tuned and default {geomean(best):.3f} (min {min(best):.3f})")
    paired = ratios_paired.get((b, m))
    if paired and len(paired) == len(rs):
        print(f"{'  ' if markdown else ''}  paired by round: geomean {geomean(paired):.3f} (min {min(paired):.3f})")

choice, picks = defaultdict(list), defaultdict(Counter)
for key, (b, us) in chosen.items():
    best = best_of.get(key)
    if best:
        m = int(key.split("x")[0])
        choice[m].append(best / us)
        picks[m][b] += 1
for m, rs in sorted(choice.items()):
    which = ", ".join(f"{b} {n}" for b, n in picks[m].most_common())
    print(f"{'- ' if markdown else ''}the tuned choice vs the faster of tuned and default cuBLASLt at M={m}: "
          f"geomean {geomean(rs):.3f} (min {min(rs):.3f}) over {len(rs)} GEMMs; picked {which}")


# Each fused GEMM over its plain one, backend by backend: the medians' ratio, and the median of the
# per-round ratios where bench timed the two in the same rounds (it groups them).
for key, e in sorted(problems.items()):
    plain = plain_of(key, problems)
    if not plain:
        continue
    for b, f in sorted(e["rows"].items()):
        if b in ("choice", "copy") or b not in plain["rows"]:  # a fused problem's copy moves C and bias too
            continue
        over, ratios = fused_overhead(f, plain["rows"][b])
        paired = f", paired by round {statistics.median(ratios) - 1:+.1%}" if ratios else ""
        print(f"{'- ' if markdown else ''}{b} {labels.get(key, key)} over its plain GEMM: {over:+.1%}{paired}")
