"""chunk_gated_delta_rule without an initial state runs the program that
takes none (DeltaRuleSpec(initial_state=False)): the same o and final states
as with explicit zero states, bit for bit, on the CPU (the interpreter), and
gradients through it."""
import sys; sys.path.insert(0, sys.argv[1])
import torch, gdn_torch
torch.manual_seed(0)
T, H, HV = 40, 1, 2
q = torch.nn.functional.normalize(torch.randn(1, T, H, 128), dim=-1).bfloat16()
k = torch.nn.functional.normalize(torch.randn(1, T, H, 128), dim=-1).bfloat16()
v = torch.randn(1, T, HV, 128).bfloat16()
g = -torch.rand(1, T, HV) / 4; beta = torch.rand(1, T, HV)
cu = torch.tensor([0, 7, 7, 40], dtype=torch.int32)
o1, s1 = gdn_torch.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu, output_final_state=True)
o2, s2 = gdn_torch.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu, output_final_state=True,
                                          initial_state=torch.zeros(3, HV, 128, 128))
print("zero-state program == explicit zeros:", torch.equal(o1, o2), torch.equal(s1, s2))
qq = q.clone().requires_grad_()
o, _ = gdn_torch.chunk_gated_delta_rule(qq, k, v, g, beta, cu_seqlens=cu)
o.float().sum().backward(); print("grad finite", bool(qq.grad.isfinite().all()))
