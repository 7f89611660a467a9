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
# Without output_final_state: the program that returns o alone
# (DeltaRuleSpec(final_state=False)), the same o bit for bit, and the same
# gradients as the program with final states given no final-state cotangent.
o3, s3 = gdn_torch.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu)
print("o-only program == with final states:", torch.equal(o1, o3), s3 is None)
leaves = [t.clone().requires_grad_() for t in (q, k, v, g, beta)]
do = torch.randn(o1.shape).bfloat16()
for output_final_state in (True, False):
    o, _ = gdn_torch.chunk_gated_delta_rule(*leaves, cu_seqlens=cu,
                                            output_final_state=output_final_state)
    grads = torch.autograd.grad(o, leaves, do)
    if output_final_state:
        with_states = grads
print("o-only gradients == with final states:",
      all(torch.equal(a, b) for a, b in zip(grads, with_states)))
