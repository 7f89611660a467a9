#!/usr/bin/env python3
"""Calls the host-side whole-function entry points of a generated library
through ctypes with arguments of the given shapes: the result shapes, the
workspace size (which asks gdnrt for the collectives' staging), and the
entry point and _check with a null gdnrt context. Nothing here touches a
GPU: every call returns before its first CUDA call.

usage: host_entry_points.py LIBRARY PREFIX [--query=Q]... SHAPE...
  SHAPE is one argument's sizes joined by 'x' ("1000x4096", "5"); the
  dtypes come from the library's signature table. Each query
  "FUNCTION,DTYPE,SHAPE,INT..." first prints what a gdnrt workspace query
  answers for a tensor of that dtype (a number) and shape, so that a test
  can tell what the workspace must hold.
"""
import ctypes
import sys

GDN_MAX_RANK = 6


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * GDN_MAX_RANK),
                ("rank", ctypes.c_int32), ("dtype", ctypes.c_int32)]


class Signature(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("num_args", ctypes.c_int32),
                ("num_results", ctypes.c_int32),
                ("arg_dtypes", ctypes.POINTER(ctypes.c_int32)),
                ("arg_ranks", ctypes.POINTER(ctypes.c_int32)),
                ("arg_roles", ctypes.POINTER(ctypes.c_int32)),
                ("result_dtypes", ctypes.POINTER(ctypes.c_int32)),
                ("result_ranks", ctypes.POINTER(ctypes.c_int32)),
                ("result_roles", ctypes.POINTER(ctypes.c_int32))]


def tensor(shape, dtype):
    t = Tensor()
    t.data = 256  # never dereferenced by the host-side code
    for d, size in enumerate(shape):
        t.shape[d] = size
    t.rank = len(shape)
    t.dtype = dtype
    return t


def main():
    lib = ctypes.CDLL(sys.argv[1])
    prefix = sys.argv[2]
    queries = [a[len("--query="):] for a in sys.argv[3:] if a.startswith("--query=")]
    texts = [a for a in sys.argv[3:] if not a.startswith("--query=")]
    shapes = [[int(size) for size in text.split("x")] for text in texts]
    for query in queries:
        name, dtype, shape, *rest = query.split(",")
        function = getattr(lib, name)  # gdnrt, which the library links
        function.restype = ctypes.c_size_t
        operand = tensor([int(size) for size in shape.split("x")], int(dtype))
        print("query %s: %d" % (name, function(ctypes.byref(operand),
                                               *[int(v) for v in rest])))
    signature = Signature.in_dll(lib, prefix + "_signature")
    if signature.num_args != len(shapes):
        sys.exit("%s takes %d arguments, %d shapes given" %
                 (prefix, signature.num_args, len(shapes)))
    args = (Tensor * signature.num_args)()
    for i, shape in enumerate(shapes):
        args[i] = tensor(shape, signature.arg_dtypes[i])
    results = (Tensor * signature.num_results)()

    result_shapes = getattr(lib, prefix + "_result_shapes")
    result_shapes.argtypes = [ctypes.POINTER(Tensor), ctypes.POINTER(Tensor)]
    print("result_shapes:", result_shapes(args, results))
    for r in results:
        print("  rank", r.rank, "dtype", r.dtype, "shape", list(r.shape)[:r.rank])
    workspace = getattr(lib, prefix + "_workspace_bytes")
    workspace.argtypes = [ctypes.POINTER(Tensor)]
    workspace.restype = ctypes.c_size_t
    print("workspace_bytes:", workspace(args))
    run = getattr(lib, prefix)
    run.argtypes = [ctypes.POINTER(Tensor), ctypes.POINTER(Tensor),
                    ctypes.c_void_p, ctypes.c_void_p]
    print("null context:", run(args, results, 256, None))
    check = getattr(lib, prefix + "_check")
    check.argtypes = [ctypes.POINTER(Tensor), ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_char_p, ctypes.c_size_t]
    print("null context (_check):", check(args, 256, None, None, 0))


if __name__ == "__main__":
    main()
