#===- hf.py - the compiled layer in place of transformers' GDN modules -----===#
#
#   import gdn_torch.hf
#   model = AutoModelForCausalLM.from_pretrained(...)     # Qwen3-Next, Qwen3.5
#   gdn_torch.hf.replace_gated_deltanet(model)            # every GDN layer, in place
#
# Each Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet becomes a
# TransformersGatedDeltaNet that holds the very same parameter modules
# (so state_dict keys, optimizers and checkpoints are unchanged) and runs the
# compiled layer (gdn_torch.apply) on the inputs transformers gives it:
#
#   - packed sequences, as transformers' varlen attention takes them: a batch
#     of one row and `cu_seq_lens_q` [N + 1], which a model's forward hands
#     down to its layers; or, called as a module, position_ids that restart
#     at 0 for each sequence (deriving offsets from them reads them on the
#     host, one synchronisation; the decoder layers of Qwen3-Next and
#     Qwen3.5 do not pass position_ids to their GDN layer, so through a
#     model only cu_seq_lens_q marks the sequences);
#   - padded batches [B, S, hidden] with an attention mask: each row one
#     sequence of S tokens with its padding zeroed, exactly what the module
#     it replaces computes (padding never reaches a real token: zero inputs
#     leave a zero state zero), with no synchronisation.
#
# Generation with a cache (decoding token by token) is the replaced module's
# own forward, on the shared parameters: the compiled layer is for training
# and prefill over whole sequences.
#
#===------------------------------------------------------------------------===#

import torch

from .api import apply, compiled_weights, program
from .compiler import LayerSpec
from .packing import prepare_cu_seqlens

_KINDS = {"Qwen3NextGatedDeltaNet": "qwen3_next", "Qwen3_5GatedDeltaNet": "qwen3_5"}


def spec_of(module):
    """The LayerSpec of one of transformers' GDN modules."""
    kind = _KINDS.get(type(module).__name__)
    if kind is None:
        raise TypeError(f"gdn_torch.hf: {type(module).__name__} is not one of "
                        f"{', '.join(_KINDS)}")
    if module.activation not in ("silu", "swish"):
        raise ValueError(f"gdn_torch.hf: the compiled conv applies SiLU; this module's "
                         f"activation is {module.activation!r}")
    return LayerSpec(kind, module.hidden_size, module.num_k_heads, module.num_v_heads,
                     module.head_k_dim, module.head_v_dim, module.conv_kernel_size,
                     float(module.layer_norm_epsilon))


class TransformersGatedDeltaNet(torch.nn.Module):
    """transformers' GDN module, computed by the compiled layer. Its
    submodules and parameters are the replaced module's own."""

    def __init__(self, reference, check=False, validate=True):
        super().__init__()
        self.spec = spec_of(reference)
        self.check, self.validate = check, validate
        self.layer_idx = getattr(reference, "layer_idx", None)
        self.layer_type = getattr(reference, "layer_type", None)
        for name, child in reference.named_children():
            self.add_module(name, child)
        for name, parameter in reference.named_parameters(recurse=False):
            self.register_parameter(name, parameter)
        # Not a submodule: its parameters are registered above already.
        object.__setattr__(self, "_reference", reference)

    def weights(self):
        """The weights in the compiled operand order."""
        return compiled_weights(self, self.spec)

    def forward(self, hidden_states, cache=None, attention_mask=None, **kwargs):
        if cache is not None or kwargs.get("cache_params") is not None:
            return self._reference(hidden_states, cache=cache, attention_mask=attention_mask,
                                   **kwargs)
        batch, tokens, hidden = hidden_states.shape
        cu = kwargs.get("cu_seq_lens_q")
        if cu is None and batch == 1 and kwargs.get("position_ids") is not None:
            cu = _offsets_from_positions(kwargs["position_ids"][0], tokens)
        if cu is not None:
            if batch != 1:
                raise ValueError(f"gdn_torch.hf: packed sequences (cu_seq_lens_q) come as one "
                                 f"row, got a batch of {batch}")
            x = hidden_states[0]
            cu = prepare_cu_seqlens(cu, tokens, x.device, self.validate, name="cu_seq_lens_q",
                                    device_check=False)
        else:
            if attention_mask is not None and attention_mask.dim() == 2:
                hidden_states = (hidden_states * attention_mask[:, :, None]).to(hidden_states.dtype)
            x = hidden_states.reshape(batch * tokens, hidden)
            cu = torch.arange(0, (batch + 1) * tokens, tokens, dtype=torch.int32, device=x.device)
        y = apply(program(self.spec, x.device), [x, cu, *self.weights()], self.check)
        return y.reshape(batch, tokens, hidden)


def _offsets_from_positions(positions, tokens):
    """cu_seqlens of a packed row whose positions restart at 0 for each
    sequence (one host synchronisation: the number of sequences)."""
    starts = torch.nonzero(positions == 0).flatten().to(torch.int32)
    if starts.numel() == 0 or int(starts[0]) != 0:
        raise ValueError("gdn_torch.hf: position_ids of a packed row must start at 0 "
                         "(or pass cu_seq_lens_q)")
    end = torch.tensor([tokens], dtype=torch.int32, device=positions.device)
    return torch.cat([starts, end]).cpu()


def replace_gated_deltanet(model, check=False, validate=True):
    """Replaces, in place, every Qwen3NextGatedDeltaNet and
    Qwen3_5GatedDeltaNet of `model` with a TransformersGatedDeltaNet on the
    same parameters. Returns how many it replaced."""
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child).__name__ in _KINDS:
                setattr(parent, name, TransformersGatedDeltaNet(child, check, validate))
                replaced += 1
    return replaced
