"""A layer compiled for padded packs (LayerSpec(padded=True): cu_seqlens
and cu_padded, Megatron's cu_seqlens_q_padded) against the same layer
unpadded, on the CPU (the interpreter): outputs and input gradients at the
real rows bit for bit, padding rows zero, weight gradients equal; invalid
padded offsets refused with the compiler's messages."""
import sys
sys.path.insert(0, sys.argv[1])
import torch, gdn_torch
torch.manual_seed(0)
plain = gdn_torch.LayerSpec("qwen3_5", 256, 2, 4)
padded = gdn_torch.LayerSpec("qwen3_5", 256, 2, 4, padded=True)
a = gdn_torch.GatedDeltaNet(plain, device="cpu", dtype=torch.float32)
b = gdn_torch.GatedDeltaNet(padded, device="cpu", dtype=torch.float32)
b.load_state_dict(a.state_dict())
lengths, slots = [5, 0, 1, 9], [8, 0, 4, 12]
cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32)
cp = torch.tensor([0] + slots).cumsum(0).to(torch.int32)
x = (torch.randn(int(cu[-1]), 256) * 0.5).to(torch.bfloat16)
xp = torch.zeros(int(cp[-1]), 256, dtype=torch.bfloat16)
rows = torch.cat([torch.arange(int(cp[i]), int(cp[i]) + n) for i, n in enumerate(lengths)])
xp[rows] = x
xa, xb = x.clone().requires_grad_(), xp.clone().requires_grad_()
ya, yb = a(xa, cu), b(xb, cu, cp)
dy = torch.randn_like(ya, dtype=torch.float32)
dyp = torch.zeros(yb.shape); dyp[rows] = dy
(ya.float() * dy).sum().backward(); (yb.float() * dyp).sum().backward()
print("padded y at real rows == unpadded y:", torch.equal(yb[rows], ya))
print("padded dx at real rows == unpadded dx:", torch.equal(xb.grad[rows], xa.grad))
pad = torch.ones(int(cp[-1]), dtype=torch.bool); pad[rows] = False
print("padding rows: y zero", bool((yb[pad] == 0).all()), "; dx zero", bool((xb.grad[pad] == 0).all()))
print("weight gradients equal:", all(torch.equal(p.grad, q.grad) for p, q in zip(a.parameters(), b.parameters())))
for name, c, s in [("slot too small", cu, torch.tensor([0, 4, 4, 8, 24], dtype=torch.int32)),
                   ("counts differ", cu, torch.tensor([0, 8, 12, 24], dtype=torch.int32)),
                   ("slots not to T", cu, torch.tensor([0, 8, 8, 12, 20], dtype=torch.int32)),
                   ("float offsets", cu.float(), cp)]:
    try:
        b(xp, c, s); print(name, ": accepted")
    except (ValueError, TypeError) as e:
        print(name, ":", type(e).__name__, str(e).split(";")[0])
try:
    a(x, cu, cp)
except ValueError as e:
    print("unpadded layer, padded offsets:", e)
