#===- gdn_torch - GDN layers compiled by gdn-compiler, for PyTorch ---------===#
#
# The PyTorch half (gdn_torch.api: GatedDeltaNet, chunk_gated_delta_rule,
# program / apply over torch.ops.gdn_torch.call) needs torch; the compiler's
# half (gdn_torch.compiler: specs, compiling them, the kernel cache, and
# `python -m gdn_torch`) needs only the standard library, so a machine with
# the compiler but without torch can fill a cache for GPU hosts
# (docs/torch.md).
#
#===------------------------------------------------------------------------===#

from .compiler import DeltaRuleSpec, LayerSpec

try:
    import torch  # noqa: F401
except ImportError:  # the compiler's half alone
    __all__ = ["LayerSpec", "DeltaRuleSpec"]
else:
    from .api import (CompiledProgram, Entry, GatedDeltaNet, apply, build_extension,
                      chunk_gated_delta_rule, load_extension, program)

    __all__ = ["GatedDeltaNet", "chunk_gated_delta_rule", "CompiledProgram", "Entry", "apply",
               "program", "load_extension", "build_extension", "LayerSpec", "DeltaRuleSpec"]
