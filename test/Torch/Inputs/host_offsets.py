"""cu_seqlens on the host, staged through gdn_torch's pinned buffers
(gdn_torch/packing.py, _PinnedStaging): 200 calls while the GPU runs behind
(a sleep kernel queued every few calls), the ring of 64 buffers wrapping
several times, one CPU tensor rewritten in place for each next call right
after the previous one returned. Every call's output equals the same call
with the offsets given on the GPU: no call read another's offsets."""
import sys

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402

import gdn_torch  # noqa: E402

torch.manual_seed(0)
layer = gdn_torch.GatedDeltaNet(gdn_torch.LayerSpec("qwen3_next", 256, 2, 4), device="cuda")
T, CALLS = 192, 200
x = (torch.randn(T, 256, device="cuda") * 0.5).to(torch.bfloat16)
patterns = []
for _ in range(CALLS):
    cuts = torch.randint(0, T + 1, (int(torch.randint(1, 6, ())),)).sort().values
    patterns.append(torch.cat([torch.tensor([0]), cuts, torch.tensor([T])]).to(torch.int32))

host_outputs = []
with torch.no_grad():
    for i, pattern in enumerate(patterns):
        if i % 8 == 0:
            torch.cuda._sleep(20_000_000)  # about 10 ms: the GPU falls behind the host
        cu = pattern.clone()  # a fresh tensor the caller overwrites at once
        host_outputs.append(layer(x, cu))
        cu.fill_(-1)
    torch.cuda.synchronize()
    same = all(torch.equal(y, layer(x, p.cuda())) for y, p in zip(host_outputs, patterns))
print(f"{CALLS} calls with cu_seqlens on the host == the same on the GPU: {same}")
