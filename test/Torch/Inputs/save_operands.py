"""A layer whose forward keeps what its expensive ops read
(LayerSpec(save="operands")) against the same layer under the default
save="inputs": the same output and the same gradients, bit for bit (the
saved q, k, v, g, beta and normed output are the values the default's
backward recomputes with the same kernels). argv: python dir, device."""
import sys
sys.path.insert(0, sys.argv[1])
import dataclasses
import torch, gdn_torch
device = sys.argv[2]
torch.manual_seed(0)
for kind in ("qwen3_next", "qwen3_5"):
    spec = gdn_torch.LayerSpec(kind, 256, 2, 4)
    operands = dataclasses.replace(spec, save="operands")
    a = gdn_torch.GatedDeltaNet(spec, device=device)
    b = gdn_torch.GatedDeltaNet(operands, device=device)
    b.load_state_dict(a.state_dict())
    lengths = [5, 0, 1, 70, 64]
    cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32).to(device)
    x = (torch.randn(int(cu[-1]), 256) * 0.5).to(torch.bfloat16).to(device)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = a(xa, cu), b(xb, cu)
    dy = torch.randn(ya.shape, dtype=torch.float32).to(device)
    (ya.float() * dy).sum().backward()
    (yb.float() * dy).sum().backward()
    print(kind, operands.name.endswith("_saveoperands"), "y equal:", torch.equal(ya, yb),
          "; dx equal:", torch.equal(xa.grad, xb.grad),
          "; weight gradients equal:",
          all(torch.equal(p.grad, q.grad) for p, q in zip(a.parameters(), b.parameters())))
try:
    gdn_torch.LayerSpec("qwen3_next", 256, 2, 4, save="activations")
except ValueError as e:
    print("save=activations:", e)
