"""What the report's tables and the targets' table share: a bench's rows read from its JSON and the
speeds against the best cuBLASLt kernel of the same run, with bootstrap intervals over the paired
rounds."""
import json
import math
import statistics

BASELINES = ("cublaslt", "cublaslt-default")
RESAMPLES = 2000


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def problem_m(key):
    return int(key.split("x")[0])


def load_bench(paths):
    """problem -> {"label", "rows": {backend: record}}; records that verified in every round. The
    row bench marks chosen (the tuned pick over every backend it ran: what a Runtime runs) is also
    the "choice" row."""
    problems = {}
    for path in paths:
        for r in json.load(open(path)):
            entry = problems.setdefault(r["problem"], {"label": r.get("label", r["problem"]), "rows": {}})
            rounds = r.get("round_us") or ([r["us"]] if r.get("us") else [])
            if r.get("verified") and rounds and all(t > 0 for t in rounds):
                graph = r.get("round_graph_us") or []
                row = dict(r, round_us=rounds, round_graph_us=graph if graph and all(t > 0 for t in graph) else [],
                           file=path)
                entry["rows"][r["backend"]] = row
                if r.get("chosen"):
                    entry["rows"]["choice"] = row
    return problems


def load_turns(paths):
    """The files' problems as turns: a problem's rows from several files join one entry where their
    backends differ (one run split over calls); a backend timed again for a problem (another turn
    of the same run) opens the next turn, so that every reading counts and none hides another."""
    turns = []
    for path in paths:
        for key, e in load_bench([path]).items():
            timed = set(e["rows"]) - {"choice"}
            turn = next((t for t in turns if key not in t or not set(t[key]["rows"]) & timed), None)
            if turn is None:
                turn = {}
                turns.append(turn)
            if key in turn:
                turn[key]["rows"].update(e["rows"])
            else:
                turn[key] = e
    return turns


def plain_key(key):
    """The problem without its epilogue's terms: shape:dtypes[:layout][:epilogue], the fp8 scale kept
    (it is part of the product)."""
    parts = key.split(":")
    if len(parts) < 3 or set(parts[-1]) <= set("nt"):  # no epilogue, or a layout last
        return key
    scale = [x for x in parts[-1].split("+") if x.startswith("scale=")]
    return ":".join(parts[:-1] + scale)


def plain_of(key, problems):
    """The entry of a fused problem's plain GEMM among problems, or None (no such entry, or key has
    no epilogue terms to drop)."""
    plain = plain_key(key)
    return problems.get(plain) if plain != key else None


def fused_overhead(fused, plain):
    """A fused kernel's time over its plain one's, less 1: (medians' ratio, per-round ratios). The
    rounds pair up where bench timed both problems in the same rounds (one group of one file:
    bench groups a fused GEMM with its plain one), else the second is None."""
    over = statistics.median(fused["round_us"]) / statistics.median(plain["round_us"]) - 1
    same = (fused.get("group") is not None and fused.get("group") == plain.get("group")
            and fused["file"] == plain["file"] and len(fused["round_us"]) == len(plain["round_us"]))
    return over, [f / p for f, p in zip(fused["round_us"], plain["round_us"])] if same else None


def baseline_of(rows, field="round_us"):
    """The cuBLASLt row with the lower median: the best competing kernel of the run."""
    have = [rows[b] for b in BASELINES if b in rows and rows[b][field]]
    return min(have, key=lambda r: statistics.median(r[field])) if have else None


def paired(base, row, field="round_us"):
    """Per-round speed of row against base (rounds of one bench are interleaved, so paired)."""
    n = min(len(base[field]), len(row[field]))
    return [base[field][i] / row[field][i] for i in range(n)]


def interval(samples_per_problem, rng, stat=geomean):
    """Point estimate and 95% bootstrap interval of stat over problems of the medians of their
    paired ratios, resampling each problem's rounds."""
    point = stat([statistics.median(s) for s in samples_per_problem])
    draws = []
    for _ in range(RESAMPLES):
        draws.append(stat([statistics.median(rng.choices(s, k=len(s))) for s in samples_per_problem]))
    draws.sort()
    return point, draws[int(0.025 * RESAMPLES)], draws[int(0.975 * RESAMPLES) - 1]


def verdict(lo, hi):
    return "faster" if lo > 1 else "slower" if hi < 1 else "level"


def fmt_ci(p, lo, hi):
    return f"{p:.3f} [{lo:.3f}, {hi:.3f}]"


def copy_share(rows, backend):
    """Backend's graph-mode speed as a share of the copy of the same bytes bench timed beside it
    ("cublaslt": the faster of its picks), or None where either is missing."""
    copy = rows.get("copy")
    row = baseline_of(rows, "round_graph_us") if backend == "cublaslt" else rows.get(backend)
    if not (copy and copy.get("graph_us") and row and row["round_graph_us"]):
        return None
    return copy["graph_us"] / statistics.median(row["round_graph_us"])
