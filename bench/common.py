"""Timing shared by the bench scripts: CUDA events, the L2 flushed before each launch, median; and the
same of a CUDA graph's replay, which leaves the host's call costs out."""
import torch


def bench_us(fn, *args, warmup=5, reps=50):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    times.sort()
    return times[len(times) // 2]


def graphed_us(fn, *args):
    """bench_us of fn(*args) replayed from a CUDA graph: the kernels' time after an L2 flush, without
    the host's (a 4096 x 4096 quantization takes ~12 us at copy speed, less than a Python op's call).
    The warm-up runs on the capture stream, which also gives gemmforge's runtime its workspaces there."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn(*args)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        fn(*args)
    return bench_us(graph.replay)
