#!/usr/bin/env python3
"""The delta-rule backward through PyTorch: gdn_torch against FlashQLA,
with every library's forward (FLA's too) in the same call.

Times the backward of `chunk_gated_delta_rule` (gdn_torch's compiled
kernels; FlashQLA's `flash_qla.chunk_gated_delta_rule`, its Hopper kernels)
on the shapes of docs/performance.md ("Delta-rule backward"): gqa16x32,
K = V = 128, bf16 q, k, v (q and k L2-normalised), fp32 g in [-0.5, 0) and
beta = sigmoid(N(0, 1)), varlen through cu_seqlens with batch 1, no states.
Each row: one forward with gradients, then `torch.autograd.grad` of o with
a fixed cotangent, eager, CUDA events, 3 warm-ups, median of N; both
libraries in the same process, one row after the other. Also checks that
the two libraries' dq, dk, dv, dg, dbeta agree (relative RMS), so that a
timing never stands for a wrong gradient. Then the forward alone (no
autograd) of each library, and of FLA's `chunk_gated_delta_rule` when
--fla-site names a folder with FLA installed (its backward is refused on
Hopper with Triton < 3.7.1, FLA #640, and not timed here).

With --qk-l2norm, q and k are not normalised beforehand and every library
normalises them itself (use_qk_l2norm_in_kernel=True, as Qwen3-Next's
module calls it); gdn_torch also runs with q and k normalised by PyTorch
(FLA's formula) before the call, which is what it did before it compiled
the norms into its program, and with the program that normalises q and k
again in its backward instead of keeping them (DeltaRuleSpec(save="inputs"),
through gdn_torch.apply). Gradients are compared with the first library's.

Usage (on the GPU machine; gdn_torch's tools on GDN_OPT etc. as
docs/torch.md says, flash_qla and its dependencies on PYTHONPATH):
    python3 utils/bench_backward_vs_flashqla.py [--iters 20] [--only gdn] [--fla-site DIR]
        [--qk-l2norm]
"""
import argparse
import functools
import os
import sys

import torch

from cuda_timing import median_ms

SHAPES = [  # name, lengths
    ("32768 in 8", [1000, 7000, 3000, 5000, 2768, 6000, 4000, 4000]),
    ("16384x2", [16384] * 2),
    ("1x32768", [32768]),
    ("8192x4", [8192] * 4),
    ("1024x8", [1024] * 8),
    ("2048x4", [2048] * 4),
]
H, HV, D = 16, 32, 128


# Set by --qk-l2norm: q and k come unnormalised, each rule normalises them.
RAW_QK = False


def inputs(lengths, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    T = sum(lengths)
    def normal(*shape):
        return torch.randn(*shape, generator=gen, device="cuda")
    def normalise(x):
        return x if RAW_QK else torch.nn.functional.normalize(x, dim=-1)
    q = normalise(normal(1, T, H, D)).bfloat16()
    k = normalise(normal(1, T, H, D)).bfloat16()
    v = normal(1, T, HV, D).bfloat16()
    g = -0.5 * torch.rand(1, T, HV, generator=gen, device="cuda")
    beta = torch.sigmoid(normal(1, T, HV))
    do = normal(1, T, HV, D).bfloat16()
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), device="cuda")
    return q, k, v, g, beta, do, cu


def backward_ms(rule, lengths, iters, cu_dtype):
    q, k, v, g, beta, do, cu = inputs(lengths)
    leaves = [t.requires_grad_() for t in (q, k, v, g, beta)]
    o, _ = rule(*leaves, cu_seqlens=cu.to(cu_dtype))
    grads = torch.autograd.grad(o, leaves, do, retain_graph=True)
    ms = median_ms(lambda: torch.autograd.grad(o, leaves, do, retain_graph=True), iters=iters)
    return ms, grads


def forward_ms(rule, lengths, iters, cu_dtype, host_offsets=False):
    """The forward alone; `host_offsets`: FLA's, which also takes the
    offsets on the host (cu_seqlens_cpu, so that it reads no device value)."""
    q, k, v, g, beta, _, cu = inputs(lengths)
    cu = cu.to(cu_dtype)
    extra = {"cu_seqlens_cpu": cu.cpu()} if host_offsets else {}
    with torch.no_grad():
        return median_ms(lambda: rule(q, k, v, g, beta, cu_seqlens=cu, **extra), iters=iters)


def l2norm_in_pytorch(rule):
    """`rule` given q and k L2-normalised by PyTorch first (FLA's formula:
    fp32, eps 1e-6 inside the root, back to the input's dtype)."""
    def normalise(x):
        xf = x.float()
        return (xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) + 1e-6)).to(x.dtype)
    def call(q, k, *rest, **options):
        return rule(normalise(q), normalise(k), *rest, **options)
    return call


def norms_recomputed(gdn_torch):
    """chunk_gated_delta_rule(use_qk_l2norm_in_kernel=True) on the program
    that normalises q and k again in its backward (DeltaRuleSpec(save=
    "inputs")) instead of keeping them from the forward; no states."""
    def call(q, k, v, g, beta, cu_seqlens):
        B, T, H, K = q.shape
        HV, V = v.shape[2], v.shape[3]
        spec = gdn_torch.DeltaRuleSpec(H, HV, K, V, initial_state=False, final_state=False,
                                       qk_l2norm=True, save="inputs")
        o = gdn_torch.apply(gdn_torch.program(spec, q.device),
                            [q.reshape(B * T, H, K), k.reshape(B * T, H, K),
                             v.reshape(B * T, HV, V), g.reshape(B * T, HV),
                             beta.reshape(B * T, HV), cu_seqlens])
        return o.reshape(B, T, HV, V), None
    return call


def relative_rms(a, b):
    a, b = a.double(), b.double()
    return float(((a - b).norm() / b.norm().clamp_min(1e-30)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--only", choices=["gdn", "flashqla"])
    parser.add_argument("--fla-site", help="folder with FLA installed: time its forward too")
    parser.add_argument("--qk-l2norm", action="store_true",
                        help="unnormalised q and k, each library normalising them "
                             "(use_qk_l2norm_in_kernel=True); gdn_torch also with PyTorch's norms")
    args = parser.parse_args()
    global RAW_QK
    RAW_QK = args.qk_l2norm
    def rule(f):
        return functools.partial(f, use_qk_l2norm_in_kernel=True) if RAW_QK else f
    rules = {}
    if args.only != "flashqla":
        import gdn_torch
        rules["gdn_torch"] = (rule(gdn_torch.chunk_gated_delta_rule), torch.int32)
        if RAW_QK:
            rules["gdn_torch, PyTorch norms"] = (
                l2norm_in_pytorch(gdn_torch.chunk_gated_delta_rule), torch.int32)
            rules["gdn_torch, norms recomputed"] = (norms_recomputed(gdn_torch), torch.int32)
    if args.only != "gdn":
        import flash_qla
        rules["FlashQLA"] = (rule(flash_qla.chunk_gated_delta_rule), torch.int64)
    fla = {}
    if args.fla_site:
        sys.path.insert(0, args.fla_site)
        os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_chunk
        fla["FLA"] = (rule(fla_chunk), torch.int64)
    print(f"device: {torch.cuda.get_device_name()}")
    for name, lengths in SHAPES:
        results = {lib: backward_ms(rule, lengths, args.iters, dtype)
                   for lib, (rule, dtype) in rules.items()}
        line = f"BACKWARD {name:<11}" + "".join(
            f"  {lib} {ms:7.3f} ms" for lib, (ms, _) in results.items())
        (first, (first_ms, first_grads)), *others = results.items()
        for lib, (ms, grads) in others:
            agree = max(relative_rms(a, b) for a, b in zip(grads, first_grads))
            line += (f"  {first} / {lib} {first_ms / ms:.2f}x, gradients differ by "
                     f"{agree:.1e}")
        print(line, flush=True)
        forwards = {lib: forward_ms(rule, lengths, args.iters, dtype)
                    for lib, (rule, dtype) in rules.items()}
        forwards.update({lib: forward_ms(rule, lengths, args.iters, dtype, host_offsets=True)
                         for lib, (rule, dtype) in fla.items()})
        print(f"FORWARD  {name:<11}" + "".join(
            f"  {lib} {ms:7.3f} ms" for lib, ms in forwards.items()), flush=True)


if __name__ == "__main__":
    main()
