"""The compiled layer as one operator to torch.compile and CUDA graphs.

On the device given (argv[2]: cpu, where the operator's CPU kernel is the
interpreter, or cuda): eager forward and backward of a small Qwen3-Next
layer; the same through torch.compile(fullgraph=True, dynamic=True) on two
token counts (a graph break or a recompile per length would fail here);
on CUDA, also one forward + backward captured in a CUDA graph and
replayed on new data. Each must equal eager bit for bit: it is the same
kernels in the same order. argv[1]: the folder holding gdn_torch;
argv[3]: the torch.compile backend (default inductor on cuda, aot_eager on
cpu, which needs no C++ toolchain for the graph around the operator).
"""
import sys

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402

import gdn_torch  # noqa: E402

device = sys.argv[2]
backend = sys.argv[3] if len(sys.argv) > 3 else ("inductor" if device == "cuda" else "aot_eager")
torch.manual_seed(0)
spec = gdn_torch.LayerSpec("qwen3_next", hidden=256, key_heads=2, value_heads=4)
layer = gdn_torch.GatedDeltaNet(spec, device=device, dtype=torch.float32)


def inputs(lengths):
    cu = torch.tensor([0] + lengths, dtype=torch.int32).cumsum(0).to(torch.int32)
    x = (torch.randn(int(cu[-1]), 256) * 0.5).to(torch.bfloat16).to(device).requires_grad_()
    return x, cu.to(device)


def step(module, x, cu):
    x.grad = None
    layer.zero_grad(set_to_none=True)
    y = module(x, cu)
    y.float().square().mean().backward()
    return y.detach(), x.grad, [p.grad for p in layer.parameters()]


def same(a, b):
    ya, xa, wa = a
    yb, xb, wb = b
    return torch.equal(ya, yb) and torch.equal(xa, xb) and all(torch.equal(p, q) for p, q in zip(wa, wb))


compiled = torch.compile(layer, fullgraph=True, dynamic=True, backend=backend)
for lengths in ([3, 0, 1, 9], [7, 13]):
    x, cu = inputs(lengths)
    eager = step(layer, x, cu)
    ok = all(torch.isfinite(t).all() for t in [eager[0].float(), eager[1].float(), *eager[2]])
    print(f"eager {sum(lengths)} tokens: finite {ok}")
    print(f"torch.compile {sum(lengths)} tokens == eager: {same(step(compiled, x, cu), eager)}")

if device == "cuda":
    x, cu = inputs([5, 64, 0, 31])
    static_x = x.detach().clone().requires_grad_()
    for _ in range(2):  # warm up on a side stream, as capture requires
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            step(layer, static_x, cu)
        torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    layer.zero_grad(set_to_none=False)
    with torch.cuda.graph(graph):
        static_y = layer(static_x, cu)
        static_y.float().square().mean().backward()
    fresh = (torch.randn_like(x, dtype=torch.float32) * 0.5).to(torch.bfloat16)
    with torch.no_grad():
        static_x.copy_(fresh)
        static_x.grad.zero_()
        for p in layer.parameters():
            p.grad.zero_()
    graph.replay()
    replayed = (static_y.detach().clone(), static_x.grad.clone(), [p.grad.clone() for p in layer.parameters()])
    again = fresh.clone().requires_grad_()
    print(f"CUDA graph replay == eager: {same(replayed, step(layer, again, cu))}")

    # Offsets on the host would be captured as this call's values: refused.
    host_cu = cu.cpu()  # before the capture: a copy to the host cannot be captured
    try:
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            layer(static_x.detach(), host_cu)
        print("capture with cu_seqlens on the host: accepted")
    except RuntimeError as error:
        print(f"capture with cu_seqlens on the host: refused: {str(error).splitlines()[0]}")
    print(f"after the refused capture, eager still == eager: {same(step(layer, again, cu), step(layer, again, cu))}")
