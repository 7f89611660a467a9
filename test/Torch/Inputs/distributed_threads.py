"""GatedDeltaNet distributed over P ranks as Python threads on one GPU
(gdnrt's threads backend, gdn_torch.distributed.RankLayout with a
"threads:" rendezvous), against the same layer at P = 1: each rank takes its
contiguous block of the pack's rows and the global cu_seqlens, runs forward
and backward on a stream of its own; the ranks' outputs put together, their
input gradients put together, and every rank's weight gradients (reduced,
so the same on every rank) against P = 1.
"""
import sys
import threading

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402

import gdn_torch  # noqa: E402
from gdn_torch.distributed import RankLayout, close_rank  # noqa: E402

torch.manual_seed(0)
spec = gdn_torch.LayerSpec("qwen3_next", hidden=256, key_heads=2, value_heads=4)
reference = gdn_torch.GatedDeltaNet(spec, device="cuda", dtype=torch.float32)
with torch.no_grad():
    reference.A_log.copy_(torch.linspace(-7, -2.5, 4))  # slow decay: states cross ranks
lengths = [5, 300, 0, 1, 63, 64, 47]  # 480 tokens; 300 spans a whole shard at P = 4
cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32)
T = int(cu[-1])
x = (torch.randn(T, 256, device="cuda") * 0.5).to(torch.bfloat16)
dy = torch.randn(T, 256, device="cuda")


def run(layer, rows, device_cu):
    shard = rows.detach().clone().requires_grad_()
    y = layer(shard, device_cu)
    # On this thread: autograd's one CUDA worker thread would run the ranks'
    # backwards one after the other, each waiting for the next.
    with torch.autograd.set_multithreading_enabled(False):
        (y.float() * dy_of[id(layer)]).sum().backward()
    return y.detach(), shard.grad, {n: p.grad for n, p in layer.named_parameters()}


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


dy_of = {id(reference): dy}
y1, dx1, dw1 = run(reference, x, cu)

for sp, cp, mode in [(2, 1, "headwise"), (1, 2, "headwise"), (1, 2, "chunkwise"),
                     (1, 4, "chunkwise")]:
    P = sp * cp
    rows = T // P
    out, errors = [None] * P, []

    def rank_main(r):
        try:
            layout = RankLayout(sp, cp, r % sp, r // sp, rendezvous=f"threads:dist-{sp}x{cp}-{mode}",
                                timeout_ms=120000)
            layer = gdn_torch.GatedDeltaNet(spec, device="cuda", dtype=torch.float32, ranks=layout,
                                            cp_mode=mode)
            layer.load_state_dict(reference.state_dict())
            dy_of[id(layer)] = dy[r * rows:(r + 1) * rows]
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                out[r] = run(layer, x[r * rows:(r + 1) * rows], cu)
            stream.synchronize()
            close_rank(layout, "cuda")
        except Exception as error:  # noqa: BLE001 (reported below, with the rank)
            errors.append(f"rank {r}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(P)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    name = f"SP {sp} x CP {cp} {mode}"
    if errors:
        print(f"{name}: FAILED: " + "; ".join(errors))
        continue
    y = torch.cat([o[0] for o in out])
    dx = torch.cat([o[1] for o in out])
    weights = max(rel(o[2][n], dw1[n]) for o in out for n in dw1)
    same = all(torch.equal(o[2][n], out[0][2][n]) for o in out for n in dw1)
    print(f"{name}: y {rel(y, y1):.2e}, dx {rel(dx, dx1):.2e}, weights {weights:.2e} from P = 1; "
          f"weight gradients identical on every rank: {same}; "
          f"{'within' if rel(y, y1) < 5e-3 and rel(dx, dx1) < 8e-3 and weights < 2e-2 else 'OVER'} "
          f"the bounds")
