#!/usr/bin/env python3
"""The fused prologue and FLA's causal_conv1d on the *same* inputs.

Loads the generated prologue (built as a shared library from
device-carry/integration/prologue_gqa16x32/kernels.cu, linked to gdnrt,
which runtime/build.sh builds when --gdnrt has none) through ctypes, runs it
on a gdnrt context on torch's current stream, feeds it torch tensors, and
times it against FLA's varlen
causal_conv1d on the same conv input, in the same process on the same GPU.
Timing: CUDA events around each call after warm-up, median of 50, inputs
rotating over 4 buffer sets. Prints one line per shape.

"""
import argparse
import ctypes
import os
import subprocess

import torch

from bench_fla_conv import median_ms  # same timing method as the FLA baseline

GDN_MAX_RANK = 6
DTYPES = {torch.bfloat16: 0, torch.float16: 1, torch.float32: 2, torch.float64: 3,
          torch.int32: 4, torch.int64: 5}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * GDN_MAX_RANK),
                ("rank", ctypes.c_int32), ("dtype", ctypes.c_int32)]


def describe(t):
    d = Tensor()
    d.data = t.data_ptr()
    for i, size in enumerate(t.shape):
        d.shape[i] = size
    d.rank = t.dim()
    d.dtype = DTYPES[t.dtype]
    return d


def build(source, output, includes, gdnrt):
    subprocess.run(["nvcc", "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC",
                    "-gencode=arch=compute_90a,code=sm_90a", *["-I" + d for d in includes],
                    "-I", os.path.dirname(source), source, "-cudart", "shared",
                    "-L", gdnrt, "-lgdnrt", "-Xlinker", "-rpath=" + gdnrt,
                    "-o", output], check=True)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", default=os.path.join(root, "device-carry/integration/prologue_gqa16x32"))
    parser.add_argument("--lib", default="/tmp/libgdn_prologue.so")
    parser.add_argument("--gdnrt", default="/tmp/gdnrt")
    parser.add_argument("--prebuilt", action="store_true",
                        help="use --lib as it is (built elsewhere, linked to gdnrt)")
    args = parser.parse_args()
    if not args.prebuilt:
        if not os.path.exists(os.path.join(args.gdnrt, "libgdnrt.so")):
            subprocess.run(["bash", os.path.join(root, "runtime/build.sh"), args.gdnrt], check=True)
        build(os.path.join(args.case, "kernels.cu"), args.lib,
              [os.path.join(root, "kernels/include"), os.path.join(root, "runtime/include")],
              os.path.abspath(args.gdnrt))
    lib = ctypes.CDLL(args.lib)
    # The whole-function entry point runs on a gdnrt context (gdnrt, which
    # the library links, is reachable through it).
    lib.gdnrt_context_create.argtypes = [ctypes.c_int, ctypes.c_void_p,
                                         ctypes.POINTER(ctypes.c_void_p)]
    context = ctypes.c_void_p()
    fn = lib.gdn_prologue_gqa16x32
    fn.argtypes = [ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), ctypes.c_void_p, ctypes.c_void_p]
    shapes = lib.gdn_prologue_gqa16x32_result_shapes
    shapes.argtypes = [ctypes.POINTER(Tensor), ctypes.POINTER(Tensor)]
    workspace_bytes = lib.gdn_prologue_gqa16x32_workspace_bytes
    workspace_bytes.argtypes = [ctypes.POINTER(Tensor)]
    workspace_bytes.restype = ctypes.c_size_t

    from fla.modules.causal_conv1d import causal_conv1d

    device = torch.device("cuda")
    channels, heads = 8192, 32
    for lengths in ([8192] * 4, [32768], [2048] * 4):
        tokens = sum(lengths)
        cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device=device)
        xs = [torch.randn(tokens, channels, dtype=torch.bfloat16, device=device) for _ in range(4)]
        w = torch.randn(channels, 4, dtype=torch.bfloat16, device=device)
        a = torch.randn(tokens, heads, dtype=torch.bfloat16, device=device)
        b = torch.randn(tokens, heads, dtype=torch.bfloat16, device=device)
        a_log = torch.rand(heads, device=device).mul(15).add(1).log()
        dt_bias = torch.ones(heads, device=device)
        inputs = [[describe(x), describe(w), describe(a), describe(b), describe(a_log),
                   describe(dt_bias), describe(cu)] for x in xs]
        arg_arrays = [(Tensor * 7)(*arg) for arg in inputs]
        results = (Tensor * 5)()
        assert shapes(arg_arrays[0], results) == 0
        outs = [torch.empty([results[i].shape[d] for d in range(results[i].rank)],
                            dtype=torch.float32 if i >= 3 else torch.bfloat16, device=device)
                for i in range(5)]
        for i, out in enumerate(outs):
            results[i] = describe(out)
        workspace = torch.empty(max(workspace_bytes(arg_arrays[0]), 256), dtype=torch.uint8, device=device)
        if not context:
            assert lib.gdnrt_context_create(torch.cuda.current_device(),
                                            torch.cuda.current_stream().cuda_stream,
                                            ctypes.byref(context)) == 0

        def ours(i):
            status = fn(arg_arrays[i % 4], results, workspace.data_ptr(), context)
            assert status == 0, status

        ours_ms = median_ms(ours)
        fla_ms = median_ms(lambda i: causal_conv1d(xs[i % 4].unsqueeze(0), w, activation="silu", cu_seqlens=cu))
        print(f"tokens={tokens} seqs={len(lengths)}: fused prologue {ours_ms:.4f} ms, "
              f"FLA causal_conv1d alone {fla_ms:.4f} ms, ratio {fla_ms / ours_ms:.2f}x (same inputs)")


if __name__ == "__main__":
    main()
