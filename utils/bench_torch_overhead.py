#!/usr/bin/env python3
#===- bench_torch_overhead.py - what the PyTorch call adds to the C entry --===#
#
# The same compiled delta rule (gqa16x32, K = V = 128, bf16, 8192x4 unless
# told otherwise), on the same inputs, in one process, called four ways:
#
#   C entry            gdn_<f> through ctypes: preallocated results and
#                      workspace, a gdnrt context of its own (what a C or
#                      C++ framework calls);
#   torch.ops call     torch.ops.gdn_torch.call on tensors already in the
#                      compiled dtypes (the operator: dispatch, shape
#                      checks, result and workspace allocation);
#   FLA signature      gdn_torch.chunk_gated_delta_rule(q, k, v, g, beta,
#                      cu_seqlens=...) with cu_seqlens on the device and on
#                      the host, no grad;
#   FLA sig., autograd the same with q, k, v, g, beta requiring grad (the
#                      @f_forward entry, against its own C entry).
#
# Each is timed two ways, CUDA events, median of --reps: `stream`, 50 calls
# back to back (what a training step sees: the host runs ahead of the GPU,
# so only extra GPU work counts), and `alone`, one call on an idle GPU (the
# host's latency counts too). Then a profile of one FLA-signature call
# lists every kernel it launches, so the extra work has names.
#
#   python3 utils/bench_torch_overhead.py [--lengths 8192,8192,8192,8192] [--reps 20]
#
# gdn_torch is found as docs/torch.md says (PYTHONPATH=python, or pip);
# the program is compiled, or taken from GDN_TORCH_CACHE.
#
#===------------------------------------------------------------------------===#

import argparse
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import gdn_torch  # noqa: E402
from cuda_timing import median_ms  # noqa: E402
from gdn_torch import ops  # noqa: E402

MAX_RANK = 6
DTYPES = {torch.bfloat16: 0, torch.float16: 1, torch.float32: 2, torch.float64: 3,
          torch.int32: 4, torch.int64: 5}  # gdn_dtype_t


class Tensor(ctypes.Structure):  # gdn_tensor_t (runtime/include/gdn/runtime/abi.h)
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * MAX_RANK),
                ("rank", ctypes.c_int32), ("dtype", ctypes.c_int)]


def describe(tensors):
    out = (Tensor * len(tensors))()
    for d, t in zip(out, tensors):
        d.data, d.rank, d.dtype = t.data_ptr(), t.dim(), DTYPES[t.dtype]
        for i, size in enumerate(t.shape):
            d.shape[i] = size
    return out


class CEntry:
    """gdn_<name> of `library`, called as a C program would: arguments,
    results and workspace described once, each call one C function call."""

    def __init__(self, library, name, args, results, gdnrt):
        lib = ctypes.CDLL(library)
        self.run = getattr(lib, f"gdn_{name}")
        self.run.argtypes = [ctypes.c_void_p] * 4
        workspace_bytes = getattr(lib, f"gdn_{name}_workspace_bytes")
        workspace_bytes.restype = ctypes.c_size_t
        self.args, self.results = describe(args), describe(results)
        self.workspace = torch.empty(max(256, workspace_bytes(self.args)), dtype=torch.uint8,
                                     device=args[0].device)
        self.context = ctypes.c_void_p()
        stream = torch.cuda.current_stream().cuda_stream
        error = gdnrt.gdnrt_context_create(args[0].device.index or 0, ctypes.c_void_p(stream),
                                           ctypes.byref(self.context))
        if error:
            raise RuntimeError(f"gdnrt_context_create failed ({error})")
        self.keep = (args, results)

    def __call__(self):
        error = self.run(self.args, self.results, self.workspace.data_ptr(), self.context)
        if error:
            raise RuntimeError(f"the C entry failed ({error})")


def timed(fn, reps, batch):
    """Median ms per call of `batch` calls back to back (cuda_timing's
    CUDA-event median over `reps` batches)."""
    def calls():
        for _ in range(batch):
            fn()
    return median_ms(calls, iters=reps) / batch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="8192,8192,8192,8192")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--key-heads", type=int, default=16)
    parser.add_argument("--value-heads", type=int, default=32)
    args = parser.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")]
    H, HV, K, V = args.key_heads, args.value_heads, 128, 128
    T, dev = sum(lengths), torch.device("cuda")
    torch.manual_seed(0)
    q = torch.nn.functional.normalize(torch.randn(1, T, H, K, device=dev), dim=-1).bfloat16()
    k = torch.nn.functional.normalize(torch.randn(1, T, H, K, device=dev), dim=-1).bfloat16()
    v = torch.randn(1, T, HV, V, device=dev).bfloat16()
    g = torch.nn.functional.logsigmoid(torch.randn(1, T, HV, device=dev)) / 8
    beta = torch.rand(1, T, HV, device=dev)
    cu_host = torch.tensor([0] + lengths).cumsum(0).to(torch.int32)
    cu = cu_host.to(dev)
    # The program chunk_gated_delta_rule runs without an initial state.
    prog = gdn_torch.program(gdn_torch.DeltaRuleSpec(H, HV, K, V, initial_state=False), dev)
    gdnrt = ctypes.CDLL(os.path.join(gdn_torch.api._gdnrt_dir(), "libgdnrt.so"), mode=ctypes.RTLD_GLOBAL)
    flat = [q.view(T, H, K), k.view(T, H, K), v.view(T, HV, V), g.view(T, HV), beta.view(T, HV), cu]
    rows = []

    def row(what, stream_ms, alone_ms, base):
        rows.append((what, stream_ms, alone_ms, base))

    for entry, label in ((prog.plain, "@f"), (prog.forward, "@f_forward")):
        if entry is None:
            continue
        results = ops.call(prog.library, entry.name, flat, False, 0)
        c = CEntry(prog.library, entry.name, flat, results, gdnrt)
        base = (timed(c, args.reps, 50), timed(c, args.reps, 1))
        row(f"C entry {label}", *base, None)
        call = lambda: torch.ops.gdn_torch.call(prog.library, entry.name, flat, False, 0)  # noqa: E731
        row(f"torch.ops.gdn_torch.call {label}", timed(call, args.reps, 50), timed(call, args.reps, 1), base)
        if label == "@f":
            with torch.no_grad():
                for where, offsets in (("device", cu), ("host", cu_host)):
                    fla = lambda: gdn_torch.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=offsets)  # noqa: E731
                    row(f"chunk_gated_delta_rule, cu_seqlens on the {where}",
                        timed(fla, args.reps, 50), timed(fla, args.reps, 1), base)
        else:
            leaves = [t.detach().clone().requires_grad_() for t in (q, k, v, g, beta)]
            fla = lambda: gdn_torch.chunk_gated_delta_rule(*leaves, cu_seqlens=cu)  # noqa: E731
            row("chunk_gated_delta_rule, autograd forward", timed(fla, args.reps, 50),
                timed(fla, args.reps, 1), base)

    print(f"delta rule gqa{H}x{HV}, K = V = 128, bf16, lengths {args.lengths} ({T} tokens), "
          f"{torch.cuda.get_device_name()}, median of {args.reps}")
    print(f"{'path':58s} {'stream ms':>10s} {'vs C':>7s} {'alone ms':>10s} {'vs C':>7s}")
    for what, s, a, base in rows:
        ratio = lambda x, b: "" if base is None else f"{x / b - 1:+6.1%}"  # noqa: E731
        print(f"{what:58s} {s:10.4f} {ratio(s, base[0] if base else 1):>7s} {a:10.4f} "
              f"{ratio(a, base[1] if base else 1):>7s}")

    # The kernels one FLA-signature call launches, by name and time.
    from torch.profiler import ProfilerActivity, profile
    with torch.no_grad():
        for _ in range(3):
            gdn_torch.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu_host)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            gdn_torch.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu_host)
            torch.cuda.synchronize()
    print("kernels of one chunk_gated_delta_rule call (cu_seqlens on the host):")
    for event in prof.key_averages():
        if event.device_type == torch.autograd.DeviceType.CUDA or getattr(event, "device_time_total", 0):
            total = getattr(event, "device_time_total", None) or event.cuda_time_total
            print(f"  {total / 1000:8.4f} ms  x{event.count}  {event.key[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
