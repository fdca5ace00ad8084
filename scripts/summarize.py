#!/usr/bin/env python3
"""Prints one line per problem from `gemmforge bench --json` files: each backend's time, the
ratio of cuBLASLt's best to native's, and geomeans by token count."""
import json
import math
import sys
from collections import defaultdict

rows = defaultdict(dict)
labels = {}
for path in sys.argv[1:]:
    try:
        records = json.load(open(path))
    except (OSError, ValueError):
        continue
    for r in records:
        if r.get("verified"):
            rows[r["problem"]][r["backend"]] = r["us"]
            labels[r["problem"]] = r.get("label", r["problem"])

print(f"{'problem':34} {'cublaslt':>9} {'native':>9} {'default':>9} {'lt/native':>9}")
by_m = defaultdict(list)
for key, times in rows.items():
    lt, nat, dflt = times.get("cublaslt"), times.get("native"), times.get("cublaslt-default")
    ratio = lt / nat if lt and nat else None
    m = int(key.split("x")[0])
    if ratio:
        by_m[m].append(ratio)
    fmt = lambda v: f"{v:9.1f}" if v else f"{'-':>9}"
    print(f"{labels[key][:34]:34} {fmt(lt)} {fmt(nat)} {fmt(dflt)} {ratio if ratio else 0:9.3f}")
for m, ratios in sorted(by_m.items()):
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"M={m}: native vs cuBLASLt geomean {g:.3f} (min {min(ratios):.3f}) over {len(ratios)} GEMMs")
