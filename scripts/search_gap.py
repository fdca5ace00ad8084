#!/usr/bin/env python3
"""How far `--search fast` lands from the exhaustive best, from one run: the fast short list
(`gemmforge candidates -s fast --json`) looked up in the timings of an exhaustive tune of the same
problems (`gemmforge tune -s exhaustive --json`, which records every candidate), so both sides
were timed under the same conditions.

    scripts/search_gap.py fast-candidates.json exhaustive-tune.json
"""
import json
import sys


def gaps(fast_candidates, exhaustive_tune):
    """(problem, exhaustive best us, fast best us, best name) per problem; the times are None (and
    the name why) where a side has nothing timed. The exhaustive side counts the fast list's
    backends alone (a race of several backends holds the others' kernels too). The exhaustive side
    may also be tests/data/fitted-races.json's {"races": [...]}, records of the same form."""
    if isinstance(exhaustive_tune, dict):
        exhaustive_tune = exhaustive_tune["races"]
    fast, backends = {}, {}
    for c in fast_candidates:
        fast.setdefault(c["problem"], set()).add(c["name"])
        if "backend" in c:
            backends.setdefault(c["problem"], set()).add(c["backend"])
    rows = []
    for r in exhaustive_tune:
        if r["problem"] not in fast:  # a problem the fast list was not asked for
            continue
        ours = backends.get(r["problem"])
        timed = {c["candidate"]: c["us"] for c in r.get("candidates", [])
                 if c["verified"] and (ours is None or c.get("backend") in ours)}
        if not timed:
            rows.append((r["problem"], None, None, "no verified candidates (tuned from the DB? run with --force)"))
            continue
        best = min(timed, key=timed.get)
        fast_times = [timed[n] for n in fast.get(r["problem"], ()) if n in timed]
        if not fast_times:
            rows.append((r["problem"], timed[best], None, "none of the fast list was timed"))
            continue
        rows.append((r["problem"], timed[best], min(fast_times), best))
    return rows


def main():
    rows = gaps(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))
    print(f"{'problem':28} {'exhaustive us':>14} {'fast us':>9} {'fast/exh':>9}  best of all")
    worst = 1.0
    for problem, exh, fast, name in rows:
        if fast is None:
            print(f"{problem:28} {name}")
            continue
        worst = max(worst, fast / exh)
        print(f"{problem:28} {exh:14.1f} {fast:9.1f} {fast / exh:9.3f}  {name}")
    print(f"worst: fast is {100 * (worst - 1):.1f}% slower than the exhaustive best")


if __name__ == "__main__":
    main()
