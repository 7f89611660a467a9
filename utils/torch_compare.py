#!/usr/bin/env python3
#===- torch_compare.py - the PyTorch extension against transformers and FLA =#
#
# Runs on the GPU machine (docs/torch.md, "Checking it"):
#
#  1. gdn_torch.GatedDeltaNet (the compiled layer) against transformers'
#     Qwen3NextGatedDeltaNet and Qwen3_5GatedDeltaNet (their PyTorch reference
#     path, in float64, each packed sequence run alone) with the same weights,
#     on a mixed-length pack (lengths 1 and 65 among them): the output and,
#     where the layer's backward is compiled, the gradients of x and of every
#     weight, as relative RMS errors against docs/spec.md's bf16 tolerances;
#     packed == each sequence alone bit for bit; transformers' own bf16 path
#     against the same float64 reference, for scale.
#  2. A training step (forward, backward, AdamW step) of the compiled layer.
#  3. gdn_torch.chunk_gated_delta_rule (FLA's signature) against a float64
#     recurrence (o, final state, all gradients) and FLA's own forward.
#  4. Timing, CUDA events, median: the delta rule (ours vs FLA) and the whole
#     Qwen3-Next layer (ours vs PyTorch + FLA: nn.Linear, FLA's varlen
#     causal_conv1d, chunk_gated_delta_rule and FusedRMSNormGated).
#
# The layers are compiled as gdn_torch compiles them by default, with f32
# projection outputs (docs/precision.md); --bf16-projections repeats 1 and 2
# (and the layer's timing) for layers that store them in bf16, whose output
# is over 5e-3 by design, as transformers' own bf16 path is (reported, not
# held to the bound; their gradients are).
# Without the layer's backward compiled it runs everything else and says so.
# transformers' modeling modules are imported before FLA is put on sys.path,
# so that they take their PyTorch path (they pick FLA when it imports).
#
#   python3 utils/torch_compare.py --fla-site DIR [--json OUT.json] [--skip-timing]
#
#===------------------------------------------------------------------------===#

import argparse
import dataclasses
import json
import math
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

from cuda_timing import median_ms

ROWS = []
SAVED = {}      # this run's results, for --save-reference
REFERENCE = {}  # an interpreter run's results (--reference), same inputs
FLA_UNGUARDED = False  # --fla-unguarded-backward


def unguard_fla_backward():
    """Lets FLA's backward run on Hopper with Triton < 3.7.1, which it refuses
    because that Triton miscompiles its gated chunk_bwd_dqkwg (FLA #640): for
    timing it. Its gradients are only reported against ours, as context."""
    global FLA_UNGUARDED
    import fla.ops.common.chunk_o as fla_chunk_o
    fla_chunk_o.TRITON_ABOVE_3_7_1 = True
    FLA_UNGUARDED = True
BOUND_OUT, BOUND_GRAD, BOUND_GATE = 5e-3, 8e-3, 2e-2


def rel_rms(ours, ref):
    ours, ref = ours.detach().double(), ref.detach().double()
    return ((ours - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def record(section, what, value, bound=None, note=""):
    finite = not (isinstance(value, float) and not math.isfinite(value))
    ok = None if bound is None else (finite and value <= bound)
    ROWS.append({"section": section, "what": what, "value": value, "bound": bound, "ok": ok,
                 "note": note})
    mark = "" if ok is None else ("ok" if ok else "FAIL")
    val = f"{value:.3e}" if isinstance(value, float) else str(value)
    print(f"  {section:10s} {what:42s} {val:>12s} {'' if bound is None else f'<= {bound:.0e}':>9s} "
          f"{mark} {note}", flush=True)


def cu_of(lengths, device):
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    return torch.tensor(cu, dtype=torch.int32, device=device)


# ----------------------------------------------------------------------------
# 1-2. The layer against transformers
# ----------------------------------------------------------------------------


def hf_module(kind, spec):
    common = dict(hidden_size=spec.hidden, num_hidden_layers=1, layer_types=["linear_attention"],
                  linear_num_key_heads=spec.key_heads, linear_num_value_heads=spec.value_heads,
                  linear_key_head_dim=spec.head_dim_k, linear_value_head_dim=spec.head_dim_v,
                  linear_conv_kernel_dim=spec.conv_width, rms_norm_eps=spec.norm_eps,
                  num_attention_heads=2, num_key_value_heads=1, head_dim=128)
    if kind == "qwen3_next":
        from transformers.models.qwen3_next.configuration_qwen3_next import Qwen3NextConfig
        from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet
        return Qwen3NextGatedDeltaNet(Qwen3NextConfig(**common), layer_idx=0)
    from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5GatedDeltaNet
    return Qwen3_5GatedDeltaNet(Qwen3_5TextConfig(**common), layer_idx=0)


def compare_layer(kind, lengths, device, gdn_torch, bf16p=False):
    section = kind + ("-bf16p" if bf16p else "")
    spec = gdn_torch.LayerSpec(kind, 256, 2, 4, 128, 128, 4, f32_projections=not bf16p)
    # bf16 projection outputs put y over 5e-3 (docs/precision.md): reported.
    bound_y = None if bf16p else BOUND_OUT
    torch.manual_seed(1234)
    hf = hf_module(kind, spec)
    with torch.no_grad():
        # Round every weight to what the compiled layer stores (bf16; A_log
        # and dt_bias fp32), and give the norm and dt_bias non-trivial values.
        hf.norm.weight.copy_(1 + 0.1 * torch.randn_like(hf.norm.weight))
        hf.dt_bias.copy_(0.5 * torch.randn_like(hf.dt_bias))
        for name, p in hf.named_parameters():
            if name not in ("A_log", "dt_bias"):
                p.copy_(p.to(torch.bfloat16).float())
    ref = hf_module(kind, spec).double().to(device)
    ref.load_state_dict({k: v.double() for k, v in hf.state_dict().items()})
    ours = gdn_torch.GatedDeltaNet(spec, device=device)
    ours.load_state_dict(hf.state_dict())
    prog = ours.program
    print(f"[{section}] @{prog.name}: backward compiled: {prog.has_backward}", flush=True)

    T, D = sum(lengths), spec.hidden
    cu = cu_of(lengths, device)
    # Drawn on the CPU, so that a CPU run (the interpreter) sees the same.
    gen = torch.Generator().manual_seed(4321)
    x = torch.randn(T, D, generator=gen).to(torch.bfloat16).to(device)
    dy = torch.randn(T, D, generator=gen).to(torch.bfloat16).to(device)
    # The exact program (a CPU run's --save-reference) of this very layer.
    exact = REFERENCE.get(spec.name, {})
    mine = SAVED.setdefault(spec.name, {})

    # The reference: transformers' PyTorch path in float64, each sequence alone.
    x64 = x.double().requires_grad_(True)
    pieces = []
    for i, n in enumerate(lengths):
        if n == 0:
            continue
        s = int(sum(lengths[:i]))
        y_i = ref(x64[s:s + n][None])[0]
        (y_i * dy[s:s + n].double()).sum().backward()
        pieces.append(y_i.detach())
    y_ref = torch.cat(pieces)

    # transformers' own bf16 path against the same reference, for scale.
    hf_bf16 = hf_module(kind, spec).to(device=device, dtype=torch.bfloat16)
    hf_bf16.load_state_dict(hf.state_dict())
    hf_bf16.A_log = torch.nn.Parameter(hf.A_log.detach().to(device))
    hf_bf16.dt_bias = torch.nn.Parameter(hf.dt_bias.detach().to(device))
    with torch.no_grad():
        y_hf = torch.cat([hf_bf16(x[s:s + n][None])[0] for s, n in
                          zip(cu.tolist()[:-1], lengths) if n])
    record(section, "transformers bf16 y vs its float64", rel_rms(y_hf, y_ref), None, "context")

    with torch.no_grad():
        y_nograd = ours(x, cu)
    record(section, "y (forward, @f)", rel_rms(y_nograd, y_ref), bound_y,
           "bf16 projection outputs: over 5e-3 by design" if bf16p else "")
    mine["y"] = y_nograd.detach().cpu().clone()
    if "y" in exact:
        record(section, "y vs the exact program (gdn-run)", rel_rms(y_nograd, exact["y"].to(device)),
               None, "kernels' own error")
    record(section, "y finite", float(torch.isfinite(y_nograd).all().item()), None)
    # Packed == each sequence alone, bit for bit.
    with torch.no_grad():
        same = True
        for s, n in zip(cu.tolist()[:-1], lengths):
            if n == 0:
                continue
            alone = ours(x[s:s + n], cu_of([n], device))
            same &= torch.equal(alone.view(torch.int16), y_nograd[s:s + n].view(torch.int16))
    record(section, "packed == alone (bits)", str(bool(same)), None)

    if not prog.has_backward:
        record(section, "gradients", "skipped", None,
               "@f_backward has no CUDA entry point in this build")
        return
    xg = x.clone().requires_grad_(True)
    y = ours(xg, cu)
    record(section, "y (training forward, @f_forward)", rel_rms(y, y_ref), bound_y)
    y.backward(dy)
    record(section, "dx", rel_rms(xg.grad, x64.grad), BOUND_GRAD)
    mine["dx"] = xg.grad.cpu().clone()
    if "dx" in exact:
        record(section, "dx vs the exact program", rel_rms(xg.grad, exact["dx"].to(device)), None,
               "kernels' own error")
    ref_params = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        bound = BOUND_GATE if name in ("A_log", "dt_bias") else BOUND_GRAD
        g = p.grad
        finite = bool(torch.isfinite(g).all()) if g is not None else False
        record(section, f"d{name}", rel_rms(g, ref_params[name].grad) if g is not None else float("nan"),
               bound, "" if finite else "NOT FINITE")
        mine["d" + name] = g.cpu().clone()  # the rerun below accumulates into p.grad
        if "d" + name in exact:
            record(section, f"d{name} vs the exact program", rel_rms(g, exact["d" + name].to(device)),
                   None, "kernels' own error")
    # Deterministic: the same inputs give the same gradient bits.
    xg2 = x.clone().requires_grad_(True)
    ours(xg2, cu).backward(dy)
    record(section, "dx run-to-run identical", str(torch.equal(xg.grad, xg2.grad)), None)


def training_step(device, gdn_torch, bf16p=False):
    section = "train" + ("-bf16p" if bf16p else "")
    spec = gdn_torch.LayerSpec("qwen3_next", 256, 2, 4, 128, 128, 4, f32_projections=not bf16p)
    torch.manual_seed(7)
    # fp32 master weights, cast to bf16 inside autograd (mixed precision).
    layer = gdn_torch.GatedDeltaNet(spec, device=device, dtype=torch.float32)
    if not layer.program.has_backward:
        record(section, "training step", "skipped", None, "@f_backward not compiled")
        return
    opt = torch.optim.AdamW(layer.parameters(), lr=1e-3)
    lengths = [1, 65, 64, 200, 63, 7]
    cu = cu_of(lengths, device)
    x = torch.randn(sum(lengths), spec.hidden, device=device, dtype=torch.bfloat16)
    target = torch.randn_like(x)
    before = [p.detach().clone() for p in layer.parameters()]
    losses = []
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        y = layer(x, cu)
        loss = F.mse_loss(y.float(), target.float())
        loss.backward()
        finite = all(torch.isfinite(p.grad).all().item() for p in layer.parameters())
        opt.step()
        losses.append(loss.item())
    moved = all(not torch.equal(a, p) for a, p in zip(before, layer.parameters()))
    record(section, "grads finite (every parameter)", str(finite), None)
    record(section, "every parameter updated", str(moved), None)
    record(section, "loss over 3 AdamW steps", " ".join(f"{l:.5f}" for l in losses), None)


# ----------------------------------------------------------------------------
# 3. FLA's signature against a float64 recurrence and FLA
# ----------------------------------------------------------------------------


def reference_delta_rule(q, k, v, g, beta, scale, h0, lengths):
    """docs/spec.md's recurrence, float64, autograd-able. q, k [T, H, K]."""
    H, HV = q.shape[1], v.shape[1]
    rep = HV // H
    outs, finals, s = [], [], 0
    for i, n in enumerate(lengths):
        S = h0[i]
        for t in range(s, s + n):
            qt, kt = q[t].repeat_interleave(rep, 0), k[t].repeat_interleave(rep, 0)
            S = S * g[t].exp()[:, None, None]
            d = beta[t][:, None] * (v[t] - torch.einsum("hkv,hk->hv", S, kt))
            S = S + kt[:, :, None] * d[:, None, :]
            outs.append(scale * torch.einsum("hkv,hk->hv", S, qt))
        finals.append(S)
        s += n
    return torch.stack(outs), torch.stack(finals)


def fla_inputs(lengths, H, HV, K, V, device, seed, on_device=False):
    gen = torch.Generator(device=device if on_device else "cpu").manual_seed(seed)
    T = sum(lengths)
    r = lambda *shape: torch.randn(*shape, device=device if on_device else "cpu",  # noqa: E731
                                   generator=gen).to(device)
    q = F.normalize(r(1, T, H, K), dim=-1).to(torch.bfloat16)
    k = F.normalize(r(1, T, H, K), dim=-1).to(torch.bfloat16)
    v = r(1, T, HV, V).to(torch.bfloat16)
    g = F.logsigmoid(r(1, T, HV) + 2.0)
    beta = torch.sigmoid(r(1, T, HV))
    h0 = 0.1 * r(len(lengths), HV, K, V)
    return q, k, v, g, beta, h0


def compare_fla_signature(device, gdn_torch, fla_chunk):
    section = "fla-sig"
    lengths = [1, 65, 64, 63, 130, 7, 200, 1]
    H, HV, K, V = 2, 4, 128, 128
    q, k, v, g, beta, h0 = fla_inputs(lengths, H, HV, K, V, device, seed=5)
    cu = cu_of(lengths, device).long()
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v, g, beta, h0)]
    o, ht = gdn_torch.chunk_gated_delta_rule(*leaves[:5], initial_state=leaves[5],
                                             output_final_state=True, cu_seqlens=cu)
    gen = torch.Generator().manual_seed(9)
    do = torch.randn(o.shape, generator=gen).to(torch.bfloat16).to(device)
    dht = torch.randn(ht.shape, generator=gen).to(device)
    ref_leaves = [t.detach()[0].double().requires_grad_(True) for t in (q, k, v, g, beta)]
    ref_leaves.append(h0.detach().double().requires_grad_(True))
    o_ref, ht_ref = reference_delta_rule(*ref_leaves[:5], K ** -0.5, ref_leaves[5], lengths)
    record(section, "o vs float64 recurrence", rel_rms(o[0], o_ref), BOUND_OUT)
    record(section, "final state vs float64", rel_rms(ht, ht_ref), BOUND_OUT)
    prog = gdn_torch.program(gdn_torch.DeltaRuleSpec(H, HV, K, V), device)
    if prog.has_backward:
        ((o.float() * do.float()).sum() + (ht * dht).sum()).backward()
        ((o_ref * do[0].double()).sum() + (ht_ref * dht.double()).sum()).backward()
        for name, ours_leaf, ref_leaf, bound in zip(
                ("dq", "dk", "dv", "dg", "dbeta", "dh0"), leaves, ref_leaves,
                (BOUND_GRAD, BOUND_GRAD, BOUND_GRAD, BOUND_GATE, BOUND_GATE, BOUND_GRAD)):
            grad = ours_leaf.grad if name == "dh0" else ours_leaf.grad[0]
            record(section, f"{name} vs float64", rel_rms(grad, ref_leaf.grad), bound)
    # FLA's own forward on the same inputs.
    if fla_chunk is None:
        record(section, "FLA", "not importable", None)
        return
    with torch.no_grad():
        o_fla, ht_fla = fla_chunk(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                  cu_seqlens=cu)
        record(section, "FLA o vs float64", rel_rms(o_fla[0], o_ref), None, "context")
        record(section, "FLA final state vs float64", rel_rms(ht_fla, ht_ref), None, "context")
        record(section, "ours o vs FLA o", rel_rms(o[0], o_fla[0]), None, "context")
        # use_qk_l2norm_in_kernel, as Qwen's modules call it.
        qr, kr = (torch.randn_like(t) for t in (q, k))
        o1, _ = gdn_torch.chunk_gated_delta_rule(qr, kr, v, g, beta, use_qk_l2norm_in_kernel=True,
                                                 cu_seqlens=cu)
        o2, _ = fla_chunk(qr, kr, v, g, beta, use_qk_l2norm_in_kernel=True, cu_seqlens=cu)
        record(section, "l2norm-in-kernel: ours vs FLA", rel_rms(o1, o2), None, "context")
    # FLA's backward on Hopper with this Triton (unguarded: its gradients,
    # against ours for the same cotangent, show whether the miscompile the
    # guard is about shows on these inputs).
    try:
        fl = [t.clone().requires_grad_(True) for t in (q, k, v, g, beta)]
        o_f, _ = fla_chunk(*fl, initial_state=h0, cu_seqlens=cu)
        o_f.backward(do)
        record(section, "FLA backward" + (" (guard bypassed)" if FLA_UNGUARDED else ""), "ran", None)
    except Exception as e:  # noqa: BLE001 - reported, not handled
        record(section, "FLA backward", "refused", None, str(e).splitlines()[0][:150])
        return
    if FLA_UNGUARDED and prog.has_backward:
        # Ours with the same cotangent (o's only) for the comparison.
        ours = [t.clone().requires_grad_(True) for t in (q, k, v, g, beta)]
        o_o, _ = gdn_torch.chunk_gated_delta_rule(*ours, initial_state=h0, cu_seqlens=cu)
        o_o.backward(do)
        for name, theirs, mine in zip(("dq", "dk", "dv", "dg", "dbeta"), fl, ours):
            record(section, f"FLA unguarded {name} vs ours", rel_rms(theirs.grad[0], mine.grad[0]),
                   None, "context: FLA #640, Triton < 3.7.1 on Hopper")


# ----------------------------------------------------------------------------
# 4. Timing
# ----------------------------------------------------------------------------


def random_lengths(total, n, seed):
    gen = torch.Generator().manual_seed(seed)
    cuts = sorted(torch.randperm(total - 1, generator=gen)[:n - 1].add(1).tolist())
    return [b - a for a, b in zip([0] + cuts, cuts + [total])]


def time_delta_rule(device, gdn_torch, fla_chunk):
    section = "time-core"
    H, HV, K, V = 16, 32, 128, 128
    for lengths in ([8192] * 4, random_lengths(32768, 8, 3)):
        label = "8192x4" if len(lengths) == 4 else "32K/8 seqs"
        q, k, v, g, beta, _ = fla_inputs(lengths, H, HV, K, V, device, seed=11, on_device=True)
        cu32, cu64 = cu_of(lengths, device), cu_of(lengths, device).long()
        with torch.no_grad():
            ours_ms = median_ms(lambda: gdn_torch.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu32))
        record(section, f"ours fwd {label} (ms)", ours_ms, None)
        prog = gdn_torch.program(gdn_torch.DeltaRuleSpec(H, HV, K, V))
        if prog.has_backward:
            leaves = [t.clone().requires_grad_(True) for t in (q, k, v, g, beta)]
            do = torch.randn_like(v)

            def step():
                o, _ = gdn_torch.chunk_gated_delta_rule(*leaves, cu_seqlens=cu32)
                o.backward(do)
            record(section, f"ours fwd+bwd {label} (ms)", median_ms(step, iters=10), None)
        if fla_chunk is not None:
            with torch.no_grad():
                fla_ms = median_ms(lambda: fla_chunk(q, k, v, g, beta, cu_seqlens=cu64,
                                                     cu_seqlens_cpu=cu64.cpu()))
            record(section, f"FLA fwd {label} (ms)", fla_ms, None, f"ours {fla_ms / ours_ms:.2f}x faster")
            if FLA_UNGUARDED and prog.has_backward:
                fl = [t.clone().requires_grad_(True) for t in (q, k, v, g, beta)]

                def fla_step():
                    o, _ = fla_chunk(*fl, cu_seqlens=cu64, cu_seqlens_cpu=cu64.cpu())
                    o.backward(do)
                record(section, f"FLA fwd+bwd {label}, guard bypassed (ms)", median_ms(fla_step, iters=10),
                       None, "time only: its gradients may be wrong on this Triton (FLA #640)")


class TorchFlaQwen3Next(torch.nn.Module):
    """The Qwen3-Next layer as PyTorch + FLA compose it: nn.Linear
    projections, transformers' qkvz/ba reordering, FLA's varlen causal_conv1d
    (SiLU), the gates in PyTorch, FLA's chunk_gated_delta_rule (L2 norm in
    kernel), FLA's FusedRMSNormGated, out_proj. Weights from a GatedDeltaNet."""

    def __init__(self, layer, fla):
        super().__init__()
        self.spec, self.layer, self.fla = layer.spec, layer, fla
        from fla.modules import FusedRMSNormGated
        self.norm = FusedRMSNormGated(layer.spec.head_dim_v, eps=layer.spec.norm_eps,
                                      activation="silu", device=layer.A_log.device,
                                      dtype=torch.bfloat16)
        self.norm.weight = layer.norm.weight

    def forward(self, x, cu64, cu_cpu):
        s, L = self.spec, self.layer
        h, hv, dk, dv = s.key_heads, s.value_heads, s.head_dim_k, s.head_dim_v
        T = x.shape[0]
        qkvz = F.linear(x, L.in_proj_qkvz.weight).view(T, h, 2 * dk + 2 * hv // h * dv)
        ba = F.linear(x, L.in_proj_ba.weight).view(T, h, 2 * hv // h)
        q, k, v, z = torch.split(qkvz, [dk, dk, hv // h * dv, hv // h * dv], dim=-1)
        b, a = torch.split(ba, [hv // h, hv // h], dim=-1)
        mixed = torch.cat([q.reshape(T, -1), k.reshape(T, -1), v.reshape(T, -1)], dim=-1)
        mixed, _ = self.fla["conv"](mixed[None], L.conv1d.weight.view(-1, s.conv_width),
                                    activation="silu", cu_seqlens=cu64, cu_seqlens_cpu=cu_cpu)
        q, k, v = torch.split(mixed[0], [h * dk, h * dk, hv * dv], dim=-1)
        g = -L.A_log.float().exp() * F.softplus(a.reshape(T, hv).float() + L.dt_bias)
        beta = b.reshape(T, hv).sigmoid()
        o, _ = self.fla["chunk"](q.reshape(1, T, h, dk), k.reshape(1, T, h, dk),
                                 v.reshape(1, T, hv, dv), g[None], beta[None],
                                 use_qk_l2norm_in_kernel=True, cu_seqlens=cu64,
                                 cu_seqlens_cpu=cu_cpu)
        o = self.norm(o.reshape(T, hv, dv), z.reshape(T, hv, dv))
        return F.linear(o.reshape(T, hv * dv), L.out_proj.weight)


def time_layer(device, gdn_torch, fla, bf16p=False, save_operands=False):
    section = "time-layer"
    spec = gdn_torch.LayerSpec("qwen3_next", 2048, 16, 32, 128, 128, 4)
    torch.manual_seed(3)
    layer = gdn_torch.GatedDeltaNet(spec, device=device)
    narrow = keeper = None
    if bf16p:
        narrow = gdn_torch.GatedDeltaNet(dataclasses.replace(spec, f32_projections=False),
                                         device=device)
        narrow.load_state_dict(layer.state_dict())
    if save_operands:
        keeper = gdn_torch.GatedDeltaNet(dataclasses.replace(spec, save="operands"),
                                         device=device)
        keeper.load_state_dict(layer.state_dict())
    for lengths in ([8192] * 4, random_lengths(32768, 8, 3)):
        label = "8192x4" if len(lengths) == 4 else "32K/8 seqs"
        T = sum(lengths)
        cu32 = cu_of(lengths, device)
        cu64, cu_cpu = cu32.long(), cu32.long().cpu()
        x = torch.randn(T, spec.hidden, device=device, dtype=torch.bfloat16)
        with torch.no_grad():
            ours_ms = median_ms(lambda: layer(x, cu32))
        record(section, f"ours layer fwd {label} (ms)", ours_ms, None, "Qwen3-Next 80B-A3B shape")
        if layer.program.has_backward:
            xg = x.clone().requires_grad_(True)
            dy = torch.randn_like(x)
            record(section, f"ours layer fwd+bwd {label} (ms)",
                   median_ms(lambda: layer(xg, cu32).backward(dy), iters=10), None)
        if narrow is not None:
            with torch.no_grad():
                narrow_ms = median_ms(lambda: narrow(x, cu32))
                record(section, f"ours bf16p vs default y {label}",
                       rel_rms(narrow(x, cu32), layer(x, cu32)), None, "context")
            record(section, f"ours bf16-projections layer fwd {label} (ms)", narrow_ms, None,
                   f"the default takes {ours_ms / narrow_ms:.3f}x its time")
            if narrow.program.has_backward:
                xg = x.clone().requires_grad_(True)
                dy = torch.randn_like(x)
                record(section, f"ours bf16-projections layer fwd+bwd {label} (ms)",
                       median_ms(lambda: narrow(xg, cu32).backward(dy), iters=10), None)
        if keeper is not None and keeper.program.has_backward:
            # The same step keeping the delta rule's operands (docs/backward.md):
            # its gradients must be those of the default, bit for bit.
            xa = x.clone().requires_grad_(True)
            xb = x.clone().requires_grad_(True)
            dy = torch.randn_like(x)
            layer.zero_grad(set_to_none=True)  # the timing above accumulated into them
            keeper.zero_grad(set_to_none=True)
            layer(xa, cu32).backward(dy)
            keeper(xb, cu32).backward(dy)
            pairs = [(xa.grad, xb.grad)] + [(a.grad, b.grad) for a, b in
                                            zip(layer.parameters(), keeper.parameters())]
            record(section, f"ours save=operands vs save=inputs grads {label}",
                   max(rel_rms(b, a) for a, b in pairs), 0.0, "bit for bit")
            layer.zero_grad(set_to_none=True)
            keeper.zero_grad(set_to_none=True)
            record(section, f"ours save=operands layer fwd+bwd {label} (ms)",
                   median_ms(lambda: keeper(xb, cu32).backward(dy), iters=10), None,
                   "keeps q, k, v, g, beta and the normed output for the backward")
        if fla is None:
            continue
        composed = TorchFlaQwen3Next(layer, fla)
        with torch.no_grad():
            y_ours, y_fla = layer(x, cu32), composed(x, cu64, cu_cpu)
            record(section, f"ours vs PyTorch+FLA y {label}", rel_rms(y_ours, y_fla), None, "context")
            fla_ms = median_ms(lambda: composed(x, cu64, cu_cpu))
        record(section, f"PyTorch+FLA layer fwd {label} (ms)", fla_ms, None,
               f"ours {fla_ms / ours_ms:.2f}x faster")
        try:
            xg = x.clone().requires_grad_(True)
            dy = torch.randn_like(x)
            composed(xg, cu64, cu_cpu).backward(dy)
            record(section, "PyTorch+FLA layer fwd+bwd", "ran", None)
        except Exception as e:  # noqa: BLE001
            record(section, "PyTorch+FLA layer fwd+bwd", "refused", None, str(e).splitlines()[0][:150])
            break
        if FLA_UNGUARDED and layer.program.has_backward:
            fla_ms = median_ms(lambda: composed(xg, cu64, cu_cpu).backward(dy), iters=10)
            record(section, f"PyTorch+FLA layer fwd+bwd {label}, FLA guard bypassed (ms)", fla_ms, None,
                   "time only: FLA's gradients may be wrong on this Triton (FLA #640)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fla-site", default=None, help="folder with FLA installed (put on sys.path "
                        "after transformers is imported)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-fla", action="store_true")
    parser.add_argument("--skip-core-timing", action="store_true",
                        help="time the whole layer only, not the delta rule")
    parser.add_argument("--save-reference", default=None,
                        help="save this run's layer results (a CPU run: the exact program)")
    parser.add_argument("--reference", default=None,
                        help="compare with a --save-reference file of a CPU run (same inputs)")
    parser.add_argument("--fla-unguarded-backward", action="store_true",
                        help="run FLA's backward past its Hopper guard (Triton >= 3.4 and < 3.7.1 "
                             "miscompiles chunk_bwd_dqkwg, FLA #640) to time it; its gradients are "
                             "reported against ours as context and never used as a reference")
    parser.add_argument("--bf16-projections", action="store_true",
                        help="also compare and time the layers compiled with bf16 projection "
                             "outputs (docs/precision.md)")
    parser.add_argument("--save-operands", action="store_true",
                        help="also time the layer compiled with save=operands (docs/backward.md) "
                             "and check its gradients equal the default's bit for bit")
    parser.add_argument("--only", default=None, metavar="SECTION[,SECTION]",
                        help="run these sections alone (qwen3_next, qwen3_5, train, fla-sig, "
                             "time-core, time-layer and the -bf16p ones): e.g. --only time-layer "
                             "times the layer against PyTorch + FLA without the float64 checks")
    parser.add_argument("--device", default="cuda",
                        help="cpu: run the compiled programs in gdn-run instead (no GPU, no "
                             "timing, no FLA): checks the extension's Python half")
    args = parser.parse_args()
    if args.fla_unguarded_backward and (not args.fla_site or args.skip_fla):
        parser.error("--fla-unguarded-backward bypasses the guard of an FLA it imports: give "
                     "--fla-site (and not --skip-fla)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "python"))
    device = torch.device(args.device)
    if args.reference and os.path.exists(args.reference):
        REFERENCE.update(torch.load(args.reference))
    if device.type == "cpu":
        args.skip_timing = args.skip_fla = True

    # transformers first, with FLA and causal_conv1d made unimportable: its
    # modeling files bind their fast path (FLA) at import when it imports.
    blocked = {name: sys.modules.pop(name, None) for name in ("fla", "causal_conv1d")}
    for name in blocked:
        sys.modules[name] = None
    import transformers
    from transformers.models.qwen3_next import modeling_qwen3_next  # noqa: F401
    from transformers.models.qwen3_5 import modeling_qwen3_5  # noqa: F401
    for name in blocked:
        del sys.modules[name]
    gpu = torch.cuda.get_device_name() if device.type == "cuda" else "none (interpreter)"
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, GPU {gpu}",
          flush=True)

    t0 = time.time()
    import gdn_torch
    if device.type == "cuda":
        gdn_torch.load_extension()
        print(f"extension built/loaded in {time.time() - t0:.1f} s", flush=True)

    fla = fla_chunk = None
    if args.fla_site and not args.skip_fla:
        sys.path.insert(0, args.fla_site)
        os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")
        try:
            from fla.modules.causal_conv1d import causal_conv1d
            from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_chunk
            fla = {"conv": causal_conv1d, "chunk": fla_chunk}
            if args.fla_unguarded_backward:
                unguard_fla_backward()
            import triton
            print(f"FLA importable, Triton {triton.__version__}", flush=True)
        except Exception:  # noqa: BLE001
            traceback.print_exc()

    steps = [("qwen3_next", lambda: compare_layer("qwen3_next", [1, 65, 0, 64, 63, 130, 7, 200, 1],
                                                  device, gdn_torch)),
             ("qwen3_5", lambda: compare_layer("qwen3_5", [1, 65, 64, 0, 63, 130, 7, 200, 1],
                                               device, gdn_torch)),
             ("train", lambda: training_step(device, gdn_torch))]
    if args.bf16_projections:
        steps += [("qwen3_next-bf16p", lambda: compare_layer(
                       "qwen3_next", [1, 65, 0, 64, 63, 130, 7, 200, 1], device, gdn_torch, True)),
                  ("qwen3_5-bf16p", lambda: compare_layer(
                       "qwen3_5", [1, 65, 64, 0, 63, 130, 7, 200, 1], device, gdn_torch, True)),
                  ("train-bf16p", lambda: training_step(device, gdn_torch, True))]
    steps += [
             ("fla-sig", lambda: compare_fla_signature(device, gdn_torch, fla_chunk))]
    if not args.skip_timing:
        if not args.skip_core_timing:
            steps.append(("time-core", lambda: time_delta_rule(device, gdn_torch, fla_chunk)))
        steps.append(("time-layer", lambda: time_layer(device, gdn_torch, fla,
                                                       args.bf16_projections,
                                                       args.save_operands)))
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {name for name, _ in steps}
        if unknown:
            parser.error(f"--only: no section {', '.join(sorted(unknown))} in this run; it has "
                         f"{', '.join(name for name, _ in steps)}")
        steps = [(name, step) for name, step in steps if name in wanted]
    for name, step in steps:
        t0 = time.time()
        print(f"== {name}", flush=True)
        try:
            step()
        except Exception as e:  # noqa: BLE001 - one failing part must not hide the others
            traceback.print_exc()
            record(name, "ERROR", type(e).__name__, None, str(e).splitlines()[0][:200] if str(e) else "")
        print(f"   ({time.time() - t0:.1f} s)", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(ROWS, f, indent=1)

    if args.save_reference:
        torch.save(SAVED, args.save_reference)
    print("\nSUMMARY")
    for r in ROWS:
        val = f"{r['value']:.3e}" if isinstance(r["value"], float) else str(r["value"])
        mark = "" if r["ok"] is None else ("ok" if r["ok"] else "FAIL")
        print(f"{r['section']:10s} {r['what']:42s} {val:>12s} {mark} {r['note']}")
    failed = [r for r in ROWS if r["ok"] is False or r["what"] == "ERROR"]
    print(f"{len(ROWS) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
