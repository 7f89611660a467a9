"""gdn_torch.megatron.MegatronGatedDeltaNet on the CPU (the interpreter)
against Megatron-LM's GatedDeltaNet computation written out here in float64
(the same steps as its forward: in_proj's q, k, v, z, b, a sections, the
depthwise causal conv and SiLU, L2-normed q and k, GQA by repeat_interleave,
g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b), the gated delta
recurrence, out_norm times SiLU(z), out_proj), each sequence alone: packed
(thd) with and without padded slots, sbhd batches, the fused input norm with
zero-centred gammas; gradients against the compiled qwen3_5 layer on the
same weights; the refusals."""
import math
import sys
import types

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gdn_torch  # noqa: E402
from gdn_torch.megatron import MegatronGatedDeltaNet  # noqa: E402

torch.manual_seed(0)
H, HV, D = 2, 4, 256


def bf16(t):
    return t.detach().to(torch.bfloat16).double()


def reference(layer, x):
    """Megatron's GDN forward on one sequence x [s, hidden], float64 on
    bf16-rounded weights."""
    s = x.shape[0]
    if s == 0:
        return torch.zeros(0, D, dtype=torch.float64)
    x = bf16(x)
    if hasattr(layer.in_proj, "layer_norm_weight"):
        gamma = layer.in_proj.layer_norm_weight.detach().double() + (1 if layer.zero_centered_gamma else 0)
        x = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + layer.eps) * gamma
        x = bf16(x)
    qkv, z, b, a = (x @ bf16(layer.in_proj.weight).T).split(layer.sections, -1)
    w = bf16(layer.conv1d.weight)  # [C, 1, W]
    qkv = F.silu(F.conv1d(qkv.T[None], w, padding=w.shape[-1] - 1, groups=w.shape[0])[0, :, :s].T)
    q, k, v = qkv.split([layer.qk_dim, layer.qk_dim, layer.v_dim], -1)
    q, k = (F.normalize(t.reshape(s, H, 128), dim=-1, eps=0).repeat_interleave(HV // H, 1) for t in (q, k))
    q = q / math.sqrt(128)
    v = v.reshape(s, HV, 128)
    g = -layer.A_log.detach().double().exp() * F.softplus(a + layer.dt_bias.detach().double())
    beta = b.sigmoid()
    state = torch.zeros(HV, 128, 128, dtype=torch.float64)
    o = torch.empty(s, HV, 128, dtype=torch.float64)
    for t in range(s):
        state = state * g[t].exp()[:, None, None]
        delta = (v[t] - torch.einsum("hkv,hk->hv", state, k[t])) * beta[t][:, None]
        state = state + k[t][:, :, None] * delta[:, None, :]
        o[t] = torch.einsum("hkv,hk->hv", state, q[t])
    gamma = bf16(layer.out_norm.weight) + (1 if layer.zero_centered_gamma else 0)
    o = o * torch.rsqrt((o * o).mean(-1, keepdim=True) + layer.eps) * gamma
    o = o * F.silu(z.reshape(s, HV, 128))
    return o.reshape(s, HV * 128) @ bf16(layer.out_proj.weight).T


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def report(name, ours, ref, bound=1e-2):
    error = rel(ours, ref)
    print(f"{name}: {error:.1e} from Megatron's steps in float64; "
          f"{'within' if error < bound else 'OVER'} {bound:g}")


layer = MegatronGatedDeltaNet(D, H, HV, layernorm_epsilon=1e-6)
with torch.no_grad():  # visible weights: the defaults' norm of ones hides a swapped section
    layer.out_norm.weight.uniform_(0.5, 1.5)
    layer.A_log.copy_(torch.linspace(-3, 1, HV))
print("parameters:", ", ".join(f"{n} {list(p.shape)}" for n, p in layer.named_parameters()))

# Packed (thd): [s, 1, h] with the global offsets.
lengths = [5, 1, 0, 17, 9]
cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32)
x = (torch.randn(int(cu[-1]), 1, D) * 0.5).to(torch.bfloat16)
thd = types.SimpleNamespace(qkv_format="thd", cu_seqlens_q=cu, cu_seqlens_kv=cu,
                            cu_seqlens_q_padded=None)
out, bias = layer(x, None, packed_seq_params=thd)
ref = torch.cat([reference(layer, x[cu[i]:cu[i + 1], 0]) for i in range(len(lengths))])
print("thd: out", list(out.shape), "bias", bias)
report("thd", out[:, 0], ref)

# Padded slots (cu_seqlens_q_padded, each a multiple of 4 as CP 2 pads them).
slots = [8, 4, 0, 20, 12]
cp = torch.tensor([0] + slots).cumsum(0).to(torch.int32)
rows = torch.cat([torch.arange(int(cp[i]), int(cp[i]) + n) for i, n in enumerate(lengths)])
xp = torch.randn(int(cp[-1]), 1, D).to(torch.bfloat16)  # padding rows hold garbage
xp[rows] = x
padded = types.SimpleNamespace(qkv_format="thd", cu_seqlens_q=cu, cu_seqlens_q_padded=cp)
outp, _ = layer(xp, None, packed_seq_params=padded)
pad = torch.ones(int(cp[-1]), dtype=torch.bool)
pad[rows] = False
print("thd padded: real rows == unpadded:", torch.equal(outp[rows], out),
      "; padding rows zero:", bool((outp[pad] == 0).all()))

# sbhd: b sequences of s tokens, no packed_seq_params.
xs = (torch.randn(12, 3, D) * 0.5).to(torch.bfloat16)
outs, _ = layer(xs)
print("sbhd: out", list(outs.shape))
report("sbhd", outs.transpose(0, 1), torch.stack([reference(layer, xs[:, j]) for j in range(3)]))

# Megatron's TE spec: the input RMSNorm fused into in_proj, zero-centred gammas.
normed = MegatronGatedDeltaNet(D, H, HV, input_layernorm=True, zero_centered_gamma=True)
with torch.no_grad():
    normed.in_proj.layer_norm_weight.uniform_(-0.3, 0.3)
    normed.out_norm.weight.uniform_(-0.3, 0.3)
outn, _ = normed(x, None, packed_seq_params=thd)
report("input norm, zero-centred gammas",
       outn[:, 0], torch.cat([reference(normed, x[cu[i]:cu[i + 1], 0]) for i in range(len(lengths))]))

# Gradients: the compiled qwen3_5 layer on the same weights, bit for bit.
plain = gdn_torch.GatedDeltaNet(gdn_torch.LayerSpec("qwen3_5", D, H, HV), device="cpu", dtype=torch.float32)
with torch.no_grad():
    qkv, z, b, a = layer.in_proj.weight.split(layer.sections)
    for name, value in [("in_proj_qkv.weight", qkv), ("in_proj_z.weight", z), ("in_proj_b.weight", b),
                        ("in_proj_a.weight", a), ("conv1d.weight", layer.conv1d.weight),
                        ("A_log", layer.A_log), ("dt_bias", layer.dt_bias),
                        ("norm.weight", layer.out_norm.weight), ("out_proj.weight", layer.out_proj.weight)]:
        plain.get_parameter(name).copy_(value)
xa, xb = x.clone().requires_grad_(), x[:, 0].clone().requires_grad_()
dy = torch.randn(int(cu[-1]), D)
(layer(xa, None, packed_seq_params=thd)[0][:, 0].float() * dy).sum().backward()
(plain(xb, cu).float() * dy).sum().backward()
grads = torch.cat([plain.get_parameter(n).grad for n in
                   ("in_proj_qkv.weight", "in_proj_z.weight", "in_proj_b.weight", "in_proj_a.weight")])
print("gradients == the qwen3_5 layer's: dx", torch.equal(xa.grad[:, 0], xb.grad),
      "; in_proj", torch.equal(layer.in_proj.weight.grad, grads),
      "; the rest", all(torch.equal(layer.get_parameter(m).grad, plain.get_parameter(n).grad)
                        for m, n in [("conv1d.weight", "conv1d.weight"), ("A_log", "A_log"),
                                     ("dt_bias", "dt_bias"), ("out_norm.weight", "norm.weight"),
                                     ("out_proj.weight", "out_proj.weight")]))

# Refusals.
tp2 = types.SimpleNamespace(tp=types.SimpleNamespace(size=lambda: 2), cp=None)
config = types.SimpleNamespace(hidden_size=D, linear_num_key_heads=H, linear_num_value_heads=HV,
                               linear_key_head_dim=128, linear_value_head_dim=128,
                               linear_conv_kernel_dim=4, layernorm_epsilon=1e-6,
                               sequence_parallel=False, activation_func=F.silu)
# Under SP a rank's rows are one block: an sbhd batch of 2 is refused (a
# threads layout; refused before any rank is opened, so on the CPU too).
from gdn_torch.distributed import RankLayout  # noqa: E402
sp = MegatronGatedDeltaNet(D, H, HV, ranks=RankLayout(2, 1, rendezvous="threads:refused"))
cases = [("thd with b = 2", lambda: layer(xs[:, :2], None, packed_seq_params=thd)),
         ("bshd", lambda: layer(xs, None, packed_seq_params=types.SimpleNamespace(
             qkv_format="bshd", cu_seqlens_q=cu))),
         ("key_value_states", lambda: layer(x, None, key_value_states=x)),
         ("sbhd b = 3 under SP 2", lambda: sp(xs)),
         ("inference", lambda: layer(x, None, inference_context=object())),
         ("2-D input", lambda: layer(x[:, 0])),
         ("TP without SP", lambda: MegatronGatedDeltaNet.from_config(config, tp2)),
         ("gelu", lambda: MegatronGatedDeltaNet.from_config(
             types.SimpleNamespace(**{**vars(config), "activation_func": F.gelu})))]
for name, call in cases:
    try:
        call()
        print(f"{name}: accepted")
    except (ValueError, NotImplementedError) as error:
        print(f"{name}: {type(error).__name__}: {error}")
print("from_config:", type(MegatronGatedDeltaNet.from_config(config)).__name__)
