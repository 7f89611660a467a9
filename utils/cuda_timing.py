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
