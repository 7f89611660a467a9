#!/usr/bin/env python3
"""The layer step from several kernel caches, side by side in one call.

Times the compiled Qwen3-Next-80B GDN layer (hidden 2048, 16 key and 32
value heads, K = V = 128), forward alone and forward + backward, at 8192x4
and at 32K tokens in 8 sequences, once per cache and round, each in a
process of its own (GDN_TORCH_CACHE set to that cache), alternating the
caches so that clock drift hits all alike. Each run also prints a hash of
every gradient of one step: two compilers that must agree bit for bit
(a fusion that changes no arithmetic) print the same hashes.

Usage (on the GPU machine, a cache per compiler made with
utils/prepare-torch-gpu.sh or `python -m gdn_torch compile layer
--projections qwen3_next --hidden 2048 --key-heads 16 --value-heads 32`):
    python3 utils/layer_ab.py --rounds 2 NAME=CACHE [NAME=CACHE ...]
"""
import argparse
import hashlib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run_one(label):
    """Times the layer from the cache GDN_TORCH_CACHE names."""
    import torch

    import gdn_torch
    from cuda_timing import median_ms
    from torch_compare import cu_of, random_lengths
    gdn_torch.load_extension()
    spec = gdn_torch.LayerSpec("qwen3_next", 2048, 16, 32, 128, 128, 4)
    torch.manual_seed(3)
    layer = gdn_torch.GatedDeltaNet(spec, device="cuda")
    for lengths in ([8192] * 4, random_lengths(32768, 8, 3)):
        name = "8192x4" if len(lengths) == 4 else "32K in 8"
        cu = cu_of(lengths, "cuda")
        torch.manual_seed(5)
        x = torch.randn(sum(lengths), spec.hidden, device="cuda", dtype=torch.bfloat16)
        dy = torch.randn_like(x)
        xg = x.clone().requires_grad_(True)
        layer.zero_grad(set_to_none=True)
        layer(xg, cu).backward(dy)
        digest = hashlib.sha1()
        for grad in [xg.grad] + [p.grad for p in layer.parameters()]:
            digest.update(grad.detach().contiguous().view(torch.uint8).cpu().numpy().tobytes())
        step_ms = median_ms(lambda: layer(xg, cu).backward(dy), iters=20)
        with torch.no_grad():
            forward_ms = median_ms(lambda: layer(x, cu), iters=20)
        print(f"{label:12s} {name:9s} forward {forward_ms:7.3f} ms  forward+backward "
              f"{step_ms:7.3f} ms  gradients {digest.hexdigest()[:16]}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("caches", nargs="*", help="NAME=CACHE folders, in the order to run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child's label
    args = parser.parse_args()
    if args.one is not None:
        run_one(args.one)
        return 0
    if not args.caches:
        parser.error("give at least one NAME=CACHE")
    pairs = [item.split("=", 1) for item in args.caches]
    if any(len(pair) != 2 for pair in pairs):
        parser.error("each cache is NAME=FOLDER")
    failed = 0
    for _ in range(args.rounds):
        for name, cache in pairs:
            env = dict(os.environ, GDN_TORCH_CACHE=os.path.abspath(cache))
            failed |= subprocess.call([sys.executable, os.path.abspath(__file__), "--one", name],
                                      env=env, cwd=HERE)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
