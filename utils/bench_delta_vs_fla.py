#!/usr/bin/env python3
"""FLA's chunk_gated_delta_rule on the shapes delta_rule_bench times.

The baseline for the delta-rule kernels (kernels/include/gdn/device/
delta_rule.cuh, timed by test/Integration/harness/delta_rule_bench.cu): the
same shapes, lengths and input distributions (q, k L2-normalised, v ~ N(0,1),
bf16; g uniform in [-0.5, 0), beta = sigmoid(N(0,1)); fp32 initial state,
final state returned), varlen through cu_seqlens with batch 1, the plain
Triton path (FLA_DISABLE_BACKEND_DISPATCH=1, so no FlashQLA backend), no
in-kernel l2norm. Timing: warm calls with CUDA events, median of 50; then
CUDA-graph replay of one call (host tables built by the warm-up and cached
by FLA), median of 50, when capture works. Prints ms per shape and the ratio to
the floor (docs/performance.md). BENCH_SETTLE=cold (3 s idle before each shape)
or hot (2 s of the shape's own call first) puts the GPU in the same power state
before each shape, as delta_rule_bench does with the same variable:
at its 700 W limit the H200's clock drops (docs/performance.md, Method).
"""
import inspect
import os
import time

os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")

import torch  # noqa: E402
from fla.ops.gated_delta_rule import chunk_gated_delta_rule  # noqa: E402

from cuda_timing import graph_median_ms, median_ms  # noqa: E402

SHAPES = [  # name, q/k heads, v heads, lengths, floor (us)
    ("gqa16x32", 16, 32, [8192] * 4, 243),
    ("gqa16x32", 16, 32, [32768], 243),
    ("gqa16x32", 16, 32, [2048] * 4, 61),
    ("mha32", 32, 32, [8192] * 4, 251),
    ("gqa16x64", 16, 64, [8192] * 4, 486),
    # The long-chain mixes split chains serve (delta_rule_bench split).
    ("gqa16x32", 16, 32, [16384] * 2, 243),
    ("mha32", 32, 32, [32768], 251),
    ("gqa16x64", 16, 64, [32768], 486),
]
D = 128


def settle(call):
    """The GPU's state before a shape's timing (BENCH_SETTLE); its label."""
    mode = os.environ.get("BENCH_SETTLE", "")
    if mode not in ("", "cold", "hot"):
        raise SystemExit(f"bench_delta_vs_fla: BENCH_SETTLE must be cold or hot (or unset), found {mode!r}")
    if mode == "cold":
        torch.cuda.synchronize()
        time.sleep(3)
    elif mode == "hot":
        until = time.monotonic() + 2
        while time.monotonic() < until:
            for _ in range(5):
                call()
            torch.cuda.synchronize()
    return f" [{mode}]" if mode in ("cold", "hot") else ""


def inputs(h, hv, lengths, device):
    tokens = sum(lengths)
    q = torch.nn.functional.normalize(torch.randn(1, tokens, h, D, device=device), dim=-1).bfloat16()
    k = torch.nn.functional.normalize(torch.randn(1, tokens, h, D, device=device), dim=-1).bfloat16()
    v = torch.randn(1, tokens, hv, D, device=device).bfloat16()
    g = -0.5 * torch.rand(1, tokens, hv, device=device)
    beta = torch.sigmoid(torch.randn(1, tokens, hv, device=device))
    h0 = 0.5 * torch.randn(len(lengths), hv, D, D, device=device)
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    cu = torch.tensor(offsets, dtype=torch.int32, device=device)
    return q, k, v, g, beta, h0, cu, offsets


def main():
    device = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(), "torch", torch.__version__)
    params = inspect.signature(chunk_gated_delta_rule).parameters
    for name, h, hv, lengths, floor_us in SHAPES:
        q, k, v, g, beta, h0, cu, offsets = inputs(h, hv, lengths, device)
        extra = {}
        if "cu_seqlens_cpu" in params:  # avoids a device-to-host sync per call
            extra["cu_seqlens_cpu"] = torch.tensor(offsets, dtype=torch.int32)
        if "use_qk_l2norm_in_kernel" in params:
            extra["use_qk_l2norm_in_kernel"] = False

        def call():
            return chunk_gated_delta_rule(q, k, v, g, beta, scale=D ** -0.5, initial_state=h0,
                                          output_final_state=True, cu_seqlens=cu, **extra)

        state = settle(call)
        warm = median_ms(call, iters=50, warmup=5)
        graph_ms = None
        try:
            graph_ms = graph_median_ms(call, iters=50, warmup=5)
        except Exception as error:  # noqa: BLE001 (report and keep the warm number)
            print(f"  (CUDA-graph capture failed for {name}: {type(error).__name__}: {error})")
            try:  # a failed capture can leave an error pending on the device
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                pass
        lens = "+".join(f"{n}x{lengths.count(n)}" for n in dict.fromkeys(lengths))
        best = graph_ms if graph_ms is not None else warm
        graph_text = f"{graph_ms:.4f}" if graph_ms is not None else "n/a"
        print(f"FLA {name:10s} {lens:10s} warm {warm:.4f} ms  graph {graph_text} ms  "
              f"floor {floor_us} us  floor/time {100 * floor_us / (best * 1000):.1f}%{state}")


if __name__ == "__main__":
    main()
