"""chunk_gated_delta_rule(use_qk_l2norm_in_kernel=True) runs the program that
L2-normalises q and k itself (DeltaRuleSpec(qk_l2norm=True)): o and every
gradient agree with the program given q and k normalised by PyTorch (FLA's
formula: fp32, eps 1e-6 inside the root, rounded to bf16), on `device`
(argv[2]: cpu, the interpreter, or cuda). The program keeps the normalised
q and k for its backward (DeltaRuleSpec.save="operands"); the one that
normalises them again there (save="inputs") gives the same bits."""
import sys; sys.path.insert(0, sys.argv[1])
import torch, gdn_torch
device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
torch.manual_seed(0)
T, H, HV = 40, 1, 2
q = (3 * torch.randn(1, T, H, 128)).bfloat16().to(device)
k = (3 * torch.randn(1, T, H, 128)).bfloat16().to(device)
v = torch.randn(1, T, HV, 128).bfloat16().to(device)
g = (-torch.rand(1, T, HV) / 4).to(device); beta = torch.rand(1, T, HV).to(device)
cu = torch.tensor([0, 7, 7, 40], dtype=torch.int32, device=device)
do = torch.randn(1, T, HV, 128).bfloat16().to(device)


def normalised(x):
    xf = x.float()
    return (xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) + 1e-6)).to(x.dtype)


def rms(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm()).item()


runs = {}
for inside in (True, False):
    leaves = [t.clone().requires_grad_() for t in (q, k, v, g, beta)]
    qq, kk = (leaves[0], leaves[1]) if inside else (normalised(leaves[0]), normalised(leaves[1]))
    o, _ = gdn_torch.chunk_gated_delta_rule(qq, kk, *leaves[2:], cu_seqlens=cu,
                                            use_qk_l2norm_in_kernel=inside)
    runs[inside] = [o] + list(torch.autograd.grad(o, leaves, do))
names = ("o", "dq", "dk", "dv", "dg", "dbeta")
worst = max(rms(a, b) for a, b in zip(runs[True], runs[False]))
print("compiled norms == PyTorch norms:", worst < 1e-2, f"(worst relative RMS {worst:.1e})")
print("finite:", all(bool(t.isfinite().all()) for t in runs[True]))

# The same function compiled to normalise q and k again in the backward
# instead of keeping them: the same kernels on the same values.
spec = gdn_torch.DeltaRuleSpec(H, HV, initial_state=False, final_state=False, qk_l2norm=True,
                               save="inputs")
leaves = [t.clone().requires_grad_() for t in (q, k, v, g, beta)]
flat = [leaves[0].reshape(T, H, 128), leaves[1].reshape(T, H, 128), leaves[2].reshape(T, HV, 128),
        leaves[3].reshape(T, HV), leaves[4].reshape(T, HV), cu]
o = gdn_torch.apply(gdn_torch.program(spec, device), flat).reshape(1, T, HV, 128)
recomputed = [o] + list(torch.autograd.grad(o, leaves, do))
print("norms kept == norms recomputed, bit for bit:",
      all(torch.equal(a, b) for a, b in zip(runs[True], recomputed)))
