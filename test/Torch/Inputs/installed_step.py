"""A training step of a small Qwen3.5 layer through an installed gdn_torch,
on the CPU (the interpreter), from outside the source tree."""
import torch

import gdn_torch
from gdn_torch import api, compiler

print("gdn_torch from", gdn_torch.__file__.rsplit("/", 1)[0])
print("operator library:", "packaged" if api._packaged_extension() else "built here")
print("headers:", " ".join(compiler.include_dirs()))
layer = gdn_torch.GatedDeltaNet(gdn_torch.LayerSpec("qwen3_5", hidden=256, key_heads=2,
                                                    value_heads=4), device="cpu")
x = torch.randn(9, 256).to(torch.bfloat16).requires_grad_()
y = layer(x, torch.tensor([0, 4, 9], dtype=torch.int32))
y.float().square().sum().backward()
every = all(p.grad is not None and torch.isfinite(p.grad).all() for p in layer.parameters())
print(f"y {tuple(y.shape)}, dx {tuple(x.grad.shape)}, "
      f"{'every parameter has a gradient' if every else 'a parameter has no finite gradient'}")
