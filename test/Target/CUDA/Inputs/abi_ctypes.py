#!/usr/bin/env python3
"""Calls the host-side entry points of a generated prologue library through
ctypes, as a Python caller (the PyTorch extension, a benchmark) would: the
result shapes and the workspace size for T tokens, and the argument checks
(a null gdnrt context, a wrong conv weight), which all return before any
CUDA call.

usage: abi_ctypes.py LIBRARY TOKENS
"""
import ctypes
import sys

GDN_MAX_RANK = 6
BF16, F32, I32 = 0, 2, 4


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * GDN_MAX_RANK),
                ("rank", ctypes.c_int32), ("dtype", ctypes.c_int32)]


def tensor(shape, dtype):
    t = Tensor()
    t.data = 256  # never dereferenced by the host-side entry points
    for i, size in enumerate(shape):
        t.shape[i] = size
    t.rank = len(shape)
    t.dtype = dtype
    return t


def main():
    lib = ctypes.CDLL(sys.argv[1])
    tokens = int(sys.argv[2])
    shapes = lib.gdn_prologue_gqa16x32_result_shapes
    shapes.argtypes = [ctypes.POINTER(Tensor), ctypes.POINTER(Tensor)]
    workspace = lib.gdn_prologue_gqa16x32_workspace_bytes
    workspace.argtypes = [ctypes.POINTER(Tensor)]
    workspace.restype = ctypes.c_size_t
    args = (Tensor * 7)(tensor([tokens, 8192], BF16), tensor([8192, 4], BF16),
                        tensor([tokens, 32], BF16), tensor([tokens, 32], BF16),
                        tensor([32], F32), tensor([32], F32), tensor([5], I32))
    results = (Tensor * 5)()
    print("result_shapes:", shapes(args, results))
    for r in results:
        print("  rank", r.rank, "dtype", r.dtype, "shape", list(r.shape)[:r.rank])
    print("workspace_bytes:", workspace(args))
    run = lib.gdn_prologue_gqa16x32
    run.argtypes = [ctypes.POINTER(Tensor), ctypes.POINTER(Tensor),
                    ctypes.c_void_p, ctypes.c_void_p]
    print("null context:", run(args, results, 256, None))
    check = lib.gdn_prologue_gqa16x32_check
    check.argtypes = [ctypes.POINTER(Tensor), ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_char_p, ctypes.c_size_t]
    print("null context (_check):", check(args, 256, None, None, 0))
    args[1] = tensor([8192, 3], BF16)  # a conv weight of the wrong width
    print("wrong conv weight:", shapes(args, results))


if __name__ == "__main__":
    main()
