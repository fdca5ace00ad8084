#!/usr/bin/env python3
"""How far `--search fast` lands from the exhaustive best, from one run: the fast short list
(`gemmforge candidates -s fast --json`) looked up in the timings of an exhaustive tune of the same
problems (`gemmforge tune -s exhaustive --json`, which records every candidate), so both sides
were timed under the same conditions.

    scripts/search_gap.py fast-candidates.json exhaustive-tune.json
"""
import json
import sys

fast = {}
for c in json.load(open(sys.argv[1])):
    fast.setdefault(c["problem"], set()).add(c["name"])

print(f"{'problem':28} {'exhaustive us':>14} {'fast us':>9} {'fast/exh':>9}  best of all")
worst = 1.0
for r in json.load(open(sys.argv[2])):
    timed = {c["candidate"]: c["us"] for c in r.get("candidates", []) if c["verified"]}
    if not timed:
        print(f"{r['problem']:28} no verified candidates (tuned from the DB? run with --force)")
        continue
    best_name = min(timed, key=timed.get)
    fast_times = [timed[n] for n in fast.get(r["problem"], ()) if n in timed]
    if not fast_times:
        print(f"{r['problem']:28} none of the fast list was timed")
        continue
    gap = min(fast_times) / timed[best_name]
    worst = max(worst, gap)
    print(f"{r['problem']:28} {timed[best_name]:14.1f} {min(fast_times):9.1f} {gap:9.3f}  {best_name}")
print(f"worst: fast is {100 * (worst - 1):.1f}% slower than the exhaustive best")
