#===- megatron.py - the compiled layer in Megatron-LM's GDN module's place -===#
#
#   from gdn_torch.megatron import MegatronGatedDeltaNet
#   layer = MegatronGatedDeltaNet.from_config(config, pg_collection)   # a TransformerConfig
#   out, bias = layer(hidden_states, attention_mask, packed_seq_params=packed_seq_params)
#
# Megatron-LM's GatedDeltaNet (megatron/core/ssm/gated_delta_net.py) takes
# hidden_states [s, b, h] (s this rank's tokens: sharded over the tensor-
# parallel group under sequence parallelism, and over the CP group) and,
# for packed sequences, PackedSeqParams with qkv_format "thd" (b = 1),
# cu_seqlens_q (the real lengths, global offsets) and cu_seqlens_q_padded
# (each sequence's slot, padded for CP to a multiple of 2 x cp). This
# module takes the same arguments, holds the same parameters under the same
# names (in_proj.weight with the sections q, k, v, z, b, a one after the
# other; conv1d.weight [C, 1, W]; A_log; dt_bias; out_norm.weight;
# out_proj.weight), returns (out, None) like Megatron's (out_proj adds no
# bias), and computes it with the compiled Qwen3.5-layout layer
# (projections = qwen3_5: in_proj's sections are its four projections).
#
# How Megatron shards tokens, and the compiled layouts that match:
#
#   - CP: Megatron (Transformer Engine's THD partitioning, and the sbhd
#     load balancing) cuts every sequence's slot into 2 x cp pieces and
#     gives CP rank r pieces r and 2 x cp - 1 - r, sequence after sequence.
#     That is the compiled zigzag layout (docs/spec.md, zigzag shards), so
#     CP layers compile with cp_layout="zigzag"; the padded slots are the
#     padded packing (LayerSpec(padded=True)) when cu_seqlens_q_padded is
#     given.
#   - SP: the tensor-parallel group under sequence_parallel splits the CP
#     shard's rows contiguously, SP rank s holding piece s: the compiled
#     layouts' SP inside CP (docs/spec.md, SP inside CP).
#
# What differs from Megatron's module:
#
#   - weights are whole on every rank: the SP group runs the compiled
#     sequence-parallel program (projections on the rank's rows, heads
#     spread for the core), not Megatron's tensor parallelism, and the
#     weights' gradients come back summed over the SP x CP grid. A
#     checkpoint saved with TP > 1 is loaded after resharding it to TP = 1.
#     Tensor parallelism without sequence parallelism is refused;
#   - sbhd input with b > 1 under SP is refused (Megatron's SP splits s for
#     every batch row; the compiled layout wants each rank's rows in one
#     block): use packed sequences (thd), as Megatron does for GDN;
#   - the conv has no bias, the activation is SiLU, q and k are L2-normed
#     (Megatron's defaults for GDN); anything else is refused;
#   - attention_mask is ignored, as Megatron's module ignores it; inference
#     (inference_context) is refused, as Megatron's module refuses it.
#
#===------------------------------------------------------------------------===#

import dataclasses
import math

import torch

from .api import run_layer
from .compiler import LayerSpec


class MegatronGatedDeltaNet(torch.nn.Module):
    """Megatron-LM's GatedDeltaNet module (its forward's arguments, its
    parameters' names and shapes), computed by the compiled layer.

    `sp_group` (Megatron's tensor-parallel group under sequence
    parallelism) and `cp_group` distribute it, or `ranks` (a
    gdn_torch.distributed.RankLayout, e.g. the threads backend's); `cp_mode`
    is the compiled CP mode (headwise, chunkwise, auto). `input_layernorm=True` adds the
    RMSNorm Megatron's TE spec fuses into in_proj (in_proj.layer_norm_weight,
    computed here in PyTorch before the compiled layer). With
    `zero_centered_gamma` the norm weights hold gamma - 1, as Megatron's
    layernorm_zero_centered_gamma stores them."""

    def __init__(self, hidden_size, num_key_heads, num_value_heads, key_head_dim=128,
                 value_head_dim=128, conv_kernel_dim=4, layernorm_epsilon=1e-6,
                 zero_centered_gamma=False, input_layernorm=False, params_dtype=torch.float32,
                 device=None, sp_group=None, cp_group=None, cp_mode="headwise", check=False,
                 validate=True, A_init_range=(1, 16), ranks=None):
        super().__init__()
        from . import distributed
        self.spec = LayerSpec("qwen3_5", hidden_size, num_key_heads, num_value_heads, key_head_dim,
                              value_head_dim, conv_kernel_dim, float(layernorm_epsilon))
        self.layout = ranks
        if sp_group is not None or cp_group is not None:
            self.layout = distributed.layout_from_groups(sp_group, cp_group)
        if self.layout is not None:
            if self.layout.size == 1:
                self.layout = None
            else:
                self.spec = dataclasses.replace(self.spec, sp_ranks=self.layout.sp_ranks,
                                                cp_ranks=self.layout.cp_ranks, cp_mode=cp_mode,
                                                cp_layout="zigzag")
        self.zero_centered_gamma = zero_centered_gamma
        self.check, self.validate, self.A_init_range = check, validate, A_init_range
        self.eps = float(layernorm_epsilon)
        self.qk_dim, self.v_dim = key_head_dim * num_key_heads, value_head_dim * num_value_heads
        conv_dim = 2 * self.qk_dim + self.v_dim
        self.sections = [conv_dim, self.v_dim, num_value_heads, num_value_heads]
        make = lambda *shape: torch.nn.Parameter(torch.empty(*shape, device=device,  # noqa: E731
                                                             dtype=params_dtype))
        self.in_proj = torch.nn.Module()
        self.in_proj.weight = make(sum(self.sections), hidden_size)
        if input_layernorm:
            self.in_proj.layer_norm_weight = make(hidden_size)
        self.conv1d = torch.nn.Module()
        self.conv1d.weight = make(conv_dim, 1, conv_kernel_dim)
        self.dt_bias = make(num_value_heads)
        self.A_log = make(num_value_heads)
        self.out_norm = torch.nn.Module()
        self.out_norm.weight = make(value_head_dim)
        self.out_proj = torch.nn.Module()
        self.out_proj.weight = make(hidden_size, self.v_dim)
        self.reset_parameters()

    @classmethod
    def from_config(cls, config, pg_collection=None, **kwargs):
        """From a Megatron TransformerConfig (its linear_* GDN fields) and
        ProcessGroupCollection (tp: the SP group under sequence_parallel;
        cp)."""
        activation = getattr(getattr(config, "activation_func", None), "__name__", "silu")
        if activation not in ("silu", "swish"):
            raise ValueError(f"gdn_torch.megatron: the compiled conv applies SiLU; the config's "
                             f"activation_func is {activation}")
        tp = getattr(pg_collection, "tp", None) if pg_collection is not None else None
        cp = getattr(pg_collection, "cp", None) if pg_collection is not None else None
        tp_size = tp.size() if tp is not None else 1
        if tp_size > 1 and not getattr(config, "sequence_parallel", False):
            raise ValueError(f"gdn_torch.megatron: tensor parallelism ({tp_size} ranks) without "
                             f"sequence_parallel: the compiled layer keeps whole weights and runs "
                             f"the TP group as a sequence-parallel group; set sequence_parallel")
        return cls(config.hidden_size, config.linear_num_key_heads, config.linear_num_value_heads,
                   config.linear_key_head_dim, config.linear_value_head_dim,
                   config.linear_conv_kernel_dim, config.layernorm_epsilon,
                   zero_centered_gamma=getattr(config, "layernorm_zero_centered_gamma", False),
                   params_dtype=getattr(config, "params_dtype", torch.float32),
                   sp_group=tp if tp_size > 1 else None,
                   cp_group=cp if cp is not None and cp.size() > 1 else None, **kwargs)

    @torch.no_grad()
    def reset_parameters(self, init_std=0.02):
        """Megatron's initialisation: normal(0, init_std) projections,
        dt_bias 1, A = uniform(A_init_range), norms 1 (0 when zero-centred),
        the conv as nn.Conv1d's default."""
        torch.nn.init.normal_(self.in_proj.weight, std=init_std)
        torch.nn.init.normal_(self.out_proj.weight, std=init_std)
        torch.nn.init.kaiming_uniform_(self.conv1d.weight, a=math.sqrt(5))
        self.dt_bias.fill_(1.0)
        self.A_log.copy_(torch.empty_like(self.A_log).uniform_(*self.A_init_range).log())
        for norm in (self.out_norm.weight, getattr(self.in_proj, "layer_norm_weight", None)):
            if norm is not None:
                norm.fill_(0.0 if self.zero_centered_gamma else 1.0)

    def _gamma(self, weight):
        return weight + 1 if self.zero_centered_gamma else weight

    def weights(self):
        """The weights in the compiled (qwen3_5) operand order: in_proj's
        sections as the four projections (views: their gradients land in
        in_proj.weight)."""
        qkv, z, b, a = self.in_proj.weight.split(self.sections)
        conv = self.conv1d.weight
        return [qkv, z, b, a, conv.view(conv.shape[0], conv.shape[-1]), self.A_log, self.dt_bias,
                self._gamma(self.out_norm.weight), self.out_proj.weight]

    def forward(self, hidden_states, attention_mask=None, key_value_states=None,
                inference_context=None, attention_bias=None, packed_seq_params=None,
                sequence_len_offset=None, *, inference_params=None, **kwargs):
        """(out [s, b, h], None) for hidden_states [s, b, h], as Megatron's
        GatedDeltaNet.forward."""
        if inference_context is not None or inference_params is not None:
            raise NotImplementedError("gdn_torch.megatron: inference (inference_context) is not "
                                      "supported, as in Megatron's GatedDeltaNet")
        if key_value_states is not None or attention_bias is not None:
            raise ValueError("gdn_torch.megatron: a GDN layer takes no key_value_states or "
                             "attention_bias")
        if hidden_states.dim() != 3:
            raise ValueError(f"gdn_torch.megatron: hidden_states must be [s, b, h], got "
                             f"{tuple(hidden_states.shape)}")
        s, b, h = hidden_states.shape
        x = hidden_states
        norm = getattr(self.in_proj, "layer_norm_weight", None)
        if norm is not None:
            # In fp32, rounded to the input's dtype, as Transformer Engine's fused norm.
            x = torch.nn.functional.rms_norm(x.float(), (h,), self._gamma(norm).float(),
                                             self.eps).to(hidden_states.dtype)
        ranks = self.layout.size if self.layout is not None else 1
        qkv_format = "sbhd" if packed_seq_params is None else (
            getattr(packed_seq_params, "qkv_format", None) or "thd")
        if qkv_format not in ("thd", "sbhd"):
            raise ValueError(f"gdn_torch.megatron: qkv_format {qkv_format!r} is not supported: "
                             f"a GDN layer takes [s, b, h] hidden states, packed (thd) or not "
                             f"(sbhd)")
        if qkv_format == "thd":
            if b != 1:
                raise ValueError(f"gdn_torch.megatron: packed sequences (qkv_format thd) come as "
                                 f"[s, 1, h], got b = {b}")
            cu = packed_seq_params.cu_seqlens_q
            cu_padded = getattr(packed_seq_params, "cu_seqlens_q_padded", None)
            spec = dataclasses.replace(self.spec, padded=cu_padded is not None)
            y = run_layer(spec, self.layout, x[:, 0], cu, cu_padded, self.weights(), self.check,
                          self.validate)
            return y[:, None], None
        if self.layout is not None and self.layout.sp_ranks > 1 and b > 1:
            raise ValueError(f"gdn_torch.megatron: sequence parallelism with a batch of {b} "
                             f"[s, b, h] rows: pack the sequences (packed_seq_params, "
                             f"qkv_format thd), or use a batch of 1")
        # b sequences of s x ranks tokens each; this rank's rows of each.
        seq = s * ranks
        cu = torch.arange(0, (b + 1) * seq, seq, dtype=torch.int32, device=x.device)
        rows = x.transpose(0, 1).reshape(b * s, h)
        y = run_layer(self.spec, self.layout, rows, cu, None, self.weights(), self.check,
                      self.validate)
        return y.view(b, s, h).transpose(0, 1).contiguous(), None
