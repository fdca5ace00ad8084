"""The llama3-8b decoder layer, forward, at a few token counts: eager, torch.compile,
torch.compile max-autotune (no cudagraphs), and the same layer optimized by gemmforge (eager and
compiled); then forward + backward: eager, torch.compile and gemmforge. Prints a table and writes
JSON (--json) for scripts/report.py.

    python3 examples/bench_decoder_layer.py --tokens 128,4096 --json out.json
"""
import argparse
import copy
import json
import statistics
import time

import torch

from examples.decoder_layer import DecoderLayer, llama3_8b_config


def timed(fn, iters: int, rounds: int = 5) -> list[float]:
    """Per round, the median of `iters` launches timed with CUDA events, in ms."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        times = []
        for _ in range(iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        out.append(statistics.median(times))
    return out


def first_call(fn) -> float:
    """Seconds of the first call (compilation or tuning included)."""
    start = time.time()
    fn()
    torch.cuda.synchronize()
    return time.time() - start


def graphed(fn):
    """fn captured once in a CUDA graph (after warm-up on the capture stream, which also gives
    gemmforge's runtime its workspaces there); returns the replay, whose output is the captured one."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        out = fn()

    def replay():
        graph.replay()
        return out

    return replay


def host_profile(fn, calls: int = 20, top: int = 12) -> list[dict]:
    """The ops that take the most host time over some calls of fn (torch.profiler, CPU side):
    where a host-bound forward's time goes."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    return [{"op": e.key, "calls_per_forward": e.count / calls, "self_us_per_forward": e.self_cpu_time_total / calls,
             "total_us_per_forward": e.cpu_time_total / calls} for e in events]


def rel_err(got, want) -> float:
    got, want = got.float(), want.float()
    if not torch.isfinite(got).all():
        return float("inf")
    return ((got - want).abs().max() / want.abs().max()).item()


def forward_rows(tokens: int, iters: int) -> list[dict]:
    import gemmforge
    import gemmforge.torch as gft

    torch.manual_seed(0)
    base = DecoderLayer(llama3_8b_config()).to("cuda", torch.bfloat16).eval()
    x = torch.randn(1, tokens, base.hidden, device="cuda", dtype=torch.bfloat16)
    rows = []
    with torch.inference_mode():
        ref = base(x)

        def add(mode, fn, setup=None):
            try:
                setup_s = setup() if setup else 0.0
                err = rel_err(fn(), ref)  # before timing: a graph replay overwrites its output
                rows.append({"tokens": tokens, "pass": "forward", "mode": mode, "round_ms": timed(fn, iters),
                             "setup_s": setup_s, "rel_err": err})
            except Exception as e:  # one mode failing must not lose the others
                rows.append({"tokens": tokens, "pass": "forward", "mode": mode, "error": f"{type(e).__name__}: {e}"})

        add("eager", lambda: base(x))
        torch._dynamo.reset()
        compiled = torch.compile(base)
        add("torch.compile", lambda: compiled(x), lambda: first_call(lambda: compiled(x)))
        torch._dynamo.reset()
        autotuned = torch.compile(base, mode="max-autotune-no-cudagraphs")
        add("torch.compile max-autotune", lambda: autotuned(x), lambda: first_call(lambda: autotuned(x)))
        torch._dynamo.reset()
        # With CUDA graphs on both sides: what a serving stack runs at small token counts.
        autotuned_graphs = torch.compile(base, mode="max-autotune")

        def graphs_step():  # a new step each call, as a serving loop marks it
            torch.compiler.cudagraph_mark_step_begin()
            return autotuned_graphs(x)

        add("torch.compile max-autotune + CUDA graphs", graphs_step, lambda: first_call(graphs_step))
        layer = copy.deepcopy(base)
        tuned = []

        def tune():  # optimize(layer, x), its tuning's results kept: where the seconds go
            start = time.time()
            gft.optimize(layer, x, tune=False)
            tuned.extend(gemmforge.tune(gft.problems(layer, [tokens]), progress=False))
            gft.reset()  # the runtimes read the new decisions
            return time.time() - start

        add("gemmforge", lambda: layer(x), tune)
        rows[-1]["tuning"] = [{k: r.get(k) for k in ("problem", "backend", "from_db", "seconds", "compile_seconds",
                                                     "verify_seconds", "race_seconds")} for r in tuned]
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        gf_compiled = torch.compile(layer)
        add("gemmforge + torch.compile", lambda: gf_compiled(x), lambda: first_call(lambda: gf_compiled(x)))
        rows[-1]["graph_breaks"] = dict(torch._dynamo.utils.counters["graph_break"])
        rows[-1]["host_profile"] = host_profile(lambda: gf_compiled(x))
        torch._dynamo.reset()
        # With CUDA graphs (the ops are capture-safe once prepared): what a serving stack runs.
        gf_graphs = torch.compile(layer, mode="reduce-overhead")

        def gf_graphs_step():
            torch.compiler.cudagraph_mark_step_begin()
            return gf_graphs(x)

        add("gemmforge + torch.compile + CUDA graphs", gf_graphs_step, lambda: first_call(gf_graphs_step))
        replays = {}

        def capture():
            start = time.time()
            replays["layer"] = graphed(lambda: layer(x))
            return time.time() - start

        add("gemmforge + CUDA graph", lambda: replays["layer"](), capture)
    return rows


def training_rows(tokens: int, iters: int) -> list[dict]:
    import gemmforge.torch as gft

    torch.manual_seed(0)
    base = DecoderLayer(llama3_8b_config()).to("cuda", torch.bfloat16)
    x = torch.randn(1, tokens, base.hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn_like(x)
    rows = []

    def step(model):
        return lambda: model(x).backward(g)

    def add(mode, model, setup=None):
        try:
            setup_s = setup() if setup else 0.0
            rows.append({"tokens": tokens, "pass": "forward+backward", "mode": mode,
                         "round_ms": timed(step(model), max(iters // 2, 5)), "setup_s": setup_s})
        except Exception as e:
            rows.append({"tokens": tokens, "pass": "forward+backward", "mode": mode,
                         "error": f"{type(e).__name__}: {e}"})

    add("eager", base)
    torch._dynamo.reset()
    compiled = torch.compile(base)
    add("torch.compile", compiled, lambda: first_call(step(compiled)))
    layer = copy.deepcopy(base)

    def tune():
        start = time.time()
        gft.optimize(layer, x, progress=False)
        return time.time() - start

    add("gemmforge", layer, tune)
    return rows


def overhead_rows(calls: int = 2000) -> list[dict]:
    """Host time per call of torch.ops.gemmforge.linear and F.linear at M = 16 (16x4096x4096), in
    bursts that stay inside the launch queue: the call's own cost, not the GPU's."""
    import gemmforge.torch

    x = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    module = gemmforge.torch.Linear(torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16))
    fns = {"F.linear": lambda: torch.nn.functional.linear(x, w),
           "torch.ops.gemmforge.linear": lambda: torch.ops.gemmforge.linear(x, w),
           "gemmforge.torch.Linear (module)": lambda: module(x)}
    rows = []
    with torch.inference_mode():
        for name, fn in fns.items():
            rounds = []
            for _ in range(5):
                for _ in range(50):
                    fn()
                torch.cuda.synchronize()
                burst = []
                for _ in range(calls // 100):
                    start = time.perf_counter()
                    for _ in range(100):
                        fn()
                    burst.append((time.perf_counter() - start) / 100 * 1e6)
                    torch.cuda.synchronize()
                rounds.append(statistics.median(burst))
            rows.append({"pass": "host overhead", "mode": name, "tokens": 16, "round_us": rounds})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", default="128,4096")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--no-backward", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()

    def write(rows):  # after each step: a run cut short keeps what it measured
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f,
                          indent=1)

    rows = overhead_rows()
    write(rows)
    for r in rows:
        print(f"host time per call, 16x4096x4096: {r['mode']:<28} {statistics.median(r['round_us']):7.2f} us")
    for t in (int(v) for v in a.tokens.split(",")):
        rows += forward_rows(t, a.iters)
        write(rows)
        if not a.no_backward:
            rows += training_rows(t, a.iters)
            write(rows)
    print(f"{'tokens':>6} {'pass':<17} {'mode':<28} {'ms':>8} {'setup s':>8} {'rel err':>8}")
    for r in rows:
        if "tokens" not in r or r["pass"] == "host overhead":
            continue
        if "error" in r:
            print(f"{r['tokens']:>6} {r['pass']:<17} {r['mode']:<28} failed: {r['error'][:200]}")
        if "round_ms" not in r:
            continue
        print(f"{r['tokens']:>6} {r['pass']:<17} {r['mode']:<28} {statistics.median(r['round_ms']):8.3f} "
              f"{r['setup_s']:8.1f} {r.get('rel_err', float('nan')):8.4f}")
    for r in rows:  # why gemmforge + torch.compile is slower than it should be
        if r.get("host_profile") is not None:
            print(f"gemmforge + torch.compile at {r['tokens']} tokens: graph breaks {r.get('graph_breaks')}; "
                  "host time per forward by op (self / total us, calls):")
            for e in r["host_profile"]:
                print(f"  {e['op'][:60]:<60} {e['self_us_per_forward']:8.1f} {e['total_us_per_forward']:8.1f} "
                      f"{e['calls_per_forward']:5.1f}")
    for r in rows:  # where gemmforge's tuning seconds went
        if r.get("tuning"):
            t = r["tuning"]
            total = {k: sum(p[k] or 0 for p in t) for k in ("seconds", "compile_seconds", "verify_seconds",
                                                               "race_seconds")}
            print(f"tuning at {r['tokens']} tokens: {len(t)} problems, {total['seconds']:.1f} s in tune "
                  f"(compile {total['compile_seconds']:.1f} s, partly overlapped; verify "
                  f"{total['verify_seconds']:.1f} s; race {total['race_seconds']:.1f} s); "
                  f"{r['setup_s']:.1f} s in all")
            for p in t:
                print(f"  {p['problem']:<40} {p['backend'] or '-':<9} {p['seconds']:6.2f} s (compile "
                      f"{p['compile_seconds'] or 0:.2f}, verify {p['verify_seconds'] or 0:.2f}, race "
                      f"{p['race_seconds'] or 0:.2f})")


if __name__ == "__main__":
    main()
