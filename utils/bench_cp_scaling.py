#!/usr/bin/env python3
"""Context parallelism over the GPUs of one machine: forward + backward of
the compiled Qwen3-Next-80B GDN layer (hidden 2048, 16 key and 32 value
heads of 128) under headwise CP, chunkwise CP and the mode `auto` picks,
beside the delta rule alone under FLA's KCP (`fla.ops.cp`) and FlashQLA's
CP in the same job, at each total token count given.

Every rank holds its contiguous T / P rows of the pack and the whole
cu_seqlens (one sequence of T tokens unless --sequence splits the pack).
A line per token count and implementation: the median over --iters of the
slowest rank's time per call (a barrier before each), forward + backward
and forward alone, the tokens per second that gives, and the largest peak
of memory over the ranks. The peers run the delta rule alone (q, k, v, g,
beta in, o out), not the layer: their lines compare with the anchor of
docs/performance.md (FlashQLA's 16.71 ms at 1M tokens on 8 H200, FLA KCP's
52.47 ms), ours with the whole layer's work.

Usage (P GPUs, torchrun; gdn_torch and its compiled layers as
docs/torch.md says; on a machine without the compiler, fill the cache
where it is: `python3 python/gdn_torch/compiler.py compile layer --cp-ranks P
--cp-mode MODE --cache DIR` for each mode, and carry DIR as GDN_TORCH_CACHE):

    torchrun --standalone --nproc-per-node 8 utils/bench_cp_scaling.py \\
        --tokens 131072,524288,1048576 [--modes headwise,chunkwise,auto] \\
        [--sequence N] [--iters 10] [--fla-site DIR] [--flashqla-site DIR]

FLA's backward refuses Hopper with Triton < 3.7.1 (FLA #640); it is timed
past that guard, as torch_compare.py --fla-unguarded-backward does.
A failure (memory, a missing compiled layer) stops the job with its
message: the ranks' collectives cannot go on without the failed one. The
arguments are checked first, on every rank, against torchrun's WORLD_SIZE
and before torch is imported, so a wrong one fails at once with the value
and the fix instead of after the GPUs have joined.
"""
import argparse
import datetime
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

HIDDEN, KEY_HEADS, VALUE_HEADS, HEAD_DIM = 2048, 16, 32, 128
MODES = ("headwise", "chunkwise", "auto")

# Imported by main once the arguments are checked.
torch = dist = None


def slowest_ms(step, iters, warmup=2):
    """Median over `iters` calls of the slowest rank's milliseconds for
    `step`, the ranks lined up by a barrier before each call."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        dist.barrier()
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        elapsed = torch.tensor([time.perf_counter() - start], device="cuda")
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        times.append(elapsed.item() * 1e3)
    return statistics.median(times)


def peak_gib():
    """The largest peak of allocated memory over the ranks, GiB."""
    peak = torch.tensor([torch.cuda.max_memory_allocated() / 2**30], device="cuda")
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    return peak.item()


def global_offsets(tokens, sequence):
    """cu_seqlens of one pack of `tokens`: sequences of `sequence` tokens
    (0: one sequence), int32 on this rank's GPU."""
    length = sequence or tokens
    ends = list(range(length, tokens, length)) + [tokens]
    return torch.tensor([0] + ends, dtype=torch.int32, device="cuda")


def report(tokens, name, fwd_bwd, fwd, ranks):
    if dist.get_rank() == 0:
        print(f"CP {ranks} T={tokens:8d} {name:30s} fwd+bwd {fwd_bwd:9.2f} ms  fwd {fwd:8.2f} ms  "
              f"{tokens / fwd_bwd * 1e3 / 1e6:7.2f} M tokens/s  peak {peak_gib():6.1f} GiB", flush=True)
    else:
        peak_gib()


def bench_ours(tokens, cu, mode, iters):
    """The compiled layer under CP `mode` over the world's ranks."""
    import gdn_torch
    ranks, rank = dist.get_world_size(), dist.get_rank()
    spec = gdn_torch.LayerSpec("qwen3_next", HIDDEN, KEY_HEADS, VALUE_HEADS, HEAD_DIM, HEAD_DIM, 4)
    torch.manual_seed(0)
    layer = gdn_torch.GatedDeltaNet(spec, device="cuda", cp_group=dist.group.WORLD, cp_mode=mode)
    rows = tokens // ranks
    torch.manual_seed(1 + rank)
    x = torch.randn(rows, HIDDEN, device="cuda", dtype=torch.bfloat16).requires_grad_(True)
    dy = torch.randn_like(x)
    torch.cuda.reset_peak_memory_stats()
    fwd_bwd = slowest_ms(lambda: layer(x, cu).backward(dy), iters)
    with torch.no_grad():
        fwd = slowest_ms(lambda: layer(x, cu), iters)
    report(tokens, f"ours layer, {mode}", fwd_bwd, fwd, ranks)


def core_inputs(tokens):
    """This rank's rows of the delta rule's inputs, FLA's [1, T, H, D] layout."""
    rows = tokens // dist.get_world_size()
    torch.manual_seed(2 + dist.get_rank())
    shape = (1, rows)
    q = torch.randn(*shape, KEY_HEADS, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    k = torch.nn.functional.normalize(torch.randn_like(q).float(), dim=-1).bfloat16()
    q = torch.nn.functional.normalize(q.float(), dim=-1).bfloat16()
    v = torch.randn(*shape, VALUE_HEADS, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    g = torch.nn.functional.logsigmoid(torch.randn(*shape, VALUE_HEADS, device="cuda")) / 16
    beta = torch.rand(*shape, VALUE_HEADS, device="cuda").sigmoid()
    inputs = [t.requires_grad_(True) for t in (q, k, v, g, beta)]
    return inputs, torch.randn_like(v)


def bench_core(tokens, name, run, iters):
    """A peer's delta rule: `run(q, k, v, g, beta)` returns o."""
    inputs, do = core_inputs(tokens)
    torch.cuda.reset_peak_memory_stats()
    fwd_bwd = slowest_ms(lambda: run(*inputs).backward(do), iters)
    with torch.no_grad():
        fwd = slowest_ms(lambda: run(*inputs), iters)
    report(tokens, name, fwd_bwd, fwd, dist.get_world_size())


def fla_kcp(cu):
    from fla.ops.cp import build_cp_context
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    context = build_cp_context(cu.long(), group=dist.group.WORLD)

    def run(q, k, v, g, beta):
        o, _ = chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=context.cu_seqlens,
                                      cp_context=context)
        return o
    return run


def flashqla_cp(cu):
    from flash_qla import chunk_gated_delta_rule
    from flash_qla.ops.gated_delta_rule.chunk import CHUNK_SIZE
    from flash_qla.ops.gated_delta_rule.chunk.cp import build_cp_context
    # The training regime's split, for the forward-alone line too (a
    # training step's forward and backward must split alike).
    context = build_cp_context(cu.long(), enable_inter=True, enable_intra=True,
                               group=dist.group.WORLD, num_v_heads=VALUE_HEADS,
                               chunk_size=CHUNK_SIZE, is_train=True)

    def run(q, k, v, g, beta):
        o, _ = chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=context.cu_seqlens,
                                      cp_context=context)
        return o
    return run


def parse_args(argv, environ):
    """The command line, checked against the world size torchrun gives
    (WORLD_SIZE) without torch: the token counts, modes and the sites."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", default="131072,524288,1048576",
                        help="total tokens of the pack, comma-separated")
    parser.add_argument("--sequence", type=int, default=0,
                        help="tokens a sequence (0: the pack is one sequence)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="CP modes of the layer, comma-separated: " + ", ".join(MODES))
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--fla-site", help="a folder FLA is installed in (pip --target)")
    parser.add_argument("--flashqla-site", help="a folder FlashQLA is installed in (pip --target)")
    args = parser.parse_args(argv)
    world = environ.get("WORLD_SIZE")
    if not world or not world.isdigit() or int(world) < 1:
        parser.error(f"WORLD_SIZE is {world!r}: start this under torchrun "
                     "(torchrun --standalone --nproc-per-node P utils/bench_cp_scaling.py ...)")
    ranks = int(world)
    try:
        args.token_counts = [int(t) for t in args.tokens.split(",")]
    except ValueError:
        parser.error(f"--tokens {args.tokens!r}: give token counts separated by commas, "
                     "such as 131072,524288")
    if args.sequence < 0:
        parser.error(f"--sequence {args.sequence}: give 0 (one sequence) or a positive length")
    for tokens in args.token_counts:
        if tokens < 1 or tokens % ranks or (args.sequence and tokens % args.sequence):
            parser.error(f"--tokens: {tokens} must be positive and split evenly over the "
                         f"{ranks} ranks"
                         + (f" and into sequences of {args.sequence}" if args.sequence else ""))
    args.mode_list = args.modes.split(",")
    for mode in args.mode_list:
        if mode not in MODES:
            parser.error(f"--modes: {mode!r} is not a CP mode; give some of " + ", ".join(MODES))
    if "headwise" in args.mode_list and KEY_HEADS % ranks:
        parser.error(f"--modes headwise: {KEY_HEADS} key heads do not split over {ranks} "
                     "ranks; leave headwise out or run on a divisor of them")
    if args.iters < 1:
        parser.error(f"--iters {args.iters}: time at least one call")
    for flag, site in (("--fla-site", args.fla_site), ("--flashqla-site", args.flashqla_site)):
        if site and not os.path.isdir(site):
            parser.error(f"{flag} {site}: no such folder")
    return args


def main():
    args = parse_args(sys.argv[1:], os.environ)
    global torch, dist
    import torch
    import torch.distributed as dist
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local),
                            timeout=datetime.timedelta(minutes=10))
    ranks = dist.get_world_size()
    token_counts = args.token_counts
    for site in (args.fla_site, args.flashqla_site):
        if site:
            sys.path.insert(0, site)
    if args.fla_site:
        from torch_compare import unguard_fla_backward
        unguard_fla_backward()
    if dist.get_rank() == 0:
        print(f"{ranks} ranks on {torch.cuda.get_device_name()}; one pack of T tokens, "
              + (f"sequences of {args.sequence}" if args.sequence else "one sequence")
              + f", T / {ranks} contiguous rows a rank", flush=True)
    for tokens in token_counts:
        cu = global_offsets(tokens, args.sequence)
        for mode in args.mode_list:
            bench_ours(tokens, cu, mode, args.iters)
            torch.cuda.empty_cache()
        if args.fla_site:
            bench_core(tokens, "FLA KCP, delta rule alone", fla_kcp(cu), args.iters)
            torch.cuda.empty_cache()
        if args.flashqla_site:
            bench_core(tokens, "FlashQLA CP, delta rule alone", flashqla_cp(cu), args.iters)
            torch.cuda.empty_cache()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
