#!/usr/bin/env python3
"""Prints one line per problem from `gemmforge bench --json` files: every backend's median
microseconds, then native's and Triton's ratio to the best cuBLASLt kernel, with geomeans per M."""
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

backends = sorted({b for times in rows.values() for b in times})
print(f"{'problem':40} " + " ".join(f"{b[:12]:>12}" for b in backends))
ratios = defaultdict(list)
for key, times in rows.items():
    print(f"{labels[key][:40]:40} " + " ".join(f"{times[b]:12.1f}" if b in times else f"{'-':>12}" for b in backends))
    lt = times.get("cublaslt")
    for b in ("native", "triton"):
        if lt and times.get(b):
            ratios[(b, int(key.split("x")[0]))].append(lt / times[b])
for (b, m), rs in sorted(ratios.items()):
    g = math.exp(sum(map(math.log, rs)) / len(rs))
    print(f"{b} vs cuBLASLt at M={m}: geomean {g:.3f} (min {min(rs):.3f}) over {len(rs)} GEMMs")
