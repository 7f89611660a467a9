#===- compiler.py - GDN programs for the PyTorch extension, compiled -------===#
#
# The PyTorch extension calls code that gdn-opt and gdn-translate generate.
# This module writes the IR of the programs it needs (a whole layer, or the
# bare delta rule behind the FLA-signature function), runs the compiler on it
# and nvcc on the result, and keeps the libraries in a cache keyed by the
# spec, the GPU architecture and the compiler's identity (a digest of its
# tools, gdnrt and the kernel headers), so that a compiler update never
# loads stale kernels and a machine with a GPU but without the compiler can
# use libraries compiled elsewhere.
#
# It imports neither torch nor anything outside the standard library: it runs
# where the compiler is (to fill a cache) as well as inside the extension.
#
#   python -m gdn_torch compile layer --projections qwen3_next \
#       --hidden 256 --key-heads 2 --value-heads 4 --print-ir
#   python -m gdn_torch fill-cache specs.json --cache DIR --arch sm_90a
#   python -m gdn_torch list --cache DIR
#
# (python3 python/gdn_torch/compiler.py takes the same arguments.)
#
#===------------------------------------------------------------------------===#

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys

_SOURCE_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class CompilerUnavailable(RuntimeError):
    """The library is not in the cache and this machine cannot compile it."""


# ----------------------------------------------------------------------------
# Programs
# ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LayerSpec:
    """A GDN layer, as `gdn.layer` takes it (docs/spec.md, gdn.layer).

    `projections` is `qwen3_next` (in_proj_qkvz interleaved per key-head
    group, in_proj_ba) or `qwen3_5` (in_proj_qkv, in_proj_z, in_proj_b,
    in_proj_a). Activations and weights are bf16, A_log and dt_bias fp32;
    the token count is dynamic, the pack has no alignment padding.
    `f32_projections` (the default) keeps the projection outputs that feed
    the conv and the gate in fp32 inside the compiled layer
    (gdn-expand-layer's f32-projections, docs/precision.md): that is what
    holds the output within docs/spec.md's 5e-3 of float64. False stores
    them in bf16 like every bf16 implementation: about 1.2x faster forward,
    1.1x forward + backward, and the output's error near 6e-3. The name of
    a bf16-projection layer ends in `_bf16p`.

    `sp_ranks` and `cp_ranks` distribute the layer (docs/parallel.md):
    sequence parallelism over `sp_ranks` (gdn-sequence-parallel: each rank
    holds T / sp_ranks rows of x and y) and context parallelism over
    `cp_ranks` (gdn-context-parallel, `cp_mode` headwise, chunkwise or auto,
    `cp_layout` contiguous or zigzag shards of the packed tokens; the
    offsets stay global). The program is then the one every rank runs,
    with its collectives on the SP and CP groups bound to its gdnrt context.

    `padded` packs each sequence in a slot of its own, possibly longer
    (alignment padding, as Megatron's cu_seqlens_q_padded): the layer then
    takes cu_padded after cu_seqlens, x has cu_padded[-1] rows, and the
    rows past a sequence's end are padding (docs/spec.md, packings).

    `states` gives the layer initial states and returns its final ones
    (gdn.layer's initial_states): the conv's last W - 1 inputs
    [N, C, W-1] (f32 with f32 projections, else bf16) and the delta rule's
    state [N, HV, K, V] (f32), after the weights; the results are y, then
    the two final states. One rank only (no sp_ranks or cp_ranks).

    `save` is what the forward keeps for the backward (gdn-generate-backward's
    save=, docs/backward.md): `inputs` (the default) keeps the projections'
    and the delta rule's outputs, 32.1 KiB a token at Qwen3-Next-80B's
    shape, and the backward recomputes the prologue and the gated RMSNorm;
    `operands` keeps what those expensive ops read too (q, k, v, g, beta and
    the normed output: 56.4 KiB a token there) and recomputes neither, a
    faster backward for more memory. The name of an `operands` layer ends in
    `_saveoperands`.
    """
    projections: str
    hidden: int
    key_heads: int
    value_heads: int
    head_dim_k: int = 128
    head_dim_v: int = 128
    conv_width: int = 4
    norm_eps: float = 1e-6
    f32_projections: bool = True
    sp_ranks: int = 1
    cp_ranks: int = 1
    cp_mode: str = "headwise"
    cp_layout: str = "contiguous"
    padded: bool = False
    states: bool = False
    save: str = "inputs"

    def __post_init__(self):
        if self.projections not in ("qwen3_next", "qwen3_5"):
            raise ValueError(f"projections must be qwen3_next or qwen3_5, not {self.projections!r}")
        if self.sp_ranks < 1 or self.cp_ranks < 1:
            raise ValueError(f"sp_ranks and cp_ranks must be at least 1, got {self.sp_ranks} and "
                             f"{self.cp_ranks}")
        if self.cp_mode not in ("headwise", "chunkwise", "auto"):
            raise ValueError(f"cp_mode must be headwise, chunkwise or auto, not {self.cp_mode!r}")
        if self.cp_layout not in ("contiguous", "zigzag"):
            raise ValueError(f"cp_layout must be contiguous or zigzag, not {self.cp_layout!r}")
        if self.save not in ("inputs", "operands"):
            raise ValueError(f"save must be inputs or operands, not {self.save!r}")
        if self.value_heads % self.key_heads:
            raise ValueError(f"value heads ({self.value_heads}) must be a multiple of key heads "
                             f"({self.key_heads})")
        if self.states and (self.sp_ranks > 1 or self.cp_ranks > 1):
            raise ValueError("a layer with states runs on one rank: states with sp_ranks or "
                             "cp_ranks are not supported")

    @property
    def conv_channels(self):
        return 2 * self.key_heads * self.head_dim_k + self.value_heads * self.head_dim_v

    def state_shapes(self):
        """(shape, dtype) of the conv's and the delta rule's state, with the
        sequence count as None."""
        conv = "f32" if self.f32_projections else "bf16"
        return [((None, self.conv_channels, self.conv_width - 1), conv),
                ((None, self.value_heads, self.head_dim_k, self.head_dim_v), "f32")]


    @property
    def name(self):
        eps = "" if self.norm_eps == 1e-6 else "_e" + _digest(repr(self.norm_eps))
        bf16p = "" if self.f32_projections else "_bf16p"
        sp = f"_sp{self.sp_ranks}" if self.sp_ranks > 1 else ""
        cp = (f"_cp{self.cp_ranks}{self.cp_mode}{'_zigzag' if self.cp_layout == 'zigzag' else ''}"
              if self.cp_ranks > 1 else "")
        padded = "_padded" if self.padded else ""
        states = "_states" if self.states else ""
        save = "" if self.save == "inputs" else "_save" + self.save
        return (f"layer_{self.projections}_d{self.hidden}_h{self.key_heads}x{self.value_heads}"
                f"_k{self.head_dim_k}v{self.head_dim_v}_w{self.conv_width}{eps}{bf16p}{padded}"
                f"{states}{save}{sp}{cp}")

    def weights(self):
        """(name, shape, dtype) of each weight, in the layer's operand order.

        Names are those of transformers' Qwen3NextGatedDeltaNet /
        Qwen3_5GatedDeltaNet (`conv1d.weight` there is [C, 1, W], here [C, W]).
        """
        h, hv, dk, dv = self.key_heads, self.value_heads, self.head_dim_k, self.head_dim_v
        d, c = self.hidden, self.conv_channels
        if self.projections == "qwen3_next":
            proj = [("in_proj_qkvz.weight", (2 * h * dk + 2 * hv * dv, d), "bf16"),
                    ("in_proj_ba.weight", (2 * hv, d), "bf16")]
        else:
            proj = [("in_proj_qkv.weight", (c, d), "bf16"),
                    ("in_proj_z.weight", (hv * dv, d), "bf16"),
                    ("in_proj_b.weight", (hv, d), "bf16"),
                    ("in_proj_a.weight", (hv, d), "bf16")]
        return proj + [("conv1d.weight", (c, self.conv_width), "bf16"),
                       ("A_log", (hv,), "f32"),
                       ("dt_bias", (hv,), "f32"),
                       ("norm.weight", (dv,), "bf16"),
                       ("out_proj.weight", (d, hv * dv), "bf16")]

    def ir(self):
        d = self.hidden
        weights = self.weights()
        ssa = ["%" + name.replace(".weight", "") for name, _, _ in weights]
        params = ",\n    ".join(f"{v}: {_tensor(shape, dt)}" for v, (_, shape, dt) in zip(ssa, weights))
        names = ", ".join(ssa)
        types = ", ".join(_tensor(shape, dt) for _, shape, dt in weights)
        if self.padded:
            offsets = "%cu: tensor<?xi32>, %cu_padded: tensor<?xi32>"
            packing_type = "!gdn.packing<seqs = ?, tokens = ?, padded>"
            packing = (f"gdn.packing %cu padded %cu_padded : tensor<?xi32>, tensor<?xi32> -> "
                       f"{packing_type}")
        else:
            offsets = "%cu: tensor<?xi32>"
            packing_type = "!gdn.packing<seqs = ?, tokens = ?>"
            packing = f"gdn.packing %cu : tensor<?xi32> -> {packing_type}"
        y_type = f"tensor<?x{d}xbf16>"
        state_types = [_tensor(["?", *shape[1:]], dt) for shape, dt in self.state_shapes()]
        states_arg, states_use, states_types, results, returned, result_types = \
            "", "", "", "%y", "%y", y_type
        if self.states:
            states_arg = f",\n    %conv0: {state_types[0]}, %s0: {state_types[1]}"
            states_use = "\n      initial_states(%conv0, %s0)"
            states_types = f", {state_types[0]}, {state_types[1]}"
            results, returned = "%y, %conv_t, %s_t", "%y, %conv_t, %s_t"
            result_types = f"({y_type}, {state_types[0]}, {state_types[1]})"
        return f"""// {self.name}: generated by python/gdn_torch/compiler.py
func.func @{self.name}(
    %x: {y_type}, {offsets},
    {params}{states_arg})
    -> {result_types} {{
  %p = {packing}
  {results} = gdn.layer %x, %p weights({names}){states_use}
      {{projections = #gdn.projections<{self.projections}>, key_heads = {self.key_heads} : i64,
       value_heads = {self.value_heads} : i64, head_dim_k = {self.head_dim_k} : i64,
       head_dim_v = {self.head_dim_v} : i64, conv_width = {self.conv_width} : i64,
       norm_eps = {_f64(self.norm_eps)} : f64}}
      : ({y_type}, {packing_type}, {types}{states_types})
      -> {result_types}
  return {returned} : {result_types.strip("()")}
}}
"""


@dataclasses.dataclass(frozen=True)
class DeltaRuleSpec:
    """The gated delta rule alone (`gdn.delta_rule` with an initial state,
    returning o and the final states): what FLA's chunk_gated_delta_rule
    computes. q, k, v bf16; g, beta and the states fp32. Without
    `initial_state` the program takes none (every state starts at zero):
    no zero buffer to fill and read. Without `final_state` it returns o
    alone: the forward writes no final states, and the backward takes no
    cotangent for them (no zero buffer of N x HV x K x V floats to fill
    and read each step, 2 MiB a sequence at K = V = 128 and 32 heads).
    With `qk_l2norm` it L2-normalises q and k itself (`gdn.l2norm`, eps
    1e-6 inside the root: FLA's use_qk_l2norm_in_kernel), one kernel each
    way instead of PyTorch's chain of elementwise ops. `save` is what the
    forward keeps for the backward (gdn-generate-backward's save=):
    `operands` (the default) keeps the normalised q and k, as FLA does (the
    size of q and k again), so the backward reads them instead of
    normalising q and k a second time; `inputs` recomputes them. Without
    `qk_l2norm` the two keep the same (the delta rule's operands are the
    arguments)."""
    key_heads: int
    value_heads: int
    head_dim_k: int = 128
    head_dim_v: int = 128
    scale: float | None = None  # None: head_dim_k ** -0.5
    initial_state: bool = True
    final_state: bool = True
    qk_l2norm: bool = False
    save: str = "operands"

    def __post_init__(self):
        if self.save not in ("inputs", "operands"):
            raise ValueError(f"save must be inputs or operands, not {self.save!r}")
        if self.value_heads % self.key_heads:
            raise ValueError(f"value heads ({self.value_heads}) must be a multiple of key heads "
                             f"({self.key_heads})")

    @property
    def name(self):
        scale = "" if self.scale is None else "_s" + _digest(repr(float(self.scale)))
        zero = "" if self.initial_state else "_zero_state"
        final = "" if self.final_state else "_no_final_state"
        norm = ""
        if self.qk_l2norm:
            norm = "_l2norm" if self.save == "operands" else "_l2norm_recomputed"
        return (f"delta_rule_h{self.key_heads}x{self.value_heads}"
                f"_k{self.head_dim_k}v{self.head_dim_v}{scale}{zero}{final}{norm}")

    def ir(self):
        h, hv, dk, dv = self.key_heads, self.value_heads, self.head_dim_k, self.head_dim_v
        qk, vv = f"tensor<?x{h}x{dk}xbf16>", f"tensor<?x{hv}x{dv}xbf16>"
        gate, state = f"tensor<?x{hv}xf32>", f"tensor<?x{hv}x{dk}x{dv}xf32>"
        scale = "" if self.scale is None else f" {{scale = {_f64(self.scale)} : f64}}"
        s0_arg, s0_use, s0_type = ((f"\n    %s0: {state},", " initial_state(%s0)", f", {state}")
                                   if self.initial_state else ("", "", ""))
        # Without final_state, %s has no use: lowering drops the final
        # states and the backward their cotangent.
        results, returned = ((f"{vv}, {state}", "%o, %s") if self.final_state
                             else (vv, "%o"))
        # q and k normalised first: gdn.l2norm, eps 1e-6 (its default).
        norm, qk_in = ((f"\n  %qn = gdn.l2norm %q : {qk}\n  %kn = gdn.l2norm %k : {qk}",
                        "%qn, %kn") if self.qk_l2norm else ("", "%q, %k"))
        return f"""// {self.name}: generated by python/gdn_torch/compiler.py
func.func @{self.name}(%q: {qk}, %k: {qk}, %v: {vv}, %g: {gate}, %beta: {gate},{s0_arg}
    %cu: tensor<?xi32>) -> ({results}) {{
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>{norm}
  %o, %s = gdn.delta_rule {qk_in}, %v, %g, %beta, %p{s0_use}{scale}
      : ({qk}, {qk}, {vv}, {gate}, {gate}, !gdn.packing<seqs = ?, tokens = ?>{s0_type})
      -> ({vv}, {state})
  return {returned} : {results}
}}
"""


def _tensor(shape, dtype):
    return "tensor<" + "x".join(str(s) for s in shape) + f"x{dtype}>"


def _f64(value):
    # MLIR wants a digit after the point: 1.0e-06, not 1e-06.
    mantissa, _, exponent = repr(float(value)).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


def _digest(text):
    return hashlib.sha1(text.encode()).hexdigest()[:8]


# ----------------------------------------------------------------------------
# Compiling and the cache
# ----------------------------------------------------------------------------

# The pipeline: expand the layer, write @f_forward / @f_backward (save the
# projections' and the delta rule's outputs, and with save=operands what
# they read, a DeltaRuleSpec's normalised q and k; recompute the rest),
# lower.
def train_passes(spec):
    expand = "--gdn-expand-layer"
    if getattr(spec, "f32_projections", False):
        expand += "=f32-projections=true"
    passes = [expand]
    if getattr(spec, "sp_ranks", 1) > 1:
        passes.append(f"--gdn-sequence-parallel=ranks={spec.sp_ranks}")
    if getattr(spec, "cp_ranks", 1) > 1:
        passes.append(f"--gdn-context-parallel=ranks={spec.cp_ranks} mode={spec.cp_mode} "
                      f"layout={spec.cp_layout}")
        if spec.cp_layout == "zigzag":
            passes.append("--gdn-hoist-layouts")
    return passes + [f"--gdn-generate-backward=save={getattr(spec, 'save', 'inputs')}"]


def pipeline_passes(spec):
    return train_passes(spec) + ["--gdn-pipeline"]


ARCHES = ("sm_90a", "portable")


def cache_dirs():
    """Where compiled libraries are looked for, first to last."""
    dirs = [d for d in os.environ.get("GDN_TORCH_CACHE", "").split(os.pathsep) if d]
    dirs.append(os.path.join(os.path.expanduser("~"), ".cache", "gdn_torch"))
    return dirs


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _trees():
    """Where the compiler's files may be, first to last: a build tree
    (GDN_BUILD_DIR), an installed prefix (GDN_PREFIX), the source tree's
    build/."""
    return [d for d in (os.environ.get("GDN_BUILD_DIR"), os.environ.get("GDN_PREFIX"),
                        os.path.join(_SOURCE_ROOT, "build")) if d]


def find_tool(name, env):
    """A compiler tool: its variable (GDN_OPT, ...), then bin/ of each
    tree, then PATH."""
    for candidate in (os.environ.get(env), *[os.path.join(t, "bin", name) for t in _trees()],
                      shutil.which(name)):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def gdnrt_dir():
    """The folder of libgdnrt.so: GDN_GDNRT_DIR, lib/ of each tree, or the
    one an installed gdn_torch carries; None if none."""
    for candidate in (os.environ.get("GDN_GDNRT_DIR"), *[os.path.join(t, "lib") for t in _trees()],
                      os.path.join(_PACKAGE, "lib")):
        if candidate and os.path.isfile(os.path.join(candidate, "libgdnrt.so")):
            return candidate
    return None


def include_dirs():
    """The kernel headers and gdnrt's: GDN_RUNTIME_INCLUDE (folders separated
    by os.pathsep), else the source tree's (kept apart), else an installed
    prefix's or an installed gdn_torch's (merged into one folder)."""
    if os.environ.get("GDN_RUNTIME_INCLUDE"):
        return os.environ["GDN_RUNTIME_INCLUDE"].split(os.pathsep)
    source = [os.path.join(_SOURCE_ROOT, "kernels", "include"),
              os.path.join(_SOURCE_ROOT, "runtime", "include")]
    if all(os.path.isdir(d) for d in source):
        return source
    for merged in [os.path.join(t, "include") for t in _trees()] + [os.path.join(_PACKAGE, "include")]:
        if os.path.isfile(os.path.join(merged, "gdn", "runtime", "gdnrt.h")):
            return [merged]
    return source


_identities = {}


def compiler_identity():
    """What this machine's compiler would make of a spec, as a digest: the
    bytes of gdn-opt, gdn-translate and libgdnrt.so and of every kernel and
    runtime header. A library compiled by another compiler has another
    digest, so a compiler update never loads stale kernels. None where the
    compiler is not (a GPU host using a cache filled elsewhere)."""
    opt, translate, gdnrt = (find_tool("gdn-opt", "GDN_OPT"),
                             find_tool("gdn-translate", "GDN_TRANSLATE"), gdnrt_dir())
    if not (opt and translate and gdnrt):
        return None
    files = [opt, translate, os.path.join(gdnrt, "libgdnrt.so")]
    for folder in include_dirs():
        for where, _, names in sorted(os.walk(folder)):
            files += [os.path.join(where, n) for n in sorted(names)]
    key = tuple((f, os.stat(f).st_size, os.stat(f).st_mtime_ns) for f in files)
    if key not in _identities:
        digest = hashlib.sha256()
        for f in files:
            digest.update(os.path.relpath(f, os.path.dirname(f)).encode())
            with open(f, "rb") as stream:
                digest.update(hashlib.sha256(stream.read()).digest())
        _identities[key] = digest.hexdigest()[:16]
    return _identities[key]


def library_folder(spec, arch, identity):
    """A library's folder in a cache: the spec's name, the architecture and
    the compiler's identity."""
    return f"{spec.name}-{arch}-{identity}"


def _read_manifest(folder):
    manifest = os.path.join(folder, "manifest.json")
    if not os.path.isfile(manifest):
        return None
    try:
        with open(manifest) as f:
            entry = json.load(f)
        entry["library"] = os.path.join(folder, entry["library"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable: as if absent, so it is compiled again
    return entry


def find_library(spec, arch="sm_90a", identity="this compiler"):
    """The manifest of `spec`'s library for `arch` in a cache, or None.

    With a compiler here (or an explicit `identity`), only a library that
    compiler made counts. Without one (identity None), the newest library of
    the spec and architecture does: nothing here could make another. `arch`
    None takes any architecture (CPU tensors run in the interpreter, which
    reads the program, not the kernels). A manifest is used only for the
    very spec it was compiled from: a name may have meant another program to
    an older version."""
    if identity == "this compiler":
        identity = compiler_identity()
    wanted = dataclasses.asdict(spec)
    found = []
    for d in cache_dirs():
        if not os.path.isdir(d):
            continue
        if identity is not None and arch is not None:
            names = [library_folder(spec, arch, identity)]
        else:
            prefix = f"{spec.name}-{arch}-" if arch else f"{spec.name}-"
            names = [n for n in os.listdir(d) if n.startswith(prefix)]
        for name in names:
            entry = _read_manifest(os.path.join(d, name))
            if not entry or entry.get("spec") != wanted:
                continue
            if identity is not None and entry.get("compiler") != identity:
                continue
            if arch is not None and entry.get("arch") != arch:
                continue
            found.append(entry)
        if found:
            break
    return max(found, key=lambda e: e.get("compiled_at", 0)) if found else None


def _run(cmd, what):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{what} failed ({' '.join(cmd)}):\n{done.stdout}{done.stderr}")
    return done


def _install_gdnrt(gdnrt, cache):
    """The cache's one libgdnrt.so (the libraries find it through
    $ORIGIN/..), replaced atomically when this compiler's differs: a process
    that loaded the old one keeps it."""
    source, target = os.path.join(gdnrt, "libgdnrt.so"), os.path.join(cache, "libgdnrt.so")
    if os.path.isfile(target):
        with open(source, "rb") as a, open(target, "rb") as b:
            if a.read() == b.read():
                return
    # Per process and thread: fill-cache --jobs compiles in threads.
    import threading
    temporary = f"{target}.{os.getpid()}.{threading.get_ident()}"
    shutil.copy2(source, temporary)
    os.replace(temporary, target)


def compile_spec(spec, cache=None, arch="sm_90a", jobs=None, log=None):
    """Compiles `spec` for `arch` into `cache` (default: the first cache dir)
    and returns its manifest. Needs gdn-opt and gdn-translate (GDN_OPT,
    GDN_TRANSLATE, the source tree's build/bin or PATH), nvcc (NVCC or PATH)
    and libgdnrt.so (GDN_GDNRT_DIR or build/lib). Processes compiling the
    same library at once (the ranks of a job) take turns on a lock: the
    first compiles, the others find its result. `log`: a function told
    each step, for progress."""
    import fcntl

    if arch not in ARCHES:
        raise ValueError(f"arch must be one of {', '.join(ARCHES)}, not {arch!r}")
    opt, translate = find_tool("gdn-opt", "GDN_OPT"), find_tool("gdn-translate", "GDN_TRANSLATE")
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    gdnrt = gdnrt_dir()
    missing = [n for n, t in (("gdn-opt", opt), ("gdn-translate", translate),
                              ("libgdnrt.so", gdnrt)) if not t]
    if not os.path.exists(nvcc):
        missing.append("nvcc")
    if missing:
        raise CompilerUnavailable(
            f"{spec.name} ({arch}) is in no cache ({os.pathsep.join(cache_dirs())}) and this "
            f"machine cannot compile it: {', '.join(missing)} not found. Compile it where the "
            f"compiler is: put {json.dumps(spec_to_dict(spec))} in a list SPECS.json, run "
            f"python -m gdn_torch fill-cache SPECS.json --cache DIR --arch {arch} there, and "
            f"point GDN_TORCH_CACHE at DIR here.")
    log = log or (lambda message: None)
    identity = compiler_identity()
    cache = cache or cache_dirs()[0]
    os.makedirs(cache, exist_ok=True)
    folder = library_folder(spec, arch, identity)
    out = os.path.join(cache, folder)
    with open(os.path.join(cache, folder + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = _read_manifest(out)
        if done:
            return done
        _install_gdnrt(gdnrt, cache)
        work = os.path.join(cache, f".{folder}.{os.getpid()}")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        try:
            _compile_into(spec, arch, work, cache, opt, translate, nvcc, identity, log)
            # A folder without a manifest is what a killed compile left.
            shutil.rmtree(out, ignore_errors=True)
            os.rename(work, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return _read_manifest(out)


def _compile_into(spec, arch, out, cache, opt, translate, nvcc, identity, log):
    import time

    source = os.path.join(out, spec.name + ".mlir")
    with open(source, "w") as f:
        f.write(spec.ir())
    log(f"{spec.name}: gdn-opt (the training program, for the interpreter)")
    _run([opt, *train_passes(spec), source, "-o", os.path.join(out, spec.name + ".train.mlir")],
         "gdn-opt")
    log(f"{spec.name}: gdn-opt (lowering)")
    lowered = os.path.join(out, spec.name + ".lowered.mlir")
    # The wgmma scan needs sm_90a: the portable build re-selects without it,
    # within the shared memory every sm_80+ GPU gives a block (99 KiB).
    portable = (["--gdn-select-kernels=wgmma=false shared-bytes=101376"]
                if arch == "portable" else [])
    _run([opt, *pipeline_passes(spec), *portable, source, "-o", lowered], "gdn-opt")
    cu, header = os.path.join(out, "lib" + spec.name + ".cu"), os.path.join(out, "lib" + spec.name + ".h")
    log(f"{spec.name}: gdn-translate")
    _run([translate, "--gdn-to-cuda", lowered, "-o", cu], "gdn-translate --gdn-to-cuda")
    _run([translate, "--gdn-to-cuda-header", lowered, "-o", header], "gdn-translate --gdn-to-cuda-header")
    gencode = {"sm_90a": "-gencode=arch=compute_90a,code=sm_90a",
               "portable": "-gencode=arch=compute_80,code=compute_80"}[arch]
    library = "lib" + spec.name + ".so"
    log(f"{spec.name}: nvcc ({arch})")
    # GDN_TRAP_INVALID_PACKING: invalid offsets stop the first kernel with a
    # device-side assertion (gdn/device/packing.cuh) rather than leave NaN
    # for a _check that a training loop never calls.
    _run([nvcc, "-std=c++17", "-O3", gencode, "-DGDN_TRAP_INVALID_PACKING",
          *[f"-I{d}" for d in include_dirs()], "-Xcompiler",
          "-fPIC", "-shared", "-cudart", "shared", cu, "-L", cache, "-lgdnrt", "-Xlinker",
          "-rpath=$ORIGIN/..", "-o", os.path.join(out, library)], "nvcc")
    with open(header) as f:
        text = f.read()
    functions = {}
    for suffix in ("", "_forward", "_backward"):
        fn = spec.name + suffix
        # A whole-function entry point exists only when every op was lowered.
        functions[suffix.lstrip("_") or "plain"] = fn if f"int gdn_{fn}(" in text else None
    manifest = {"name": spec.name, "library": library, "spec": dataclasses.asdict(spec),
                "kind": type(spec).__name__, "functions": functions, "arch": arch,
                "compiler": identity, "compiled_at": time.time()}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def library_for(spec, arch="sm_90a"):
    """The manifest of `spec`'s library for `arch` (None: any): from a cache,
    else compiled now."""
    return find_library(spec, arch) or compile_spec(spec, arch=arch or "sm_90a")


# ----------------------------------------------------------------------------
# Command line: print the IR, or fill a cache
# ----------------------------------------------------------------------------


def _spec_options(parser):
    parser.add_argument("kind", choices=["layer", "delta-rule"])
    parser.add_argument("--projections", default="qwen3_next", choices=["qwen3_next", "qwen3_5"])
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--key-heads", type=int, default=16)
    parser.add_argument("--value-heads", type=int, default=32)
    parser.add_argument("--head-dim-k", type=int, default=128)
    parser.add_argument("--head-dim-v", type=int, default=128)
    parser.add_argument("--conv-width", type=int, default=4)
    parser.add_argument("--bf16-projections", action="store_true",
                        help="store the projection outputs that feed the conv and the gate in "
                             "bf16 (faster; the output's error near 6e-3, docs/precision.md)")
    parser.add_argument("--scale", type=float, default=None)
    parser.add_argument("--sp-ranks", type=int, default=1, help="sequence parallelism over N ranks")
    parser.add_argument("--cp-ranks", type=int, default=1, help="context parallelism over N ranks")
    parser.add_argument("--cp-mode", default="headwise", choices=["headwise", "chunkwise", "auto"])
    parser.add_argument("--cp-layout", default="contiguous", choices=["contiguous", "zigzag"])
    parser.add_argument("--padded", action="store_true",
                        help="sequences in padded slots (the layer takes cu_padded)")
    parser.add_argument("--save", default=None, choices=["inputs", "operands"],
                        help="what the forward keeps for the backward (LayerSpec.save, default "
                             "inputs; DeltaRuleSpec.save, default operands)")
    parser.add_argument("--zero-state", action="store_true",
                        help="a delta rule without an initial state (every state starts at zero)")
    parser.add_argument("--no-final-state", action="store_true",
                        help="a delta rule that returns o alone, not the final states")
    parser.add_argument("--qk-l2norm", action="store_true",
                        help="a delta rule that L2-normalises q and k itself "
                             "(FLA's use_qk_l2norm_in_kernel)")


def _spec_of(args):
    if args.kind == "layer":
        return LayerSpec(args.projections, args.hidden, args.key_heads, args.value_heads,
                         args.head_dim_k, args.head_dim_v, args.conv_width,
                         f32_projections=not args.bf16_projections, sp_ranks=args.sp_ranks,
                         cp_ranks=args.cp_ranks, cp_mode=args.cp_mode, cp_layout=args.cp_layout,
                         padded=args.padded, save=args.save or "inputs")
    return DeltaRuleSpec(args.key_heads, args.value_heads, args.head_dim_k, args.head_dim_v,
                         args.scale, initial_state=not args.zero_state,
                         final_state=not args.no_final_state, qk_l2norm=args.qk_l2norm,
                         save=args.save or "operands")


_KINDS = {"layer": LayerSpec, "delta-rule": DeltaRuleSpec}


def spec_to_dict(spec):
    """The fill-cache entry of `spec` (spec_from_dict's inverse)."""
    kind = next(k for k, c in _KINDS.items() if isinstance(spec, c))
    return {"kind": kind, **dataclasses.asdict(spec)}


def spec_from_dict(entry):
    """A spec from one entry of a fill-cache list: {"kind": "layer" or
    "delta-rule", then the fields of LayerSpec or DeltaRuleSpec}."""
    entry = dict(entry)
    kind = entry.pop("kind", None)
    if kind not in _KINDS:
        raise ValueError(f"a spec needs \"kind\": \"layer\" or \"delta-rule\", got {kind!r}")
    fields = {f.name for f in dataclasses.fields(_KINDS[kind])}
    unknown = sorted(set(entry) - fields)
    if unknown:
        raise ValueError(f"{kind} spec: unknown field(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(fields))}")
    return _KINDS[kind](**entry)


def main(argv=None):
    """python -m gdn_torch (or python3 python/gdn_torch/compiler.py):

      compile layer|delta-rule [spec options] [--cache DIR] [--arch A]
      fill-cache SPECS.json [--cache DIR] [--arch A ...] [--jobs N]
      list [--cache DIR]
      layer|delta-rule [spec options] [--print-ir | --print-passes | --cache DIR]
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("layer", "delta-rule"):
        argv.insert(0, "compile")
    parser = argparse.ArgumentParser(prog="python -m gdn_torch",
                                     description="Compile GDN programs for gdn_torch and keep "
                                                 "them in a kernel cache (docs/torch.md).")
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("compile", help="compile one spec (or print its program)")
    _spec_options(one)
    one.add_argument("--print-ir", action="store_true", help="print the program and stop")
    one.add_argument("--print-passes", action="store_true",
                     help="print the gdn-opt passes of the training program and stop")
    one.add_argument("--cache", default=None, help="compile into this cache folder")
    one.add_argument("--arch", default="sm_90a", choices=ARCHES)
    fill = commands.add_parser("fill-cache", help="compile a list of specs into a cache")
    fill.add_argument("specs", help="a JSON list of specs: [{\"kind\": \"layer\", "
                                    "\"projections\": \"qwen3_next\", \"hidden\": 2048, ...}]")
    fill.add_argument("--cache", default=None, help="the cache folder (default: the first of "
                                                     "GDN_TORCH_CACHE, else ~/.cache/gdn_torch)")
    fill.add_argument("--arch", action="append", choices=ARCHES,
                      help="architectures to compile for (repeatable; default sm_90a)")
    fill.add_argument("--jobs", "-j", type=int, default=1,
                      help="compile this many specs at once (default 1)")
    listing = commands.add_parser("list", help="the libraries in the caches")
    listing.add_argument("--cache", default=None)
    args = parser.parse_args(argv)

    if args.command == "list":
        for d in [args.cache] if args.cache else cache_dirs():
            if not os.path.isdir(d):
                continue
            for name in sorted(os.listdir(d)):
                entry = _read_manifest(os.path.join(d, name))
                if entry:
                    have = ", ".join(k for k, v in entry["functions"].items() if v)
                    print(f"{os.path.join(d, name)}: {entry['name']} {entry.get('arch', '?')} "
                          f"compiler {entry.get('compiler', '?')} ({have})")
        return 0
    if args.command == "fill-cache":
        with open(args.specs) as f:
            specs = [spec_from_dict(e) for e in json.load(f)]
        arches = args.arch or ["sm_90a"]
        work = [(s, a) for s in specs for a in arches]
        total = len(work)

        def one(i, spec, arch):
            step = lambda message: print(f"[{i}/{total}] {message}", flush=True)  # noqa: E731
            manifest = compile_spec(spec, cache=args.cache, arch=arch, log=step)
            print(f"[{i}/{total}] {manifest['library']}", flush=True)

        # Each compile is a chain of processes (gdn-opt, gdn-translate, nvcc):
        # threads are enough to run several at once.
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for done in [pool.submit(one, i, s, a) for i, (s, a) in enumerate(work, 1)]:
                done.result()
        return 0
    spec = _spec_of(args)
    if args.print_ir:
        sys.stdout.write(spec.ir())
        return 0
    if args.print_passes:
        print(" ".join(pipeline_passes(spec)))
        return 0
    manifest = compile_spec(spec, cache=args.cache, arch=args.arch,
                            log=lambda message: print(message, file=sys.stderr, flush=True))
    print(json.dumps(manifest["functions"]), manifest["library"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
