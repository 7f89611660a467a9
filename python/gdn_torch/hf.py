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
# With a cache (transformers' Cache: generation), a prefill of several
# tokens per row runs the compiled layer with states (LayerSpec(states=True)):
# it starts from the cache's conv and recurrent states, when a previous call
# left some (a prompt prefilled in chunks), and writes the final ones back
# with the cache's own update methods, so the decoding that follows reads
# what the replaced module would have left. transformers keeps the conv's
# last W inputs where the compiled layer keeps W - 1: the oldest, which the
# next step shifts out before it reads the window, is stored as 0. Decoding
# (one token per row), packed rows with a cache, and caches that record
# their past for rollback (intermediate recurrent states) run the replaced
# module's own forward, on the shared parameters.
#
#===------------------------------------------------------------------------===#

import dataclasses

import torch

from .api import apply, compiled_weights, program, run_layer
from .compiler import LayerSpec
from .packing import prepare_cu_seqlens

# The linear-attention state methods of transformers' Cache (5.25 has them,
# 5.17 not) that a prefill with a cache needs; test/lit.cfg.py asks for
# them too (feature transformers-cache-states).
CACHE_STATE_METHODS = ("get_conv_state", "get_recurrent_state", "update_conv_state",
                       "update_recurrent_state", "is_recording_past")

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
        given = cache if cache is not None else kwargs.get("cache_params")
        if given is not None:
            if self._prefills(hidden_states, given, kwargs):
                return self._prefill(hidden_states, given, attention_mask)
            # Under the name the caller used (older transformers: cache_params).
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
            x, cu = _padded_rows(hidden_states, attention_mask)
        y = apply(program(self.spec, x.device), [x, cu, *self.weights()], self.check)
        return y.reshape(batch, tokens, hidden)

    def _prefills(self, hidden_states, cache, kwargs):
        """Whether this call with a cache is a prefill the compiled layer
        runs: several tokens per row of a padded batch, into a cache layer
        that keeps one state per row (no past recorded for rollback) and
        counts its tokens where the count can be set right."""
        if hidden_states.shape[1] < 2 or kwargs.get("cu_seq_lens_q") is not None:
            return False
        # A cache without the linear-attention methods keeps the replaced
        # module's own forward.
        if not all(callable(getattr(cache, name, None)) for name in CACHE_STATE_METHODS):
            return False
        if cache.is_recording_past(self.layer_idx):
            return False
        layers = getattr(cache, "layers", None)
        if layers is None or self.layer_idx is None or self.layer_idx >= len(layers):
            return False
        return isinstance(getattr(layers[self.layer_idx], "cumulative_length_linear", None),
                          torch.Tensor)

    def _prefill(self, hidden_states, cache, attention_mask):
        """The compiled layer with states over each row, from the cache's
        states (if a previous call left any) to the ones it writes back."""
        batch, tokens, hidden = hidden_states.shape
        spec = dataclasses.replace(self.spec, states=True)
        width = spec.conv_width
        x, cu = _padded_rows(hidden_states, attention_mask)
        conv = cache.get_conv_state(self.layer_idx)
        recurrent = cache.get_recurrent_state(self.layer_idx)
        initial = None
        if conv is not None or recurrent is not None:
            (conv_shape, _), (recurrent_shape, _) = spec.state_shapes()
            conv = x.new_zeros((batch, *conv_shape[1:])) if conv is None \
                else conv[..., conv.shape[-1] - (width - 1):]
            recurrent = x.new_zeros((batch, *recurrent_shape[1:]), dtype=torch.float32) \
                if recurrent is None else recurrent
            initial = (conv, recurrent)
        y, (conv, recurrent) = run_layer(spec, None, x, cu, None, compiled_weights(self, spec),
                                         self.check, False, initial)
        # The cache's window is W wide, oldest first; the slot the compiled
        # state lacks is never read (see the file comment).
        window = torch.cat([conv.new_zeros(batch, conv.shape[1], 1), conv], -1)
        cache.update_conv_state(window.to(hidden_states.dtype), self.layer_idx,
                                conv_kernel_size=width)
        # update_conv_state counted the window's W columns; this call's
        # tokens are what the cache's length must grow by.
        cache.layers[self.layer_idx].cumulative_length_linear.add_(tokens - width)
        cache.update_recurrent_state(recurrent, self.layer_idx)
        return y.reshape(batch, tokens, hidden)


def _padded_rows(hidden_states, attention_mask):
    """x and cu_seqlens of a padded batch [B, S, hidden]: each row one
    sequence of S tokens, its padding (attention_mask 0) zeroed as the
    replaced module does."""
    batch, tokens, hidden = hidden_states.shape
    if attention_mask is not None and attention_mask.dim() == 2:
        hidden_states = (hidden_states * attention_mask[:, :, None]).to(hidden_states.dtype)
    x = hidden_states.reshape(batch * tokens, hidden)
    cu = torch.arange(0, (batch + 1) * tokens, tokens, dtype=torch.int32, device=x.device)
    return x, cu


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
