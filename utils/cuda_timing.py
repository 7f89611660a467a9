"""How the PyTorch-side benchmarks in utils/ time a call: CUDA events around
each call after warm-up calls, the median (docs/performance.md, Method)."""
import statistics

import torch


def median_ms(fn, iters=20, warmup=3):
    """Median milliseconds of `iters` calls of `fn`, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def graph_median_ms(fn, iters=20, warmup=3):
    """Median milliseconds of `fn` captured in a CUDA graph and replayed:
    three calls on a side stream first (what PyTorch's capture asks of
    code that allocates), then one captured call, replayed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return median_ms(graph.replay, iters=iters, warmup=warmup)
