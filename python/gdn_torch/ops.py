#===- ops.py - torch.ops.gdn_torch.call for autograd, tracers and the CPU --===#
#
# One operator runs every compiled function:
#
#   torch.ops.gdn_torch.call(library, name, args, check) -> results
#
# Its CUDA kernel is the native half's (csrc/gdn_torch.cpp: the generated
# entry point gdn_<name> on PyTorch's current stream, no host
# synchronisation). This module registers the rest of what PyTorch asks of
# an operator, so that the layer is one node to autograd, torch.compile
# (fullgraph) and CUDA graphs:
#
#   - a fake kernel: result dtypes from the generated signature and shapes
#     from gdn_<name>_result_dims, expressions of the arguments' sizes that
#     hold for symbolic sizes too (a token count that changes every step);
#   - a CPU kernel: the same function in gdn-run, the float64 reference
#     interpreter, on the program before lowering (slow, exact up to the
#     storage roundings the types ask for; for checking without a GPU);
#   - autograd: a call of `<f>_forward` (f's results, then what
#     gdn-generate-backward's save= keeps) is differentiated by a call of
#     `<f>_backward` on the arguments, the kept values and one cotangent per
#     float result, which returns one gradient per float argument
#     (docs/backward.md). Other functions have no gradient.
#
#===------------------------------------------------------------------------===#

import ast
import dataclasses
import functools
import os

import torch

from . import compiler

_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
           "f64": torch.float64, "i32": torch.int32, "i64": torch.int64}
# gdn_dtype_t (runtime/include/gdn/runtime/abi.h) in order.
_ABI_DTYPES = ["bf16", "f16", "f32", "f64", "i32", "i64"]
_FLOATS = ("bf16", "f16", "f32", "f64")

_extension = None


def extension():
    """torch.ops.gdn_torch, the native half loaded (gdn_torch.load_extension)."""
    global _extension
    if _extension is None:
        from .api import load_extension
        _extension = load_extension()
    return _extension


# ----------------------------------------------------------------------------
# What a compiled function takes and returns
# ----------------------------------------------------------------------------

# Nodes a result dimension may hold: C integer arithmetic over the
# arguments' sizes (docs/codegen.md, gdn_<f>_result_dims).
_DIM_NODES = (ast.Expression, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv,
              ast.UnaryOp, ast.USub, ast.Constant, ast.Subscript, ast.Attribute, ast.Name,
              ast.Load)


def compile_dim(text):
    """One dimension of gdn_<f>_result_dims as Python code over `args`
    (sizes are never negative, so C's `/` is Python's `//`)."""
    tree = ast.parse(text.replace("/", "//"), mode="eval")
    for node in ast.walk(tree):
        bad = (not isinstance(node, _DIM_NODES)
               or (isinstance(node, ast.Name) and node.id != "args")
               or (isinstance(node, ast.Attribute) and node.attr != "shape")
               or (isinstance(node, ast.Constant) and type(node.value) is not int))
        if bad:
            raise ValueError(f"gdn_torch: a result dimension it cannot read: {text!r}")
    return compile(tree, "<result_dims>", "eval")


def eval_dim(code, args):
    return eval(code, {"__builtins__": {}}, {"args": args})  # noqa: S307 (checked by compile_dim)


@dataclasses.dataclass(frozen=True)
class EntryMeta:
    """The generated signature of one whole-function entry point."""
    num_args: int
    num_results: int
    arg_dtypes: tuple
    arg_is_float: tuple
    result_dtypes: tuple
    result_is_float: tuple
    result_dims: tuple  # per result, per dimension: code for eval_dim
    sp_ranks: int
    cp_ranks: int


@functools.lru_cache(maxsize=None)
def entry_meta(library, name):
    """The signature of gdn_<name> in `library` (cached: tracers ask for it
    on every call, and must not reach the native half while tracing)."""
    ops = extension()
    sig = list(ops.signature(library, name))
    num_args, num_results = sig[0], sig[1]
    args = [_ABI_DTYPES[sig[2 + 3 * i]] for i in range(num_args)]
    results = [_ABI_DTYPES[sig[2 + 3 * (num_args + i)]] for i in range(num_results)]
    groups = sig[2 + 3 * (num_args + num_results):]
    sp_ranks, cp_ranks = (groups + [0, 0])[:2]
    text = ops.result_dims(library, name)
    dims = tuple(tuple(compile_dim(d) for d in r.split(",") if d) for r in text.split(";")) \
        if num_results else ()
    if len(dims) != num_results:
        raise RuntimeError(f"gdn_torch: gdn_{name}_result_dims describes {len(dims)} results, "
                           f"its signature {num_results}")
    return EntryMeta(num_args, num_results, tuple(_DTYPES[d] for d in args),
                     tuple(d in _FLOATS for d in args), tuple(_DTYPES[d] for d in results),
                     tuple(d in _FLOATS for d in results), dims, sp_ranks, cp_ranks)


def call(library, name, args, check=False, rank=0):
    """Runs gdn_<name> of `library` on `args` through the operator; `rank`:
    the handle of the rank a distributed function runs on
    (gdn_torch.distributed), 0 for one that is not."""
    return torch.ops.gdn_torch.call(library, name, list(args), check, rank)


# ----------------------------------------------------------------------------
# The kernels this module registers
# ----------------------------------------------------------------------------


def _fake(library, name, args, check, rank):
    meta = entry_meta(library, name)
    if len(args) != meta.num_args:
        raise RuntimeError(f"gdn_torch: @{name} takes {meta.num_args} arguments, got {len(args)}")
    return [args[0].new_empty([eval_dim(d, args) for d in dims], dtype=dtype)
            for dims, dtype in zip(meta.result_dims, meta.result_dtypes)]


def _lowered_program(library):
    """The program before lowering that compile_spec keeps beside the
    library: <cache>/<name>/<name>.train.mlir for lib<name>.so."""
    folder, base = os.path.split(library)
    name = base[len("lib"):-len(".so")] if base.startswith("lib") and base.endswith(".so") else base
    return os.path.join(folder, name + ".train.mlir")


def _interpret(library, name, args, check, rank):
    """The CPU kernel: gdn-run on the program before lowering."""
    import subprocess
    import tempfile

    import numpy as np
    meta = entry_meta(library, name)
    if rank or meta.sp_ranks > 1 or meta.cp_ranks > 1:
        raise RuntimeError(f"gdn_torch: @{name} is distributed (SP {max(meta.sp_ranks, 1)} x CP "
                           f"{max(meta.cp_ranks, 1)}); the interpreter runs all ranks of a program at "
                           f"once (gdn-run --ranks), not one rank of it: use CUDA tensors")
    program = _lowered_program(library)
    tool = compiler.find_tool("gdn-run", "GDN_RUN")
    if not tool:
        raise RuntimeError("gdn_torch: CPU tensors run in the interpreter, gdn-run, which is "
                           "not here (GDN_RUN, the source tree's build/bin or PATH)")
    if not os.path.isfile(program):
        raise RuntimeError(f"gdn_torch: CPU tensors run in the interpreter on {program}, which "
                           "is missing: compile the spec again where the compiler is")
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "in"))
        for i, a in enumerate(args):
            a = a.detach()
            a = a.double() if a.is_floating_point() else a
            np.save(os.path.join(tmp, "in", f"arg{i}.npy"), a.contiguous().numpy())
        done = subprocess.run([tool, program, f"--entry={name}", "--inputs",
                               os.path.join(tmp, "in"), "--outputs", os.path.join(tmp, "out")],
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"gdn_torch: gdn-run @{name} failed:\n{done.stderr}")
        return [torch.from_numpy(np.load(os.path.join(tmp, "out", f"result{i}.npy"))).to(d)
                for i, d in enumerate(meta.result_dtypes)]


def _setup_context(ctx, inputs, output):
    library, name, args, check, rank = inputs
    ctx.library, ctx.name, ctx.check, ctx.rank, ctx.num_args = library, name, check, rank, len(args)
    ctx.result_meta = [(r.shape, r.dtype, r.device) for r in output]
    ctx.save_for_backward(*args, *output)
    # The kept values (results past the plain function's) never receive a
    # cotangent; materialised, each would be a zero fill as large as itself
    # (the f32 qkvz projection of a layer: 1.6 GB at 32K tokens).
    ctx.set_materialize_grads(False)


FORWARD_SUFFIX, BACKWARD_SUFFIX = "_forward", "_backward"


def _backward(ctx, grads):
    name = ctx.name
    if not name.endswith(FORWARD_SUFFIX):
        raise RuntimeError(
            f"gdn_torch: @{name} has no gradient: only a function's @f_forward does, with "
            f"@f_backward compiled beside it (a library whose backward has ops without a CUDA "
            f"lowering has neither; see the comment in its .cu)")
    base = name[:-len(FORWARD_SUFFIX)]
    plain, forward = entry_meta(ctx.library, base), entry_meta(ctx.library, name)
    stored = ctx.saved_tensors
    args, outputs = stored[:ctx.num_args], stored[ctx.num_args:]
    kept = outputs[plain.num_results:]
    cotangents = []
    for g, (shape, dtype, device), is_float in zip(grads, ctx.result_meta[:plain.num_results],
                                                   plain.result_is_float):
        if not is_float:
            continue
        g = torch.zeros(shape, dtype=dtype, device=device) if g is None else g
        cotangents.append(g.to(dtype).contiguous())
    gradients = iter(call(ctx.library, base + BACKWARD_SUFFIX, [*args, *kept, *cotangents],
                          ctx.check, ctx.rank))
    arg_grads = [next(gradients) if is_float else None for is_float in forward.arg_is_float]
    return None, None, arg_grads, None, None


_registered = False


def register():
    """Registers the fake and CPU kernels and the autograd formula of
    gdn_torch::call; once per process, by gdn_torch.load_extension after it
    loaded the native half (which defines the operator), under its lock."""
    global _registered
    if _registered:
        return
    torch.library.register_fake("gdn_torch::call")(_fake)
    torch.library.impl("gdn_torch::call", "cpu")(_interpret)
    torch.library.register_autograd("gdn_torch::call", _backward, setup_context=_setup_context)
    _registered = True
