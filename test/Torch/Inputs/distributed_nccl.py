"""GatedDeltaNet with torch.distributed process groups under NCCL, at world
size 1 (one GPU, one process: NCCL refuses two ranks on one GPU):

  - a layer given sp_group / cp_group of one rank runs the P = 1 program
    and equals the layer built without groups, bit for bit, forward and
    backward;
  - the rank gdn_torch.distributed opens from those groups, the way it does
    at any size (NCCL's unique id broadcast over the torch groups, gdnrt's
    own NCCL communicator joined and split into the SP and CP groups), runs
    the layer on its context and equals it bit for bit, forward and
    backward; closing it and opening it again works.
"""
import os
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import gdn_torch  # noqa: E402
from gdn_torch import api, distributed  # noqa: E402

torch.cuda.set_device(0)
store = os.path.join(tempfile.mkdtemp(), "store")
dist.init_process_group("nccl", init_method=f"file://{store}", rank=0, world_size=1,
                        device_id=torch.device("cuda", 0))
print(f"backend {dist.get_backend()}, world size {dist.get_world_size()}")

torch.manual_seed(0)
spec = gdn_torch.LayerSpec("qwen3_next", hidden=256, key_heads=2, value_heads=4)
plain = gdn_torch.GatedDeltaNet(spec, device="cuda")
grouped = gdn_torch.GatedDeltaNet(spec, device="cuda", sp_group=dist.group.WORLD,
                                  cp_group=dist.group.WORLD, cp_mode="chunkwise")
grouped.load_state_dict(plain.state_dict())
print(f"groups of one rank compile the P = 1 program: {grouped.spec == plain.spec}, "
      f"no rank opened: {grouped.layout is None}")

lengths = [5, 300, 0, 1, 63, 64, 47]
cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32).cuda()
x = (torch.randn(int(cu[-1]), 256, device="cuda") * 0.5).to(torch.bfloat16)
dy = torch.randn(x.shape, device="cuda")


def run(forward, layer):
    layer.zero_grad(set_to_none=True)
    rows = x.detach().clone().requires_grad_()
    y = forward(rows)
    (y.float() * dy).sum().backward()
    return [y.detach(), rows.grad] + [p.grad for p in layer.parameters()]


def same(a, b):
    return all(torch.equal(u, v) for u, v in zip(a, b))


expected = run(lambda rows: plain(rows, cu), plain)
print(f"layer with groups == layer without, forward and backward: "
      f"{same(run(lambda rows: grouped(rows, cu), grouped), expected)}")

layout = distributed.layout_from_groups(dist.group.WORLD, None)
for attempt in ("opened", "opened again"):
    handle = distributed.open_rank(layout, "cuda")
    on_rank = run(lambda rows: api.run_layer(spec, layout, rows, cu, None, plain.weights()), plain)
    torch.cuda.synchronize()
    print(f"NCCL rank {attempt} (handle {'> 0' if handle > 0 else handle}): layer on its context "
          f"== layer on the device's, forward and backward: {same(on_rank, expected)}")
    distributed.close_rank(layout, "cuda")
dist.destroy_process_group()
print("done")
