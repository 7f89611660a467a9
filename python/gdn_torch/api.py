#===- api.py - GDN layers compiled by gdn-compiler, as PyTorch modules ----===#
#
# What gdn_torch gives PyTorch, all calling code that gdn-opt / gdn-translate
# generated (docs/torch.md):
#
#   GatedDeltaNet          an nn.Module: the whole layer over packed tokens
#                          (THD: x [T, hidden], cu_seqlens [N + 1]), forward
#                          and backward;
#   chunk_gated_delta_rule FLA's function of that name, same signature,
#                          on the compiled delta rule and its backward;
#   program / apply        any compiled program and its @f_forward /
#                          @f_backward pair under autograd, through one
#                          operator, torch.ops.gdn_torch.call (gdn_torch.ops:
#                          fake kernel, CPU kernel, autograd formula), which
#                          torch.compile and CUDA graphs take as it is.
#
# Libraries come from gdn_torch.compiler: from a cache (GDN_TORCH_CACHE), or
# compiled on the spot where gdn-opt, gdn-translate and nvcc are.
#
#===------------------------------------------------------------------------===#

import os
import threading

import torch

from . import compiler, ops
from .compiler import DeltaRuleSpec, LayerSpec
from .packing import prepare_cu_seqlens, prepare_padded

_HERE = os.path.dirname(os.path.abspath(__file__))
_extension = None
# Ranks run as threads (gdn_torch.distributed's threads backend) reach the
# first load and the first program at once: one thread loads the operator
# library, registers its kernels and compiles a program; the others wait
# for it instead of doing it again alongside.
_load_lock = threading.RLock()


def _gdnrt_dir():
    gdnrt = compiler.gdnrt_dir() or next(
        (d for d in compiler.cache_dirs() if os.path.isfile(os.path.join(d, "libgdnrt.so"))), None)
    if not gdnrt:
        raise RuntimeError("gdn_torch: no libgdnrt.so: install gdn_torch with pip (it carries "
                           "one), set GDN_GDNRT_DIR or GDN_BUILD_DIR, or point GDN_TORCH_CACHE at "
                           "a cache that python -m gdn_torch filled (it copies libgdnrt.so there)")
    return os.path.abspath(gdnrt)


def _packaged_extension():
    """The operator library pip built beside this file, if it did."""
    import glob
    found = sorted(glob.glob(os.path.join(_HERE, "_ops*.so")))
    return found[0] if found else None


def _prebuilt_name():
    return f"gdn_torch_ops-{torch.__version__}.so"


def export_flags():
    """Linker flags that keep the operator library's symbols to itself
    (csrc/exports.map says why)."""
    return [f"-Wl,--version-script={os.path.join(_HERE, 'csrc', 'exports.map')}",
            "-Wl,--exclude-libs,ALL"]


def build_extension(out_dir=None, verbose=False):
    """Builds the native half with torch.utils.cpp_extension (an operator
    library: no Python module, so it depends on this torch's version only)
    and returns its path. `out_dir`: also copy it there under the name
    load_extension looks for (gdn_torch_ops-<torch version>.so)."""
    import shutil

    from torch.utils import cpp_extension
    gdnrt = _gdnrt_dir()
    # The native half holds no device code, but cpp_extension asks for an
    # architecture list even so, and finds none on a machine without a GPU.
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    path = cpp_extension.load(
        name="gdn_torch_ops",
        sources=[os.path.join(_HERE, "csrc", "gdn_torch.cpp")],
        extra_include_paths=[os.path.abspath(d) for d in compiler.include_dirs()],
        extra_cflags=["-O2"],
        extra_ldflags=[f"-L{gdnrt}", "-lgdnrt", f"-Wl,-rpath,{gdnrt}", "-ldl",
                       *export_flags()],
        with_cuda=True,
        is_python_module=False,
        verbose=verbose)
    if out_dir:
        shutil.copy2(path, os.path.join(out_dir, _prebuilt_name()))
    return path


def load_extension(verbose=False):
    """The native half's operators (torch.ops.gdn_torch): the one pip built
    into an installed gdn_torch; else a library built for this torch version
    found in a cache (GDN_TORCH_CACHE), loaded as it is; else it is built
    now (build_extension), linking libgdnrt.so (GDN_GDNRT_DIR, a build tree,
    or the first cache holding one) and including gdnrt's C headers."""
    global _extension
    if _extension is not None:
        return _extension
    with _load_lock:
        if _extension is None:
            _load_extension(verbose)
    return _extension


def _load_extension(verbose):
    global _extension
    packaged = _packaged_extension()
    prebuilt = next((os.path.join(d, _prebuilt_name()) for d in compiler.cache_dirs()
                     if os.path.isfile(os.path.join(d, _prebuilt_name()))), None)
    if packaged:
        torch.ops.load_library(packaged)  # its run path finds the libgdnrt.so beside it
    elif prebuilt:
        # Its run path names the folder it was built against: load the
        # cache's libgdnrt.so first, which then satisfies its dependency.
        import ctypes
        ctypes.CDLL(os.path.join(_gdnrt_dir(), "libgdnrt.so"), mode=ctypes.RTLD_GLOBAL)
        torch.ops.load_library(prebuilt)
    else:
        build_extension(verbose=verbose)
    ops.register()
    _extension = torch.ops.gdn_torch  # last: other threads take it as loaded


class Entry:
    """One whole-function entry point of a compiled library: its signature
    (gdn_torch.ops.EntryMeta) and a call through torch.ops.gdn_torch.call."""

    def __init__(self, library, name):
        self.library, self.name = library, name
        self.meta = ops.entry_meta(library, name)
        self.arg_dtypes, self.arg_is_float = self.meta.arg_dtypes, self.meta.arg_is_float
        self.result_dtypes, self.result_is_float = self.meta.result_dtypes, self.meta.result_is_float
        self.num_args, self.num_results = self.meta.num_args, self.meta.num_results

    def __call__(self, args, check=False):
        return ops.call(self.library, self.name, args, check)


class CompiledProgram:
    """A compiled program `@f` with, where they were lowered, the
    `@f_forward` / `@f_backward` pair of gdn-generate-backward. It runs on
    CUDA tensors in the generated library and on CPU tensors in gdn-run
    (gdn_torch.ops)."""

    def __init__(self, manifest):
        load_extension()
        self.manifest = manifest
        library, functions = manifest["library"], manifest["functions"]
        self.name, self.library = manifest["name"], library
        make = lambda fn: Entry(library, fn) if fn else None  # noqa: E731
        self.plain = make(functions.get("plain"))
        self.forward = make(functions.get("forward"))
        self.backward = make(functions.get("backward"))
        if self.plain is None:
            raise RuntimeError(f"gdn_torch: {library} has no entry point for @{self.name}")

    @property
    def has_backward(self):
        return self.forward is not None and self.backward is not None

    def __call__(self, *args, check=False):
        """Runs `@f` (no autograd). Float arguments are cast to the
        signature's dtypes."""
        args = [a.to(d) if a.dtype != d else a for a, d in zip(args, self.plain.arg_dtypes)]
        return self.plain(args, check)


_programs = {}


def arch_for(device):
    """The architecture a library for `device` is compiled for: sm_90a on
    Hopper (wgmma, TMA), the portable sm_80+ build on other GPUs, None (any)
    for the CPU, where the interpreter runs the program, not the kernels."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    return "sm_90a" if torch.cuda.get_device_capability(device) == (9, 0) else "portable"


def program(spec, device="cuda"):
    """The compiled program of a LayerSpec or DeltaRuleSpec for `device`
    (cached): CUDA tensors run in the generated library, CPU tensors in the
    interpreter (gdn-run)."""
    arch = arch_for(device)
    key = (spec, arch)
    if key not in _programs:
        with _load_lock:  # one compile and one load per program, however many threads ask
            if key not in _programs:
                _programs[key] = CompiledProgram(compiler.library_for(spec, arch))
    return _programs[key]


def apply(prog, args, check=False, rank=0):
    """Runs `prog` on `args` under autograd: `@f_forward` when a gradient is
    wanted (grad mode on and an argument requiring one) and the backward is
    compiled, `@f` otherwise (a backward through it then raises). Each
    argument is first cast to the compiled dtype (differentiably). Returns
    f's results: a tensor, or a tuple of several. `rank`: the handle of the
    rank a distributed program runs on (gdn_torch.distributed)."""
    args = [a.to(d) if a.dtype != d else a for a, d in zip(args, prog.plain.arg_dtypes)]
    want_grad = torch.is_grad_enabled() and any(a.requires_grad for a in args)
    if want_grad and prog.has_backward:
        results = ops.call(prog.library, prog.forward.name, args, check, rank)
        results = results[:prog.plain.num_results]
    else:
        results = ops.call(prog.library, prog.plain.name, args, check, rank)
    return tuple(results) if len(results) > 1 else results[0]


def compiled_weights(module, spec):
    """`module`'s parameters named as `spec.weights()` (transformers' names),
    in the compiled operand order; conv1d.weight [C, 1, W] as [C, W]."""
    out = []
    for name, _, _ in spec.weights():
        p = module.get_parameter(name)
        out.append(p.view(p.shape[0], p.shape[-1]) if name == "conv1d.weight" else p)
    return out


class GatedDeltaNet(torch.nn.Module):
    """A Gated DeltaNet layer over packed tokens, computed by code that
    gdn-compiler generated for it.

    `forward(x, cu_seqlens)`: x is [T, hidden] (or [1, T, hidden]), the
    tokens of all sequences concatenated; cu_seqlens [N + 1] (int32, or
    int64 within int32; on the CPU or on x's device) gives sequence i the
    tokens [cu[i], cu[i+1]). It is checked (starts at 0, non-decreasing,
    ends at T) without a host synchronisation: on the host when it arrives
    on the CPU, by the compiled library's first kernel otherwise (an
    asynchronous device-side assertion that prints the rule broken);
    `validate=False` skips the host check for a loop that builds its own offsets
    (gdn_torch.packing). Parameters
    carry the names (and, but for conv1d.weight's middle 1, the shapes) of
    transformers' Qwen3NextGatedDeltaNet (projections="qwen3_next") or
    Qwen3_5GatedDeltaNet ("qwen3_5"), so their state_dicts load as they are.
    Parameters of any float dtype are cast to the compiled ones (bf16, A_log
    and dt_bias fp32) inside autograd.

    Distributed (gdn_torch.distributed): `sp_group` and `cp_group`
    (torch.distributed process groups) or `ranks` (a RankLayout, e.g. the
    threads backend's) compile the spec for that SP x CP grid, with
    `cp_mode` (headwise, chunkwise, auto) and `cp_layout` (contiguous,
    zigzag). x is then this rank's shard of the pack's rows and cu_seqlens
    the whole pack's; weights are whole on every rank and their gradients
    come back reduced.
    """

    def __init__(self, spec: LayerSpec, device=None, dtype=torch.bfloat16, check=False,
                 validate=True, sp_group=None, cp_group=None, cp_mode="headwise",
                 cp_layout="contiguous", ranks=None):
        super().__init__()
        import dataclasses

        from . import distributed
        self.layout = ranks
        if sp_group is not None or cp_group is not None:
            self.layout = distributed.layout_from_groups(sp_group, cp_group)
        if self.layout is not None and self.layout.size > 1:
            spec = dataclasses.replace(spec, sp_ranks=self.layout.sp_ranks,
                                       cp_ranks=self.layout.cp_ranks, cp_mode=cp_mode,
                                       cp_layout=cp_layout)
        else:
            self.layout = None
        self.spec = spec
        self.check = check
        self.validate = validate
        for name, shape, dt in spec.weights():
            if name == "conv1d.weight":
                shape = (shape[0], 1, shape[1])
            dt = torch.float32 if dt == "f32" else dtype
            module, _, leaf = name.rpartition(".")
            owner = self
            if module:
                if not hasattr(self, module):
                    self.add_module(module, torch.nn.Module())
                owner = getattr(self, module)
            owner.register_parameter(leaf, torch.nn.Parameter(torch.empty(shape, device=device,
                                                                          dtype=dt)))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        for name, p in self.named_parameters():
            if name == "A_log":
                p.copy_(torch.empty_like(p).uniform_(0.01, 16).log())
            elif name == "dt_bias" or name == "norm.weight":
                p.fill_(1.0)
            elif name == "conv1d.weight":
                torch.nn.init.kaiming_uniform_(p, a=5 ** 0.5)
            else:
                torch.nn.init.normal_(p, std=0.02)

    @property
    def program(self):
        """The compiled program for the device the parameters are on."""
        return program(self.spec, self.A_log.device)

    def weights(self):
        """The weights in the compiled operand order."""
        return compiled_weights(self, self.spec)

    def forward(self, x, cu_seqlens, cu_seqlens_padded=None, initial_state=None):
        """y for x's rows; with a LayerSpec(padded=True), `cu_seqlens_padded`
        gives each sequence's slot (x has its last entry's rows) and the
        rows past each sequence's end are padding. With a
        LayerSpec(states=True): `initial_state` is (conv state [N, C, W-1],
        recurrent state [N, HV, K, V]) or None (zeros), and the result is
        (y, (conv state, recurrent state)) at each sequence's end, so that
        a sequence continued in the next call computes what one call over
        all of it would; gradients reach the initial states."""
        return run_layer(self.spec, self.layout, x, cu_seqlens, cu_seqlens_padded, self.weights(),
                         self.check, self.validate, initial_state)


def run_layer(spec, layout, x, cu_seqlens, cu_seqlens_padded, weights, check=False, validate=True,
              initial_state=None):
    """The compiled layer of `spec` on x ([T, hidden] or [1, T, hidden]: the
    pack's rows, or this rank's shard of them when `layout`, a RankLayout,
    distributes it), the offsets as GatedDeltaNet.forward takes them, and
    `weights` in the compiled operand order (cast under autograd); with
    spec.states, the initial states (None: zeros) and (y, final states)."""
    if initial_state is not None and not spec.states:
        raise ValueError("gdn_torch: initial_state needs a layer compiled with states: "
                         "LayerSpec(..., states=True)")
    if spec.padded != (cu_seqlens_padded is not None):
        raise ValueError(
            "gdn_torch: this layer was compiled for padded packs: give cu_seqlens_padded"
            if spec.padded else
            "gdn_torch: cu_seqlens_padded needs a layer compiled for padded packs: "
            "LayerSpec(..., padded=True)")
    batched = x.dim() == 3
    if batched:
        if x.shape[0] != 1:
            raise ValueError(f"packed input must be [T, hidden] or [1, T, hidden], got {tuple(x.shape)}")
        x = x[0]
    rank, tokens = 0, x.shape[0]
    if layout is not None:
        from .distributed import open_rank
        if x.device.type != "cuda":
            raise RuntimeError(f"gdn_torch: a layer distributed over SP {layout.sp_ranks} "
                               f"x CP {layout.cp_ranks} runs on CUDA tensors, got {x.device}")
        # x is this rank's shard; the offsets are the whole pack's.
        rank, tokens = open_rank(layout, x.device), x.shape[0] * layout.size
    # Offsets already on the device are validated by the library's first
    # kernel, which stops with a device-side assertion (GDN_TRAP_INVALID_PACKING).
    if spec.padded:
        offsets = list(prepare_padded(cu_seqlens, cu_seqlens_padded, tokens, x.device, validate,
                                      device_check=False))
    else:
        offsets = [prepare_cu_seqlens(cu_seqlens, tokens, x.device, validate, device_check=False)]
    states = _initial_states(spec, initial_state, offsets[0].shape[0] - 1, x.device) \
        if spec.states else []
    results = apply(program(spec, x.device), [x, *offsets, *weights, *states], check, rank)
    if not spec.states:
        return results[None] if batched else results
    y, conv_state, recurrent_state = results
    return (y[None] if batched else y), (conv_state, recurrent_state)


def _initial_states(spec, given, sequences, device):
    """The layer's initial states as the program takes them: `given` (a
    pair, checked against the spec's shapes) or zeros for `sequences`."""
    shapes = [((sequences, *shape[1:]), torch.float32 if dt == "f32" else torch.bfloat16)
              for shape, dt in spec.state_shapes()]
    if given is None:
        return [torch.zeros(shape, dtype=dtype, device=device) for shape, dtype in shapes]
    if not isinstance(given, (tuple, list)) or len(given) != 2:
        raise TypeError("gdn_torch: initial_state must be (conv state, recurrent state), the pair "
                        "a call with states returns")
    for state, (shape, _), name in zip(given, shapes, ("conv state", "recurrent state")):
        if tuple(state.shape) != shape:
            raise ValueError(f"gdn_torch: the initial {name} must have shape {list(shape)} (one "
                             f"per sequence of cu_seqlens), got {list(state.shape)}")
    return list(given)


# FLA's keyword options (fla-core 0.6) that gdn_torch takes and ignores:
# hints for FLA's own kernels that do not change the result.
_FLA_HINTS = ("cu_seqlens_cpu", "chunk_indices", "chunk_size")
# FLA's options that change what is computed, which the compiled program
# does not do: refused when set.
_FLA_UNSUPPORTED = ("use_gate_in_kernel", "A_log", "dt_bias", "use_beta_sigmoid_in_kernel",
                    "allow_neg_eigval", "state_v_first", "transpose_state_layout", "cp_context")


def _check_fla_options(options):
    """Refuses what FLA refuses (head_first, a chunk size it has no kernel
    for), its options gdn_torch does not implement, and any other name: a
    misspelt option must not silently leave the default in place."""
    for name, value in options.items():
        if name == "head_first":
            raise ValueError("gdn_torch.chunk_gated_delta_rule: head_first was removed from FLA; "
                             "pass q, k, v as [B, T, H, ...]")
        if name == "chunk_size":
            if value not in (16, 32, 64):
                raise ValueError(f"gdn_torch.chunk_gated_delta_rule: chunk_size must be 16, 32 "
                                 f"or 64 (FLA's), got {value!r}")
        elif name in _FLA_UNSUPPORTED:
            if value is not None and value is not False:
                raise NotImplementedError(
                    f"gdn_torch.chunk_gated_delta_rule: {name} is not supported")
        elif name not in _FLA_HINTS:
            raise TypeError(f"gdn_torch.chunk_gated_delta_rule: unexpected keyword argument "
                            f"{name!r} (FLA's options: scale, initial_state, output_final_state, "
                            f"use_qk_l2norm_in_kernel, cu_seqlens, {', '.join(_FLA_HINTS)})")


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None,
                           output_final_state=False, use_qk_l2norm_in_kernel=False,
                           cu_seqlens=None, check=False, validate=True, **kwargs):
    """FLA's `fla.ops.gated_delta_rule.chunk_gated_delta_rule`, on the
    compiled delta rule (forward) and its backward kernels.

    q, k: [B, T, H, K]; v: [B, T, HV, V] (bf16; HV a multiple of H);
    g (log decay), beta: [B, T, HV]; initial_state: [N, HV, K, V];
    cu_seqlens: [N + 1] with B == 1, else B sequences of T tokens; int32
    (or int64 within int32), checked as GatedDeltaNet's (validate=False
    skips the value checks).
    Returns (o [B, T, HV, V], final_state [N, HV, K, V] fp32 or None).
    Gradients reach q, k, v, g, beta and initial_state.

    Differences from FLA: q, k, v must be bf16 (the kernels' type); g, beta
    and the states are computed in fp32 whatever their dtype;
    `use_qk_l2norm_in_kernel` compiles the L2 norm of q and k into the
    program (one kernel each way; fp32 inside, eps 1e-6 inside the root,
    rounded to q's dtype, as FLA's l2norm_fwd does); FLA's hints
    cu_seqlens_cpu, chunk_indices and chunk_size are taken and ignored (the
    result does not depend on them); its options that change the result
    (use_gate_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval,
    state_v_first, cp_context) are refused when set, and so is any other
    keyword.
    """
    _check_fla_options(kwargs)
    if q.dtype != torch.bfloat16 or k.dtype != torch.bfloat16 or v.dtype != torch.bfloat16:
        raise TypeError(f"gdn_torch.chunk_gated_delta_rule: q, k, v must be bf16, got "
                        f"{q.dtype}, {k.dtype}, {v.dtype}")
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    if k.shape != q.shape:
        raise ValueError(f"q and k must have the same shape, got {tuple(q.shape)} and {tuple(k.shape)}")
    if HV % H:
        raise ValueError(f"value heads ({HV}) must be a multiple of key heads ({H})")
    if cu_seqlens is not None:
        if B != 1:
            raise ValueError(f"with cu_seqlens the batch size must be 1, got {B}")
        cu = prepare_cu_seqlens(cu_seqlens, T, q.device, validate, device_check=False)
    else:
        cu = torch.arange(0, (B + 1) * T, T, device=q.device, dtype=torch.int32)
    # Without an initial state, the program that takes none; without
    # output_final_state, the one that returns o alone (no zeros to fill for
    # either, nor a final-state cotangent in the backward); with
    # use_qk_l2norm_in_kernel, the one that normalises q and k itself.
    spec = DeltaRuleSpec(H, HV, K, V, None if scale is None or scale == K ** -0.5 else float(scale),
                         initial_state=initial_state is not None,
                         final_state=bool(output_final_state),
                         qk_l2norm=bool(use_qk_l2norm_in_kernel))
    states = [] if initial_state is None else [initial_state]
    results = apply(program(spec, q.device),
                    [q.reshape(B * T, H, K), k.reshape(B * T, H, K), v.reshape(B * T, HV, V),
                     g.reshape(B * T, HV), beta.reshape(B * T, HV), *states, cu],
                    check)
    o, final_state = results if output_final_state else (results, None)
    return o.reshape(B, T, HV, V), final_state
