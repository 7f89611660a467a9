#!/usr/bin/env python3
"""FLA's varlen causal_conv1d (Triton) on the prologue's benchmark shapes.

The baseline of docs/performance.md for the fused prologue: the same shapes
(8192 channels, width 4, SiLU, bf16) and sequence lengths as
utils/gpu-integration.sh times, on the same GPU in the same call. Timing:
CUDA events around each call after warm-up, median of 50; inputs rotate over
4 buffer sets so that L2 does not serve them. Also prints the device copy
bandwidth measured the same way.
"""
import os
import statistics

import torch

os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")
from fla.modules.causal_conv1d import causal_conv1d  # noqa: E402


def median_ms(fn, iters=50, warmup=5):
    for _ in range(warmup):
        fn(0)
    times = []
    for i in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    channels, width = 8192, 4
    device = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(), "torch", torch.__version__)
    for lengths in ([8192] * 4, [32768], [2048] * 4):
        tokens = sum(lengths)
        cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device=device)
        xs = [torch.randn(1, tokens, channels, dtype=torch.bfloat16, device=device) for _ in range(4)]
        w = torch.randn(channels, width, dtype=torch.bfloat16, device=device)
        # The first call builds FLA's host-side chunk tables; later calls reuse
        # the same cu_seqlens object.
        call = lambda i: causal_conv1d(xs[i % 4], w, activation="silu", cu_seqlens=cu)
        ms = median_ms(call)
        moved = 2 * tokens * channels * 2
        src = torch.empty(moved // 2, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        copy_ms = median_ms(lambda i: dst.copy_(src))
        copy_tbs = moved / (copy_ms * 1e-3) / 1e12
        tbs = moved / (ms * 1e-3) / 1e12
        print(f"FLA causal_conv1d tokens={tokens} seqs={len(lengths)}: median {ms:.4f} ms, "
              f"{tbs:.2f} TB/s = {100 * tbs / copy_tbs:.1f}% of the device copy ({copy_tbs:.2f} TB/s)")


if __name__ == "__main__":
    main()
