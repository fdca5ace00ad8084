#!/usr/bin/env python3
"""Turns the JSON of one GPU run into docs/PERFORMANCE.md and its plots.

    scripts/report.py --run-info run.json [--bench bench.json ...] [--heldout bench.json ...]
                      [--ops ops.json] [--ab TITLE=BEFORE.json,AFTER.json ...] [--runtime runtime.json]
                      [--compile compile.json ...] [--out docs/PERFORMANCE.md] [--plots docs/plots]

--bench    `gemmforge bench --json` files of the shapes the cost models were fitted on;
--heldout  the same for shapes nothing was fitted on, reported apart;
--backend-bench TITLE=FILE  a bench of further backends (CuTe DSL, CUTLASS) from its own run, its own section;
--ops      a `gemmforge bench-ops --json` file; --runtime a `gemmforge bench-runtime --json` file;
--compile  `gemmforge compile --json` files (cold compiles: --no-cache) for the compile-time histogram;
--ab       TITLE=BEFORE,AFTER  the benches of two builds of the same problems, timed in one run;
--prepare  TITLE=FILE  `gemmforge prepare --json` files, a serving start each (local DB, Redis, ...);
--race     TITLE=FILE  a `gemmforge tune --force --json` file: every candidate raced in one stream, each
           backend's best beside the best cuBLASLt kernel;
--search-gap TITLE=FAST,EXHAUSTIVE  `gemmforge candidates -s fast --json` and an exhaustive tune of the
           same problems: how far the fast list lands from the exhaustive best;
--run-info a JSON object: {"date", "device", "commit", "commands": [...], "notes": [...]};
--targets  the issues' targets and the runs that measure them (scripts/targets.py): the first section.

Ratios are speeds against the best cuBLASLt kernel of the same run (the faster of the tuned pick and
cuBLASLt's own rank-0 pick, by median): above 1 is faster. Each carries a 95% interval from a
bootstrap over the paired rounds; "faster" and "slower" are said only where the interval excludes 1.
Plots need matplotlib; without it the Markdown is written alone.
"""
import argparse
import json
import math
import os
import random
import re
import statistics
from collections import defaultdict
from itertools import groupby

from bench_stats import baseline_of, copy_share, fmt_ci, geomean, interval, load_bench, paired, problem_m, verdict
from search_gap import gaps
from targets import target_section

def gemm_section(problems, rng, field="round_us", contenders=("native", "triton", "cute", "cutlass", "choice")):
    """Per-M tables of each contender against the best cuBLASLt kernel, and the geomean summary.
    field: "round_us" (events around single launches) or "round_graph_us" (graph replay)."""
    lines = []
    by_m = defaultdict(list)
    for key, entry in problems.items():
        by_m[problem_m(key)].append((key, entry))
    present = [b for b in contenders if any(b in e["rows"] and e["rows"][b][field] for e in problems.values())]
    summary = []
    for m in sorted(by_m):
        lines.append(f"\n### M = {m}\n")
        header = "| GEMM | best cuBLASLt us | " + " | ".join(f"{b} us | {b} speed [95%]" for b in present) + " |"
        lines += [header, "|---" * (2 + 2 * len(present)) + "|"]
        samples = defaultdict(list)
        alone = []  # problems no cuBLASLt kernel runs (e.g. fp8 block scales): absolute rates
        for key, entry in sorted(by_m[m], key=lambda kv: kv[1]["label"]):
            base = baseline_of(entry["rows"], field)
            if not base:
                alone.append((key, entry))
                continue
            cells = [entry["label"], f"{statistics.median(base[field]):.1f}"]
            for b in present:
                row = entry["rows"].get(b)
                if not row or not row[field]:
                    cells += ["-", "-"]
                    continue
                ratios = paired(base, row, field)
                samples[b].append(ratios)
                p, lo, hi = interval([ratios], rng, stat=lambda xs: xs[0])
                cells += [f"{statistics.median(row[field]):.1f}", fmt_ci(p, lo, hi)]
            lines.append("| " + " | ".join(cells) + " |")
        if alone:
            if len(alone) == len(by_m[m]):
                del lines[-2:]  # the speed table's header, with no row under it
            lines += ["", "No cuBLASLt kernel runs these; median us and TFLOP/s:", "",
                      "| GEMM | " + " | ".join(f"{b} us | {b} TFLOP/s" for b in present) + " |",
                      "|---" * (1 + 2 * len(present)) + "|"]
            for key, entry in alone:
                m_, n_, k_ = (int(x) for x in key.split(":")[0].split("x")[:3])
                cells = [entry["label"]]
                for b in present:
                    row = entry["rows"].get(b)
                    if not row or not row[field]:
                        cells += ["-", "-"]
                        continue
                    us = statistics.median(row[field])
                    cells += [f"{us:.1f}", f"{2.0 * m_ * n_ * k_ / (us * 1e6):.0f}"]
                lines.append("| " + " | ".join(cells) + " |")
        for b in present:
            if samples[b]:
                p, lo, hi = interval(samples[b], rng)
                summary.append((m, b, len(samples[b]), p, lo, hi, min(statistics.median(s) for s in samples[b])))
    head = ["| M | backend | GEMMs | geomean speed [95%] | min | verdict |", "|---|---|---|---|---|---|"]
    for m, b, n, p, lo, hi, worst in summary:
        head.append(f"| {m} | {b} | {n} | {fmt_ci(p, lo, hi)} | {worst:.3f} | {verdict(lo, hi)} |")
    return head, lines, summary


def copy_section(problems, contenders=("cublaslt", "native", "cute", "choice")):
    """The GEMMs bench timed a copy of the same bytes beside (M <= 128: the weights stream), in graph
    mode: each contender's speed as a share of the copy's, i.e. of the bandwidth a kernel moving
    those bytes can reach."""
    have = [(k, e) for k, e in problems.items() if "copy" in e["rows"] and e["rows"]["copy"].get("graph_us")]
    if not have:
        return []
    present = [b for b in contenders if any(b in e["rows"] and e["rows"][b]["round_graph_us"] for _, e in have)]
    lines = ["", "Against a device-to-device copy moving the same bytes (half read, half written) in the same run, "
             "back to back over rotating buffers past the L2 (queued: a captured copy may run on a copy engine), "
             "beside each GEMM's graph-mode time: % of the copy's speed.", "",
             "| GEMM | MB | copy us | copy TB/s | " + " | ".join(f"{b} %" for b in present) + " |",
             "|---" * (4 + len(present)) + "|"]
    for key, e in sorted(have, key=lambda kv: (problem_m(kv[0]), kv[1]["label"])):
        copy = e["rows"]["copy"]
        mb = copy.get("bytes", 0) / 1e6
        cells = [f"{100 * share:.0f}" if (share := copy_share(e["rows"], b)) is not None else "-" for b in present]
        lines.append(f"| {e['label']} | {mb:.1f} | {copy['graph_us']:.1f} | {copy.get('bytes', 0) / copy['graph_us'] / 1e6:.2f} | "
                     + " | ".join(cells) + " |")
    return lines


def gemm_pages(title, problems, rng):
    """A set's summaries in both timing modes, against a copy of the same bytes where bench timed
    one, then its per-M tables (events)."""
    head, lines, summary = gemm_section(problems, rng)
    out = ["", f"## {title}", "", "Single launches, CUDA events, L2 flushed before each:", ""] + head
    ghead, _, gsummary = gemm_section(problems, rng, field="round_graph_us")
    if gsummary:
        out += ["", "Back-to-back launches replayed from a CUDA graph over rotating inputs, per launch (what a "
                "serving stack sees):", ""] + ghead
    return out + copy_section(problems) + lines, summary


def runtime_section(rt):
    lines = [f"Host time per call on {rt['problem']}, {rt['rounds']} rounds of {rt['calls_per_round']} calls "
             "(bursts inside the launch queue, so a call's time is its enqueue):", "",
             "| call | median us | [p10, p90] | over the bare call, us | [p10, p90] |", "|---|---|---|---|---|"]
    for m in rt["modes"]:
        over = (f"{m['over_bare_us']:.2f} | [{m['over_bare_p10_us']:.2f}, {m['over_bare_p90_us']:.2f}]"
                if "over_bare_us" in m else "- | -")
        lines.append(f"| {m['name']} | {m['median_us']:.2f} | [{m['p10_us']:.2f}, {m['p90_us']:.2f}] | {over} |")
    return lines


def torch_section(layer):
    """The decoder layer beside torch (examples/bench_decoder_layer.py): per token count and pass, each
    mode's median over rounds with the rounds' range, speed against the strongest torch mode of the
    pass (max-autotune forward, torch.compile for training), and the setup (compile or tune) time."""
    rows = [r for r in layer["rows"] if "round_ms" in r or ("error" in r and r.get("pass") != "host overhead")]
    lines = [f"{layer.get('device', '')}, torch {layer.get('torch', '?')}; random bf16 weights, batch 1. Speed is "
             "against max-autotune without CUDA graphs for the forward pass and torch.compile for training; setup "
             "is the first call's compile, gemmforge's tuning or the graph capture; rel err is the largest "
             "difference from eager over eager's largest value.", "",
             "| tokens | pass | mode | median ms | [min, max] | speed | setup s | rel err |",
             "|---|---|---|---|---|---|---|---|"]
    for (tokens, pass_), group in groupby(rows, key=lambda r: (r["tokens"], r["pass"])):
        group = list(group)
        med = {r["mode"]: statistics.median(r["round_ms"]) for r in group if "round_ms" in r}
        best = next((med[m] for m in ("torch.compile max-autotune", "torch.compile") if m in med), None)
        for r in group:
            if "round_ms" not in r:
                lines.append(f"| {tokens} | {pass_} | {r['mode']} | failed: {r['error'][:80]} | | | | |")
                continue
            ms = med[r["mode"]]
            speed = f"{best / ms:.3f}" if best else "-"
            err = f"{r['rel_err']:.4f}" if "rel_err" in r else "-"
            lines.append(f"| {tokens} | {pass_} | {r['mode']} | {ms:.3f} | [{min(r['round_ms']):.3f}, "
                         f"{max(r['round_ms']):.3f}] | {speed} | {r['setup_s']:.1f} | {err} |")
    over = [r for r in layer["rows"] if r.get("pass") == "host overhead"]
    if over:
        lines += ["", "Host time per call at 16x4096x4096 (bursts of 100 calls inside the launch queue):", "",
                  "| call | median us | [min, max] over rounds |", "|---|---|---|"]
        for r in over:
            lines.append(f"| `{r['mode']}` | {statistics.median(r['round_us']):.2f} | "
                         f"[{min(r['round_us']):.2f}, {max(r['round_us']):.2f}] |")
    tuned = [r for r in layer["rows"] if r.get("tuning")]
    if tuned:
        lines += ["", "Where gemmforge's tuning went (setup of the `gemmforge` rows; compiles run ahead of measuring, "
                  "on one queue, so a problem's seconds are its wait for them plus its measuring):", "",
                  "| tokens | problem | backend | seconds | compile s | verify s | race s |", "|---|---|---|---|---|---|---|"]
        for r in tuned:
            for t in r["tuning"]:
                lines.append(f"| {r['tokens']} | `{t['problem']}` | {t['backend']} | {t['seconds']:.2f} | "
                             f"{t['compile_seconds']:.2f} | {t['verify_seconds']:.2f} | {t['race_seconds']:.2f} |")
    return lines


def prepare_section(specs):
    """Serving starts timed by `gemmforge prepare --json` (TITLE=FILE each): how long until every
    problem's kernel was ready, and for how many a decision was found."""
    lines = ["| start | problems | with a stored decision | ready in s | of it GEMMs s |", "|---|---|---|---|---|"]
    for spec in specs:
        title, path = spec.split("=", 1)
        d = json.load(open(path))
        lines.append(f"| {title} | {len(d['problems'])} | {d['with_decision']} | {d['seconds']:.3f} | "
                     f"{d['gemm_seconds']:.3f} |")
    return lines


def race_section(path):
    """Each backend's best verified candidate in a tuner's race (`tune --force --json`: every
    candidate timed in interleaved rounds in one stream), against the best cuBLASLt candidate."""
    lines = ["| problem | backend | best candidate | us | speed vs best cuBLASLt | verified |",
             "|---|---|---|---|---|---|"]
    for r in json.load(open(path)):
        best, total, ok = {}, defaultdict(int), defaultdict(int)
        for c in r["candidates"]:
            total[c["backend"]] += 1
            if c["verified"] and c["us"] > 0:
                ok[c["backend"]] += 1
                if c["us"] < best.get(c["backend"], (None, math.inf))[1]:
                    best[c["backend"]] = (c["candidate"], c["us"])
        base = best.get("cublaslt", (None, math.nan))[1]
        for b, (name, us) in sorted(best.items(), key=lambda kv: kv[1][1]):
            speed = "-" if math.isnan(base) else f"{base / us:.3f}"  # a race without cuBLASLt
            lines.append(f"| `{r['problem']}` | {b} | `{name}` | {us:.1f} | {speed} | {ok[b]}/{total[b]} |")
    return lines


def search_gap_section(spec):
    """--search fast against the exhaustive best of one run (FAST,EXHAUSTIVE JSON files)."""
    fast_path, exh_path = spec.split(",", 1)
    lines = ["| problem | exhaustive best us | fast best us | fast / exhaustive | exhaustive best |",
             "|---|---|---|---|---|"]
    ratios = []
    for problem, exh, fast, name in gaps(json.load(open(fast_path)), json.load(open(exh_path))):
        if fast is None:
            lines.append(f"| `{problem}` | - | - | - | {name} |")
        else:
            lines.append(f"| `{problem}` | {exh:.1f} | {fast:.1f} | {fast / exh:.3f} | `{name}` |")
            ratios.append(fast / exh)
    if len(ratios) > 2:
        lines += ["", f"fast / exhaustive: geomean {geomean(ratios):.3f}, worst {max(ratios):.3f} ({len(ratios)} problems)."]
    return lines


def chain_section(paths):
    """A layer's GEMMs back to back (`gemmforge bench-chain --json`, a file per model and token count):
    each chain's median with the rounds' p10-p90, its speed against cuBLASLt's chain, and what
    programmatic dependent launch saves, paired by round."""
    lines = ["Native runs the tuning DB's decision for each GEMM where it has one, else its first-ranked "
             "kernel untuned (the H200 runs of 2026-12-03 had no decisions; `gpu-check.sh chain` tunes first "
             "since 2026-12-06).", "",
             "| GPU | model | tokens | chain | median us | [p10, p90] | vs cuBLASLt | PDL saves us | PDL output |",
             "|---|---|---|---|---|---|---|---|---|"]
    for path in paths:
        d = json.load(open(path))
        gpu = re.search(r"H[12]00", d.get("device", ""))
        gpu = gpu.group(0) if gpu else "-"
        base = d["modes"][0]["median_us"]
        for m in d["modes"]:
            pdl = m["name"].endswith("PDL")
            saves = f"{d['pdl_saving_us']:.2f}" if pdl else ""
            if m["name"].endswith("no prefetch") and "prefetch_saving_us" in d:
                saves = f"(the prefetch: {d['prefetch_saving_us']:.2f})"
            same = ""
            if pdl:
                same = f"the same (rel err {d.get('pdl_rel_err', 0):.1e})" if d["pdl_matches"] else "DIFFERS"
            lines.append(f"| {gpu} | {d['model']} | {d['tokens']} | {m['name']} | {m['median_us']:.2f} | "
                         f"[{m['p10_us']:.2f}, {m['p90_us']:.2f}] | {base / m['median_us']:.3f} | {saves} | {same} |")
    return lines


def quantize_section(q):
    """bf16 -> e4m3 quantization (bench/quantize_vs_torch.py) against a copy: of the same bytes, timed
    the same way, where the run has one (copy_same_bytes), else the 2 GiB copy of the run."""
    same = all("copy_same_bytes" in r for r in q["rows"])
    against = ("a copy of the same bytes, timed the same way (its TB/s in the copy column)" if same else
               f"the copy bandwidth of the same run ({q['copy_tbps']:.2f} TB/s)")
    note = q["note"] + " " if "note" in q else ""  # where the run differs from the page's (its GPU)
    lines = [note + f"TB/s of x read once and q and its scales written once, against {against}; \"q agrees\" is the "
             "share of elements equal to torch's.", "",
             "| scaling | rows x cols | torch eager TB/s | torch.compile TB/s | gemmforge TB/s | copy TB/s | % of copy "
             "| q agrees |", "|---|---|---|---|---|---|---|---|"]
    for r in q["rows"]:
        copy = r.get("copy_same_bytes", q["copy_tbps"])
        lines.append(f"| {r['scaling']} | {r['shape']} | {r['eager']:.2f} | {r['compile']:.2f} | "
                     f"{r['gemmforge']:.2f} | {copy:.2f} | {100 * r['gemmforge'] / copy:.1f} | {r['agree']:.4f} |")
    return lines


def scaled_mm_section(d):
    """fp8 GEMMs (bench/scaled_mm_vs_torch.py): gemmforge's scaled_mm op beside torch._scaled_mm with
    fast accumulation off and on; speeds against the faster torch mode, geomean per scaling and M."""
    lines = [f"torch {d['torch']}; CUDA-graph replays after an L2 flush; e4m3 in, bf16 out. 'speed' is against the "
             "faster of torch's two modes; 'rel diff' is gemmforge's result against torch's without fast accumulation.",
             "", "| scaling | M | GEMMs | geomean speed | min |", "|---|---|---|---|---|"]

    def speed(r):
        torch_us = [t for t in (r.get("torch_us"), r.get("torch_fast_accum_us")) if t]
        return min(torch_us) / r["gemmforge_us"] if torch_us and r.get("gemmforge_us") else None

    groups = defaultdict(list)
    for r in d["rows"]:
        if speed(r):
            groups[(r["scaling"], r["m"])].append(speed(r))
    for (scaling, m), s in sorted(groups.items()):
        lines.append(f"| {scaling} | {m} | {len(s)} | {geomean(s):.3f} | {min(s):.3f} |")
    lines += ["", "| scaling | GEMM | M x N x K | torch us | torch fast-accum us | gemmforge us | speed | rel diff | "
              "gemmforge's pick |", "|---|---|---|---|---|---|---|---|---|"]

    def us(x):
        return f"{x:.1f}" if x else "-"

    for r in d["rows"]:
        s = speed(r)
        diff = f"{r['rel_diff']:.1e}" if r.get("rel_diff") is not None else "-"
        lines.append(f"| {r['scaling']} | {r['model']} {r['gemm']} | {r['m']}x{r['n']}x{r['k']} | {us(r.get('torch_us'))} "
                     f"| {us(r.get('torch_fast_accum_us'))} | {us(r.get('gemmforge_us'))} | "
                     f"{f'{s:.3f}' if s else '-'} | {diff} | `{r['gemmforge_pick']}` |")
    return lines


def compile_times(paths):
    """backend (and, for fp8 problems, the dtype and scale kind) -> seconds of each cold (not cached)
    successful compile."""
    times = defaultdict(list)
    for path in paths:
        for r in json.load(open(path)):
            if r.get("ok") and not r.get("cached"):
                fp8 = re.search(r":(e4m3|e5m2)\S*?scale=([a-z0-9]+)", r.get("problem", ""))
                times[r["backend"] + (f" {fp8[1]} scale={fp8[2]}" if fp8 else "")].append(r["compile_seconds"])
    return times


def compile_section(times):
    lines = ["| backend | kernels | median s | p90 s | max s |", "|---|---|---|---|---|"]
    for b, ts in sorted(times.items()):
        ts = sorted(ts)
        lines.append(f"| {b} | {len(ts)} | {statistics.median(ts):.2f} | {ts[int(0.9 * (len(ts) - 1))]:.2f} | "
                     f"{ts[-1]:.2f} |")
    return lines


def ops_section(ops):
    """The winner of each op, and every backend's best verified config beside it (% of copy)."""
    copy = ops["copy_tbps"]
    names = []
    for o in ops["ops"]:
        for c in o["configs"]:
            if c.get("backend", "native") not in names and c.get("backend") != "faulty":
                names.append(c.get("backend", "native"))
    lines = [f"Device-to-device copy in the same run: {copy:.2f} TB/s (bytes read + written). Each backend's "
             "column is its fastest verified config, % of copy.", "",
             "| op | winner | config | us | TB/s | % of copy | " + " | ".join(f"{n} %" for n in names) +
             " | configs verified |", "|---|---|---|---|---|---|" + "---|" * len(names) + "---|"]
    for o in ops["ops"]:
        # bench-ops writes each backend's best; older files only list the configs.
        best = {n: b["tbps"] for n, b in o.get("backends", {}).items()}
        if not best:
            for c in o["configs"]:
                if c["verified"] and c["tbps"] > best.get(c.get("backend", "native"), 0):
                    best[c.get("backend", "native")] = c["tbps"]
        cols = " | ".join(f"{100 * best[n] / copy:.1f}" if n in best else "-" for n in names)
        cfg = o["config"][o["config"].rfind("_t"):] if "_t" in o["config"] else o["config"]
        lines.append(f"| `{o['op']}` | {o.get('backend', 'native')} | `{cfg}` | {o['us']:.1f} | "
                     f"{o['tbps']:.2f} | {o['pct_copy']:.1f} | {cols} | {o['verified_configs']}/{len(o['configs'])} |")
    return lines


def ab_section(before, after, rng):
    """The same problems benched by two builds in one run: each backend's best, after / before."""
    lines = ["| GEMM | backend | before us | after us | speed after / before [95%] |", "|---|---|---|---|---|"]
    all_ratios = []
    for key in sorted(after, key=lambda k: (problem_m(k), after[k]["label"])):
        if key not in before:
            continue
        for backend in ("native", "cute", "cublaslt", "cublaslt-default", "triton"):
            b, a = before[key]["rows"].get(backend), after[key]["rows"].get(backend)
            if not (a and b):
                continue
            # The two builds ran one after the other: their rounds are not paired; compare every
            # round of one with every round of the other.
            ratios = [x / y for x in b["round_us"] for y in a["round_us"]]
            p, lo, hi = interval([ratios], rng, stat=lambda xs: xs[0])
            all_ratios.append(ratios)
            lines.append(f"| {after[key]['label']} | {backend} | {statistics.median(b['round_us']):.1f} | "
                         f"{statistics.median(a['round_us']):.1f} | {fmt_ci(p, lo, hi)} |")
    if all_ratios:
        p, lo, hi = interval(all_ratios, rng)
        lines.insert(0, f"Geomean after / before over {len(all_ratios)} rows: {fmt_ci(p, lo, hi)} "
                        f"({'within noise' if lo <= 1 <= hi else verdict(lo, hi)}).\n")
    return lines


def plots(problems, summary, ops, outdir, compile_s=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    os.makedirs(outdir, exist_ok=True)
    made = []
    if summary:
        fig, ax = plt.subplots(figsize=(8, 4))
        labels = [f"M={m}\n{b}" for m, b, *_ in summary]
        pts = [s[3] for s in summary]
        err = [[s[3] - s[4] for s in summary], [s[5] - s[3] for s in summary]]
        ax.bar(range(len(pts)), pts, yerr=err, capsize=4, color=["#4477aa" if s[1] == "native" else "#cc6677"
                                                                  for s in summary])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(pts)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("speed vs best cuBLASLt (geomean, 95%)")
        ax.set_title("GEMMs against the best cuBLASLt kernel of the same run")
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "gemm_speed.png"), dpi=120)
        made.append("gemm_speed.png")
        plt.close(fig)
    if problems:
        fig, ax = plt.subplots(figsize=(8, 5))
        for backend, marker in (("cublaslt", "s"), ("native", "o"), ("triton", "^")):
            xs, ys = [], []
            for key, entry in problems.items():
                row = entry["rows"].get(backend)
                if not row:
                    continue
                m, n, k = (int(v) for v in key.split(":")[0].split("x")[:3])
                flops, bytes_ = 2.0 * m * n * k, 2.0 * (m * k + n * k + m * n)
                xs.append(flops / bytes_)
                ys.append(flops / (statistics.median(row["round_us"]) * 1e6))
            if xs:
                ax.scatter(xs, ys, marker=marker, label=backend)
        peak, bw = 989.0, 4.26
        grid = [10 ** (i / 20) for i in range(0, 81)]
        ax.plot(grid, [min(peak, bw * x) for x in grid], color="gray", linewidth=1, label="989 TFLOP/s, 4.26 TB/s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP / byte moved at least)")
        ax.set_ylabel("TFLOP/s")
        ax.legend()
        ax.set_title("GEMMs on the roofline")
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "roofline.png"), dpi=120)
        made.append("roofline.png")
        plt.close(fig)
    if ops:
        fig, ax = plt.subplots(figsize=(8, 4))
        names = [o["op"].split(":")[0] + "\n" + o["op"].split(":")[1] for o in ops["ops"]]
        # Each backend's fastest verified config, side by side.
        backends = []
        for o in ops["ops"]:
            for c in o["configs"]:
                if c.get("backend", "native") not in backends and c.get("backend") != "faulty":
                    backends.append(c.get("backend", "native"))
        width = 0.8 / max(1, len(backends))
        for i, b in enumerate(backends):
            pct = [100 * max([c["tbps"] for c in o["configs"] if c["verified"] and c.get("backend", "native") == b],
                             default=0) / ops["copy_tbps"] for o in ops["ops"]]
            ax.bar([x + (i - (len(backends) - 1) / 2) * width for x in range(len(names))], pct, width, label=b)
        ax.legend()
        ax.axhline(100.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=7)
        ax.set_ylabel("% of copy bandwidth")
        ax.set_title("Row ops against the device-to-device copy of the same run")
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "rowops.png"), dpi=120)
        made.append("rowops.png")
        plt.close(fig)
    if compile_s:
        fig, ax = plt.subplots(figsize=(8, 4))
        top = max(max(ts) for ts in compile_s.values())
        bins = [top * i / 30 for i in range(31)]
        for b, ts in sorted(compile_s.items()):
            ax.hist(ts, bins=bins, alpha=0.6, label=f"{b} ({len(ts)})")
        ax.set_xlabel("seconds for one kernel, cold")
        ax.set_ylabel("kernels")
        ax.legend()
        ax.set_title("Compile time per candidate")
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "compile_times.png"), dpi=120)
        made.append("compile_times.png")
        plt.close(fig)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-info", required=True)
    ap.add_argument("--targets", help="a targets manifest (docs/data/targets.json)")
    ap.add_argument("--bench", nargs="*", default=[])
    ap.add_argument("--heldout", nargs="*", default=[])
    ap.add_argument("--backend-bench", nargs="*", default=[], metavar="TITLE=FILE",
                    help="a bench of other backends, its own run: a section of its own")
    ap.add_argument("--runtime")
    ap.add_argument("--compile", nargs="*", default=[])
    ap.add_argument("--ops")
    ap.add_argument("--torch", help="decoder-layer JSON of examples/bench_decoder_layer.py")
    ap.add_argument("--ab", nargs="*", default=[], metavar="TITLE=BEFORE,AFTER",
                    help="the benches of two builds of the same problems in one run: a section each")
    ap.add_argument("--prepare", nargs="*", default=[], metavar="TITLE=FILE",
                    help="`gemmforge prepare --json` files: serving starts, one row each")
    ap.add_argument("--race", nargs="*", default=[], metavar="TITLE=FILE",
                    help="`gemmforge tune --force --json` files: each backend's best in the race")
    ap.add_argument("--search-gap", nargs="*", default=[], metavar="TITLE=FAST,EXHAUSTIVE",
                    help="fast short list (candidates --json) and exhaustive tune (tune --json) of one run")
    ap.add_argument("--chain", nargs="*", default=[], help="bench-chain JSON files")
    ap.add_argument("--quantize", help="JSON of bench/quantize_vs_torch.py")
    ap.add_argument("--scaled-mm", help="JSON of bench/scaled_mm_vs_torch.py")
    ap.add_argument("--out", default="docs/PERFORMANCE.md")
    ap.add_argument("--plots", default="docs/plots")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    info = json.load(open(a.run_info))
    problems = load_bench(a.bench)
    ops = json.load(open(a.ops)) if a.ops else None
    out = ["# Performance", "",
           "Generated by `scripts/report.py` from the JSON of the GPU runs kept in docs/data/ "
           "(scripts/regen-performance.sh); the dated history of earlier runs is in docs/journal/. Regenerate it "
           "after every run that changes what is reported.", ""]
    if a.targets:
        out += ["## Where the issues' targets stand", "",
                "Each figure computed from the run named beside it (docs/data/targets.json lists the files); the "
                "verdict reads the point estimate.", ""] + target_section(a.targets, a.seed) + [""]
    out += [f"- Date: {info['date']}", f"- Device: {info['device']}", f"- Commit: {info.get('commit', '?')}"]
    out += [f"- Command: `{c}`" for c in info.get("commands", [])]
    out += ["", "How it is measured: CUDA events around each launch, at least 100 ms of warm-up, the L2 flushed "
            "before every timed launch, input sets rotated past the L2, the median of a round's launches, and the "
            "median of interleaved rounds in a fresh order each round. Every kernel is verified against the fp32 "
            "reference before and after its timed launches, its output poisoned with NaN and guarded past its end. "
            "Speeds are against the best cuBLASLt kernel of the same run (the faster of the tuned pick and "
            "cuBLASLt's rank-0 pick); intervals are 95% bootstrap intervals over the paired rounds, and a backend "
            "is called faster or slower only where its interval excludes 1. 'choice' is the kernel the tuner picked "
            "over every backend of the run, cuBLASLt's among them: what a Runtime runs."]
    out += [f"- {n}" for n in info.get("notes", [])]
    summary = []
    if problems:
        lines, summary = gemm_pages("GEMMs (the shapes the cost models were fitted on)", problems, rng)
        out += lines
    heldout = load_bench(a.heldout)
    if heldout:
        lines, _ = gemm_pages("GEMMs held out (no constant was fitted on these shapes)", heldout, rng)
        out += lines
    for spec in a.backend_bench:
        title, path = spec.split("=", 1)
        lines, _ = gemm_pages(title, load_bench([path]), rng)
        out += lines
    for spec in a.race:
        title, path = spec.split("=", 1)
        out += ["", f"## {title}", ""] + race_section(path)
    for spec in a.search_gap:
        title, files = spec.split("=", 1)
        out += ["", f"## {title}", ""] + search_gap_section(files)
    if a.runtime:
        out += ["", "## Runtime host overhead", ""] + runtime_section(json.load(open(a.runtime)))
    if a.torch:
        out += ["", "## The llama3-8b decoder layer in PyTorch", ""] + torch_section(json.load(open(a.torch)))
    if a.prepare:
        out += ["", "## A serving start from the tuning stores", ""] + prepare_section(a.prepare)
    if a.chain:
        out += ["", "## A layer's GEMMs back to back, with programmatic dependent launch", ""] + chain_section(a.chain)
    if a.quantize:
        out += ["", "## fp8 quantization", ""] + quantize_section(json.load(open(a.quantize)))
    if a.scaled_mm:
        out += ["", "## fp8 GEMMs beside torch._scaled_mm", ""] + scaled_mm_section(json.load(open(a.scaled_mm)))
    compile_s = compile_times(a.compile)
    if compile_s:
        out += ["", "## Compile time per candidate (cold)", ""] + compile_section(compile_s)
    for spec in a.ab:
        title, _, files = spec.partition("=")
        if files.count(",") != 1:
            ap.error(f"--ab takes TITLE=BEFORE.json,AFTER.json, not {spec!r}")
        before, after = files.split(",")
        out += ["", f"## {title}", ""] + ab_section(load_bench([before]), load_bench([after]), rng)
    if ops:
        out += ["", "## Row ops", ""] + ops_section(ops)
    made = plots({**problems, **heldout}, summary, ops, a.plots, compile_s)
    if made:
        rel = os.path.relpath(a.plots, os.path.dirname(os.path.abspath(a.out)))
        out += ["", "## Plots", ""] + [f"![{m[:-4]}]({rel}/{m})" for m in made]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {a.out}" + (f" and {len(made)} plots in {a.plots}" if made else ""))


if __name__ == "__main__":
    main()
