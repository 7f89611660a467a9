#!/usr/bin/env python3
"""Where the time of one training step goes, kernel by kernel.

Runs torch.profiler (CUPTI: every kernel on the GPU, whoever launched it)
around N steps of one of:

  layer   the compiled Qwen3-Next-80B GDN layer (hidden 2048, 16 key and 32
          value heads, K = V = 128), forward and backward, at 8192x4 tokens;
  core    gdn_torch.chunk_gated_delta_rule at the same heads and tokens,
          forward and backward (autograd), or the backward alone (--bwd);

and prints each kernel's device time per step (summed over its launches),
its share, and the step's total device time beside the step's wall time
(CUDA events), so that gaps between kernels show as their difference.

Usage (on the GPU machine, gdn_torch's tools on GDN_OPT etc. as docs/torch.md
says):
    python3 utils/profile_kernels.py layer|core [--bwd] [--steps 5] [--lengths 8192x4]
        [--save inputs|operands]

--save picks what the layer's forward keeps for its backward (LayerSpec.save).
--gaps also lists where the GPU idles inside the steps: the largest gaps
between kernels with the kernels around them, the gaps by size, and the
host's CUDA runtime calls per step (what the host spends its time on while
the GPU waits). --graph also times the step captured in a CUDA graph and
replayed, the step with no host in the way (docs/torch.md: a warm-up on a
side stream first).
"""
import argparse
import collections

import torch
from torch.profiler import ProfilerActivity, profile

from cuda_timing import graph_median_ms, median_ms


def parse_lengths(text):
    if "x" in text:
        length, count = text.split("x")
        return [int(length)] * int(count)
    return [int(n) for n in text.split(",")]


def layer_step(gdn_torch, lengths, save):
    spec = gdn_torch.LayerSpec("qwen3_next", 2048, 16, 32, 128, 128, 4, save=save)
    torch.manual_seed(3)
    layer = gdn_torch.GatedDeltaNet(spec, device="cuda")
    T = sum(lengths)
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), device="cuda", dtype=torch.int32)
    x = torch.randn(T, spec.hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(T, spec.hidden, device="cuda", dtype=torch.bfloat16)
    return lambda: layer(x, cu).backward(dy)


def core_step(gdn_torch, lengths, backward_only):
    H, HV, D = 16, 32, 128
    T = sum(lengths)
    gen = torch.Generator(device="cuda").manual_seed(0)
    normal = lambda *shape: torch.randn(*shape, generator=gen, device="cuda")  # noqa: E731
    q = torch.nn.functional.normalize(normal(1, T, H, D), dim=-1).bfloat16().requires_grad_()
    k = torch.nn.functional.normalize(normal(1, T, H, D), dim=-1).bfloat16().requires_grad_()
    v = normal(1, T, HV, D).bfloat16().requires_grad_()
    g = (-0.5 * torch.rand(1, T, HV, generator=gen, device="cuda")).requires_grad_()
    beta = torch.sigmoid(normal(1, T, HV)).requires_grad_()
    do = normal(1, T, HV, D).bfloat16()
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), device="cuda", dtype=torch.int32)
    leaves = [q, k, v, g, beta]
    if backward_only:
        o, _ = gdn_torch.chunk_gated_delta_rule(*leaves, cu_seqlens=cu)
        return lambda: torch.autograd.grad(o, leaves, do, retain_graph=True)
    return lambda: torch.autograd.grad(
        gdn_torch.chunk_gated_delta_rule(*leaves, cu_seqlens=cu)[0], leaves, do)


def print_gaps(prof, steps):
    """The idle time between the kernels of `prof` (CUDA and CPU events)."""
    kernels = sorted((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                     if e.device_type == torch.autograd.DeviceType.CUDA)
    gaps = []
    busy_end, previous = kernels[0][1], kernels[0][2]
    for start, end, name in kernels[1:]:
        if start > busy_end:
            gaps.append((start - busy_end, previous, name))
        busy_end = max(busy_end, end)
        previous = name
    idle = sum(g for g, _, _ in gaps)
    print(f"idle between kernels: {idle / steps / 1e3:.3f} ms per step in {len(gaps) / steps:.0f} gaps "
          f"(the {steps - 1} waits between steps included)")
    sizes = collections.Counter()
    for g, _, _ in gaps:
        sizes["< 5 us" if g < 5 else "< 20 us" if g < 20 else "< 100 us" if g < 100 else ">= 100 us"] += g
    print("  by size (ms per step): " + ", ".join(
        f"{k} {v / steps / 1e3:.3f}" for k, v in sorted(sizes.items())))
    for g, before, after in sorted(gaps, reverse=True)[:15]:
        print(f"  {g:8.1f} us after {before[:60]}  before {after[:60]}")
    runtime = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CPU and e.name.startswith("cu"):
            runtime[e.name][0] += 1
            runtime[e.name][1] += e.cpu_time_total
    print("host CUDA runtime calls per step:")
    for name, (calls, us) in sorted(runtime.items(), key=lambda item: -item[1][1])[:12]:
        print(f"  {us / steps / 1e3:8.3f} ms {calls / steps:6.1f} calls  {name}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["layer", "core"])
    parser.add_argument("--bwd", action="store_true", help="core: the backward alone")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--lengths", default="8192x4")
    parser.add_argument("--save", default="inputs", choices=["inputs", "operands"],
                        help="layer: what the forward keeps for the backward")
    parser.add_argument("--gaps", action="store_true",
                        help="also list where the GPU idles between kernels, and the host's calls")
    parser.add_argument("--graph", action="store_true",
                        help="also time the step replayed as a CUDA graph")
    args = parser.parse_args()
    import gdn_torch
    lengths = parse_lengths(args.lengths)
    step = (layer_step(gdn_torch, lengths, args.save) if args.what == "layer"
            else core_step(gdn_torch, lengths, args.bwd))
    wall = median_ms(step, iters=10)
    torch.cuda.synchronize()
    activities = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if args.gaps else [])
    with profile(activities=activities) as prof:
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
    per_kernel = collections.defaultdict(lambda: [0.0, 0])
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            entry = per_kernel[event.name]
            entry[0] += event.device_time_total / 1000.0 / args.steps  # us -> ms per step
            entry[1] += 1
    total = sum(ms for ms, _ in per_kernel.values())
    print(f"{args.what}{' backward' if args.bwd else ''} at {args.lengths} on "
          f"{torch.cuda.get_device_name()}: step {wall:.3f} ms (CUDA events, median of 10), "
          f"kernels {total:.3f} ms per step")
    print(f"{'ms/step':>8} {'share':>6} {'calls':>5}  kernel")
    for name, (ms, calls) in sorted(per_kernel.items(), key=lambda item: -item[1][0]):
        print(f"{ms:8.3f} {100 * ms / total:5.1f}% {calls // args.steps:5d}  {name[:110]}")
    if args.gaps:
        print_gaps(prof, args.steps)
    if args.graph:
        print(f"replayed as a CUDA graph: {graph_median_ms(step, iters=10):.3f} ms per step (eager {wall:.3f} ms)")


if __name__ == "__main__":
    main()
