"""gdn_torch.megatron.MegatronGatedDeltaNet distributed as Megatron-LM
distributes GDN: each rank's tokens cut out of the global padded pack by
Transformer Engine's THD rule for context parallelism (every sequence's
padded slot in 2 x cp pieces, CP rank r taking pieces r and 2 x cp - 1 - r,
sequence after sequence), then, under sequence parallelism, the CP shard's
rows split contiguously over the SP ranks; the packed_seq_params the whole
pack's. Ranks as Python threads on one GPU (gdnrt's threads backend).
Every rank's output and input gradient, put back in place by the same
rule, against the layer at P = 1 on the whole pack; the weight gradients
(reduced) the same on every rank. Also sbhd batches under CP (Megatron's
load balancing: the same cut of every batch row's sequence)."""
import sys
import threading
import types

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402

from gdn_torch.distributed import RankLayout, close_rank  # noqa: E402
from gdn_torch.megatron import MegatronGatedDeltaNet  # noqa: E402

torch.manual_seed(0)
D, H, HV = 256, 2, 4
reference = MegatronGatedDeltaNet(D, H, HV, device="cuda")
with torch.no_grad():
    reference.A_log.copy_(torch.linspace(-7, -2.5, HV))  # slow decay: states cross ranks
    reference.out_norm.weight.uniform_(0.5, 1.5)


def te_thd_rows(slots, cp, rank):
    """The global rows CP rank `rank` holds: Transformer Engine's THD
    partitioning, written from its description."""
    rows, start = [], 0
    for slot in slots:
        piece = slot // (2 * cp)
        for index in (rank, 2 * cp - 1 - rank):
            rows.extend(range(start + index * piece, start + (index + 1) * piece))
        start += slot
    return rows


def rank_rows(slots, sp, cp, grid_rank):
    cp_rows = te_thd_rows(slots, cp, grid_rank // sp)
    per = len(cp_rows) // sp
    return cp_rows[(grid_rank % sp) * per:(grid_rank % sp + 1) * per]


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def run(layer, x, dy, params):
    layer.zero_grad(set_to_none=True)
    shard = x.detach().clone().requires_grad_()
    y, _ = layer(shard, None, packed_seq_params=params)
    with torch.autograd.set_multithreading_enabled(False):  # this thread runs its backward
        (y.float() * dy).sum().backward()
    return y.detach(), shard.grad, {n: p.grad.clone() for n, p in layer.named_parameters()}


lengths = [5, 300, 0, 1, 63, 64, 47]
slots = [-(-n // 8) * 8 for n in lengths]  # padded to a multiple of 2 x cp x sp = 8
cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32).cuda()
cu_padded = torch.tensor([0] + slots).cumsum(0).to(torch.int32).cuda()
T = sum(slots)
real = torch.cat([torch.arange(int(cu_padded[i]), int(cu_padded[i]) + n) for i, n in enumerate(lengths)])
x = (torch.randn(T, 1, D, device="cuda") * 0.5).to(torch.bfloat16)
dy = torch.zeros(T, 1, D, device="cuda")
dy[real.cuda()] = torch.randn(len(real), 1, D, device="cuda")
thd = types.SimpleNamespace(qkv_format="thd", cu_seqlens_q=cu, cu_seqlens_q_padded=cu_padded)
y1, dx1, dw1 = run(reference, x, dy, thd)

xs = (torch.randn(16, 2, D, device="cuda") * 0.5).to(torch.bfloat16)  # sbhd: 2 rows of 16 tokens
dys = torch.randn(16, 2, D, device="cuda")
ys1, dxs1, dws1 = run(reference, xs, dys, None)

for sp, cp, mode, fmt in [(1, 2, "headwise", "thd"), (1, 2, "chunkwise", "thd"),
                          (2, 2, "chunkwise", "thd"), (1, 4, "chunkwise", "thd"),
                          (1, 2, "headwise", "sbhd")]:
    P = sp * cp
    out, errors = [None] * P, []
    if fmt == "thd":
        index = [torch.tensor(rank_rows(slots, sp, cp, r), device="cuda") for r in range(P)]
    else:  # every batch row's sequence cut the same way (s is dimension 0)
        index = [torch.tensor(te_thd_rows([16], cp, r), device="cuda") for r in range(P)]

    def rank_main(r):
        layout = RankLayout(sp, cp, r % sp, r // sp, rendezvous=f"threads:megatron-{sp}x{cp}-{mode}-{fmt}",
                            timeout_ms=120000)
        try:
            layer = MegatronGatedDeltaNet(D, H, HV, device="cuda", ranks=layout, cp_mode=mode)
            layer.load_state_dict(reference.state_dict())
            torch.cuda.synchronize()
            with torch.cuda.stream(torch.cuda.Stream()):
                if fmt == "thd":
                    out[r] = run(layer, x[index[r]], dy[index[r]], thd)
                else:
                    out[r] = run(layer, xs[index[r]], dys[index[r]], None)
                torch.cuda.current_stream().synchronize()
        except Exception as error:  # noqa: BLE001 (reported below, with the rank)
            errors.append(f"rank {r}: {type(error).__name__}: {error}")
        finally:
            close_rank(layout, "cuda")

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(P)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    name = f"{fmt} SP {sp} x CP {cp} {mode}"
    if errors:
        print(f"{name}: FAILED: " + "; ".join(errors))
        continue
    base_y, base_dx, base_dw = (y1, dx1, dw1) if fmt == "thd" else (ys1, dxs1, dws1)
    y, dx = torch.zeros_like(base_y), torch.zeros_like(base_dx)
    for r in range(P):
        y[index[r]], dx[index[r]] = out[r][0], out[r][1]
    weights = max(rel(o[2][n], base_dw[n]) for o in out for n in base_dw)
    same = all(torch.equal(o[2][n], out[0][2][n]) for o in out for n in base_dw)
    ok = rel(y, base_y) < 5e-3 and rel(dx, base_dx) < 8e-3 and weights < 2e-2
    print(f"{name}: y {rel(y, base_y):.2e}, dx {rel(dx, base_dx):.2e}, weights {weights:.2e} from "
          f"P = 1; weight gradients identical on every rank: {same}; {'within' if ok else 'OVER'} "
          f"the bounds")
