"""The issues' targets beside what the stored runs measured: one row a target, each figure computed
from the run's own JSON by the measure the manifest names (docs/data/targets.json):

    {"issue": 24, "target": "what the issue asks", "run": "device, date", "measure": "speed",
     "files": ["bench.json"], "backend": "cute", "m": [4096], "at_least": 0.97, "each_at_least": 0.9}

Measures, with their keys (files are relative to the manifest; m, where given, keeps those token counts,
problem_has, a regular expression, the problems that match it):
  speed        backend's geomean speed against the best cuBLASLt kernel, with its 95% interval;
               field "graph" for CUDA-graph replays; at_least (geomean), each_at_least (every GEMM),
               neither: reported; copy_bound: true adds the same ratio for a copy of the same bytes;
               launch_bound (a `bench-launch --json` file) adds the ratio a kernel would read that
               streamed at the backend's or the copy's back-to-back rate, whichever is faster, plus
               the smallest lone-launch cost of an empty kernel (single launches: their floor)
  tflops       backend's geomean TFLOP/s; at_least, or none: reported
  fused        each fused GEMM's time over its plain GEMM's (the same problem without its epilogue
               terms, from any of the files), backend's own kernels; at_most (the overhead, 0.03 = 3%),
               or none: reported. Where bench timed each pair in the same rounds (since bench groups
               them), the median of the per-round ratios, the worst's 95% interval beside it
  copy         backend's graph-mode speed as a share of a copy of the same bytes, for GEMMs whose
               weights hold at least min_weight_mb; at_least (every GEMM)
  quantize     gemmforge's TB/s as a share of the same bytes' copy, for the scalings listed; at_least
  compile      the median cold compile of `gemmforge compile --json` files (backend);
               at_most (seconds)
  search_gap   the fast list's best over the exhaustive best (fast, exhaustive); at_most (geomean)
  wins         which backend the tuner picked, per GEMM (`tune --json`): reported, no verdict
  chain        what programmatic dependent launch saves a chain (`bench-chain --json`): reported
Files that time a problem's backend again are further turns of it (bench_stats.load_turns): each turn
is a reading of its own, where merging would keep only the last. A verdict reads the point estimate;
the interval beside it says how firm it is.
"""
import json
import os
import re
import random
import statistics
from collections import Counter

from bench_stats import (baseline_of, copy_share, fmt_ci, fused_overhead, geomean, interval, load_turns, paired,
                         plain_of, problem_m)
from search_gap import gaps

FP8_BYTES = {"e4m3": 1, "e5m2": 1}


def span(values, fmt):
    lo, hi = format(min(values), fmt), format(max(values), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def count(n, what):
    return f"{n} {what}" + ("" if n == 1 else "s")


def readings(keys, what):
    """How many problems the figure covers, and how many readings where turns repeat them."""
    n = len(set(keys))
    return count(n, what) + (f", {len(keys)} readings" if len(keys) > n else "")


def shape(key):
    m, n, k = (int(x) for x in key.split(":")[0].split("x")[:3])
    return m, n, k


def select(paths, t):
    """(key, entry, its turn) of every problem the target keeps, turn by turn (load_turns): a GEMM
    timed in two turns is two readings."""
    return [(key, e, turn) for turn in load_turns(paths) for key, e in turn.items()
            if (not t.get("m") or problem_m(key) in t["m"]) and re.search(t.get("problem_has", ""), key)]


def weight_bytes(key):
    """B's bytes (N x K of B's dtype, the second of "AxB")."""
    _, n, k = shape(key)
    return n * k * FP8_BYTES.get(key.split(":")[1].split("->")[0].split("x")[-1], 2)


def lone_launch_us(path):
    """An empty kernel's smallest cost alone after the L2 flush over its cost back to back."""
    return min(x["single_us"] - x["graph_us"] for x in json.load(open(path))["launches"])


def speed(t, paths, rng):
    field = "round_graph_us" if t.get("field") == "graph" else "round_us"
    launch = t.get("launch_bound") and lone_launch_us(os.path.join(os.path.dirname(paths[0]), t["launch_bound"]))
    samples, keys, bounds, floors = [], [], [], []
    for key, e, _ in select(paths, t):
        base, row = baseline_of(e["rows"], field), e["rows"].get(t["backend"])
        if base and row and row[field]:
            samples.append(paired(base, row, field))
            keys.append(key)
            copy = e["rows"].get("copy", {})
            copy_us = copy.get("graph_us" if field == "round_graph_us" else "us")
            bounds.append(statistics.median(base[field]) / copy_us if copy_us else None)
            if launch:
                stream = min(x for x in (statistics.median(row["round_graph_us"]), copy.get("graph_us")) if x)
                floors.append(statistics.median(base[field]) / (stream + launch))
    if not samples:
        return None, False
    p, lo, hi = interval(samples, rng)
    worst = min(statistics.median(s) for s in samples)
    met = (p >= t.get("at_least", 0) and worst >= t.get("each_at_least", 0)
           if "at_least" in t or "each_at_least" in t else None)
    # copy_bound: what a kernel moving the same bytes at a copy's speed would read, the ceiling of
    # a memory-bound target.
    ceiling = f"; a copy of the same bytes: {geomean(bounds):.3f}" if t.get("copy_bound") and None not in bounds else ""
    if floors:
        ceiling += (f"; streaming at the faster of its and the copy's back-to-back rate after an empty kernel's "
                    f"lone-launch cost ({launch:.2f} us): {geomean(floors):.3f}")
    return f"{fmt_ci(p, lo, hi)}, min {worst:.3f} ({readings(keys, 'GEMM')}){ceiling}", met


def tflops(t, paths, rng):
    rates, keys = [], []
    for key, e, _ in select(paths, t):
        row = e["rows"].get(t["backend"])
        if row and row["round_us"]:
            m, n, k = shape(key)
            rates.append(2.0 * m * n * k / (statistics.median(row["round_us"]) * 1e6))
            keys.append(key)
    if not rates:
        return None, False
    return (f"{geomean(rates):.0f} TFLOP/s geomean, {span(rates, '.0f')} ({readings(keys, 'GEMM')})",
            geomean(rates) >= t["at_least"] if "at_least" in t else None)


def fused(t, paths, rng):
    over, paired_all = [], True
    for key, e, turn in select(paths, t):
        plain = plain_of(key, turn)
        if not plain:
            continue
        f, p = e["rows"].get(t["backend"]), plain["rows"].get(t["backend"])
        if f and p:
            by_medians, ratios = fused_overhead(f, p)
            paired_all = paired_all and ratios is not None
            over.append((by_medians, ratios, key))
    if not over:
        return None, False
    if paired_all:  # timed in the same rounds: the median of the per-round ratios (the worst's interval below)
        over = [(statistics.median(ratios) - 1, ratios, key) for _, ratios, key in over]
    worst = max(over, key=lambda o: o[0])
    firm = ""
    if paired_all:
        _, lo, hi = interval([worst[1]], rng)
        firm = f", paired by round [{lo - 1:+.1%}, {hi - 1:+.1%}]"
    return (f"{span([o for o, _, _ in over], '+.1%')} ({readings([k for _, _, k in over], 'epilogue')}; worst `{worst[2]}`{firm})",
            worst[0] <= t["at_most"] if "at_most" in t else None)


def copy(t, paths, rng):
    shares, keys = [], []
    for key, e, _ in select(paths, t):
        share = copy_share(e["rows"], t["backend"])
        if share is not None and weight_bytes(key) >= t.get("min_weight_mb", 0) * 1e6:
            shares.append(share)
            keys.append(key)
    if not shares:
        return None, False
    return (f"{span(shares, '.0%')} of the copy ({readings(keys, 'GEMM')})",
            min(shares) >= t["at_least"])


def quantize(t, paths, rng):
    # "copy_of": the copy timed beside another scaling of the same shape (the same bytes within a
    # few), where a run's own copy for these scalings is not to be trusted (named in the target).
    shares = []
    for path in paths:
        q = json.load(open(path))
        copies = {(r["scaling"], r["shape"]): r.get("copy_same_bytes", q["copy_tbps"]) for r in q["rows"]}
        for r in q["rows"]:
            if r["scaling"] in t["scalings"]:
                shares.append(r["gemmforge"] / copies[(t.get("copy_of", r["scaling"]), r["shape"])])
    if not shares:
        return None, False
    return f"{span(shares, '.0%')} of the copy ({count(len(shares), 'shape')})", min(shares) >= t["at_least"]


def compile_median(t, paths, rng):
    times = [r["compile_seconds"] for path in paths for r in json.load(open(path))
             if r.get("ok") and not r.get("cached") and r["backend"] == t.get("backend", r["backend"])
             and re.search(t.get("problem_has", ""), r["problem"])]
    if not times:
        return None, False
    med = statistics.median(times)
    return f"median {med:.2f} s ({count(len(times), 'kernel')})", med <= t["at_most"]


def search_gap(t, paths, rng):
    ratios = []
    for fast, exhaustive in zip(paths[::2], paths[1::2]):
        ratios += [f / e for _, e, f, _ in gaps(json.load(open(fast)), json.load(open(exhaustive))) if f]
    if not ratios:
        return None, False
    return (f"fast / exhaustive {geomean(ratios):.3f} geomean, worst {max(ratios):.3f} ({count(len(ratios), 'GEMM')})",
            geomean(ratios) <= t["at_most"])


def wins(t, paths, rng):
    picks = Counter(r["backend"] for path in paths for r in json.load(open(path)) if r.get("backend"))
    return ", ".join(f"{b} {n}" for b, n in picks.most_common()) + f" of {count(sum(picks.values()), 'GEMM')}", None


def chain(t, paths, rng):
    """Every mode of each chain: cuBLASLt's, native's, and native's with PDL at each trigger position."""
    parts = []
    for path in paths:
        d = json.load(open(path))
        modes = [f"{m['name'].replace('native + ', '+ ')} {m['median_us']:.1f}" for m in d["modes"]]
        parts.append(f"{d['tokens']} tokens, us: " + ", ".join(modes))
    return "; ".join(parts), None


MEASURES = {"speed": speed, "tflops": tflops, "fused": fused, "copy": copy, "quantize": quantize,
            "compile": compile_median, "search_gap": search_gap, "wins": wins, "chain": chain}


def target_section(manifest, seed):
    """The table: issue, target, what the run measured, the run, and met / not met (or "-" where the
    target is a report, not a bound). Each row's spread is drawn from a generator seeded by the row
    itself, so adding a row leaves the others' figures as they were."""
    here = os.path.dirname(os.path.abspath(manifest))
    lines = ["| issue | target | measured | run | verdict |", "|---|---|---|---|---|"]
    for t in json.load(open(manifest))["targets"]:
        if t["measure"] not in MEASURES:
            raise SystemExit(f"{manifest}: unknown measure {t['measure']!r} (known: {', '.join(MEASURES)})")
        paths = [os.path.join(here, f) for f in t["files"]]
        rng = random.Random(f"{seed}|{t['issue']}|{t['target']}|{t.get('run', '')}")
        figure, met = MEASURES[t["measure"]](t, paths, rng)
        verdict = "not measured" if figure is None else "-" if met is None else "met" if met else "not met"
        lines.append(f"| {t['issue']} | {t['target']} | {figure or '-'} | {t.get('run', '')} | {verdict} |")
    return lines
