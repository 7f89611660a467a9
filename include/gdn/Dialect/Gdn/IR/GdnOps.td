//===- GdnOps.td - gdn operations --------------------------*- tablegen -*-===//
//
// The operations of the gdn dialect. Each description states the function the
// op computes (the authoritative text is docs/spec.md) and every invariant its
// verifier enforces.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDNOPS_TD
#define GDN_DIALECT_GDN_GDNOPS_TD

include "gdn/Dialect/Gdn/IR/GdnDialect.td"
include "gdn/Dialect/Gdn/IR/GdnAttributes.td"
include "gdn/Dialect/Gdn/IR/GdnTypes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Activations and weights: bf16/f16/f32 in real programs; f64 is accepted so
// that reference programs can be compared at 1e-12 in the interpreter.
def Gdn_FloatTensor : RankedTensorOf<[BF16, F16, F32, F64]>;
// Gates and recurrent states are fp32 by definition (f64 for reference runs).
def Gdn_F32Tensor : RankedTensorOf<[F32, F64]>;
def Gdn_OffsetsTensor : 1DTensorOf<[I32]>;

//===----------------------------------------------------------------------===//
// Packing metadata
//===----------------------------------------------------------------------===//

def Gdn_PackingOp : Gdn_Op<"packing", [Pure]> {
  let summary = "builds packed-sequence metadata from cu_seqlens";
  let description = [{
    Wraps the cumulative sequence offsets `cu_seqlens` (int32, `N + 1`
    entries) and, for padded packings, the slot offsets `cu_padded`, into one
    `!gdn.packing` value that every token-mixing op takes.

    The offsets must start at 0, never decrease and end at the token count;
    with padding, every real length must fit in its slot, and with `max_len`
    no real length may exceed it. When the offsets are constants these rules
    are checked by the verifier, which names the offending index and value.

    ```mlir
    %cu = arith.constant dense<[0, 3, 7]> : tensor<3xi32>
    %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 7>
    %pp = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32>
        -> !gdn.packing<seqs = 2, tokens = 16, padded>
    ```
  }];
  let arguments = (ins Gdn_OffsetsTensor:$cu_seqlens,
                       Optional<Gdn_OffsetsTensor>:$cu_padded);
  let results = (outs Gdn_PackingType:$packing);
  let assemblyFormat = [{
    $cu_seqlens (`padded` $cu_padded^)? attr-dict `:` type($cu_seqlens)
    (`,` type($cu_padded)^)? `->` qualified(type($packing))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Primitive ops
//===----------------------------------------------------------------------===//

def Gdn_CausalConv1dOp : Gdn_Op<"causal_conv1d",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "depthwise causal conv1d over packed sequences";
  let description = [{
    For each sequence of the packing, channel `c` and token `t`:

    `y[t, c] = act(bias[c] + sum_{j=0}^{W-1} weight[c, j] * x[t - W + 1 + j, c])`

    where `weight[c, W-1]` multiplies the current token. Taps before the start
    of a sequence read that sequence's `initial_state` (`[N, C, W-1]`, most
    recent last) or zero; they never read another sequence's tokens.
    `act` is `none` or `silu`. The optional `final_state` result holds each
    sequence's last `W - 1` raw inputs, back-filled from the initial state
    when the sequence is shorter. Padding rows of a padded packing produce 0.

    ```mlir
    %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
        : (tensor<?x8192xbf16>, tensor<8192x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
        -> tensor<?x8192xbf16>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$x, Gdn_FloatTensor:$weight,
                       Gdn_PackingType:$packing,
                       Optional<Gdn_FloatTensor>:$bias,
                       Optional<Gdn_FloatTensor>:$initial_state,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$width,
                       DefaultValuedAttr<Gdn_ActivationAttr,
                                         "::mlir::gdn::Activation::None">:$activation);
  let results = (outs Gdn_FloatTensor:$y, Optional<Gdn_FloatTensor>:$final_state);
  let assemblyFormat = [{
    $x `,` $weight `,` $packing (`bias` `(` $bias^ `)`)?
    (`initial_state` `(` $initial_state^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_L2NormOp : Gdn_Op<"l2norm", [Pure, SameOperandsAndResultType]> {
  let summary = "L2-normalises the last dimension";
  let description = [{
    `y = x * rsqrt(sum(x^2) + eps)` along the last (head) dimension, in fp32;
    `eps` sits inside the root (as FLA does, unlike `F.normalize`).

    ```mlir
    %qn = gdn.l2norm %q {eps = 1.0e-06 : f64} : tensor<?x16x128xbf16>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$x,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Gdn_FloatTensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Gdn_GatesOp : Gdn_Op<"gates", [Pure]> {
  let summary = "decay g and write strength beta, in fp32";
  let description = [{
    Per token `t` and value head `h`:

    * `g = -exp(A_log[h]) * softplus(a[t, h] + dt_bias[h])`, with
      `softplus(x) = log1p(exp(x))`, and `x` itself above 20;
    * `beta = sigmoid(b[t, h])`, or `2 * sigmoid(b[t, h])` when
      `allow_neg_eigval` is set.

    Both results are fp32 whatever the input precision.

    ```mlir
    %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
        : (tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<32xf32>, tensor<32xf32>)
        -> (tensor<?x32xf32>, tensor<?x32xf32>)
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$a, Gdn_FloatTensor:$b,
                       Gdn_FloatTensor:$a_log, Gdn_FloatTensor:$dt_bias,
                       DefaultValuedAttr<BoolAttr, "false">:$allow_neg_eigval);
  let results = (outs Gdn_F32Tensor:$g, Gdn_F32Tensor:$beta);
  let assemblyFormat = [{
    $a `,` $b `,` $a_log `,` $dt_bias attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_DeltaRuleOp : Gdn_Op<"delta_rule", [Pure]> {
  let summary = "gated delta rule over packed sequences (GQA aware)";
  let description = [{
    For each sequence and value head, with state `S` in `R^{K x V}` (fp32):

    ```
    S'  = exp(g_t) * S_{t-1}
    d_t = beta_t * (v_t - S'^T k_t)
    S_t = S' + k_t d_t^T
    o_t = scale * S_t^T q_t
    ```

    `q` and `k` are `[T, H, K]`, `v` is `[T, HV, V]`, `g` and `beta` are
    `[T, HV]`. Value head `i` reads key head `i / (HV / H)`, so `HV` must be
    a multiple of `H`. The state starts from `initial_state` (`[N, HV, K, V]`)
    or zero; `final_state` is the state after each sequence's last real token.
    `scale` defaults to `K^-1/2`. `chunk_size` is the chunk length of the
    chunked (WY) implementation; it does not change the function.

    ```mlir
    %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p {chunk_size = 64 : i64}
        : (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
           tensor<?x32xf32>, tensor<?x32xf32>, !gdn.packing<seqs = 8, tokens = ?>)
        -> (tensor<?x32x128xbf16>, tensor<8x32x128x128xf32>)
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$q, Gdn_FloatTensor:$k,
                       Gdn_FloatTensor:$v, Gdn_F32Tensor:$g,
                       Gdn_F32Tensor:$beta, Gdn_PackingType:$packing,
                       Optional<Gdn_F32Tensor>:$initial_state,
                       OptionalAttr<F64Attr>:$scale,
                       DefaultValuedAttr<I64Attr, "64">:$chunk_size);
  let results = (outs Gdn_FloatTensor:$o, Gdn_F32Tensor:$final_state);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta `,` $packing
    (`initial_state` `(` $initial_state^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scale applied to q: the attribute, or K^-1/2 when absent.
    double getEffectiveScale();
  }];
}

def Gdn_GatedRMSNormOp : Gdn_Op<"gated_rmsnorm", [Pure]> {
  let summary = "RMSNorm over the value dimension, gated by silu(z)";
  let description = [{
    Per token and head, over the last dimension `V`, in fp32:
    `y = weight * (x * rsqrt(mean(x^2) + eps)) * silu(z)`. The weight `[V]`
    is shared by all heads and used as is (initialised to ones, not `1 + w`).

    ```mlir
    %y = gdn.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64}
        : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>)
        -> tensor<?x32x128xbf16>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$x, Gdn_FloatTensor:$z,
                       Gdn_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Gdn_FloatTensor:$y);
  let assemblyFormat = [{
    $x `,` $z `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_LinearOp : Gdn_Op<"linear", [Pure]> {
  let summary = "per-token linear projection without bias";
  let description = [{
    `y[t] = reshape(W * flatten(x[t]))`: every token's features (all
    dimensions after the first, flattened row-major, `In` in all) are
    multiplied by the weight `[Out, In]` (PyTorch's `nn.Linear` layout), and
    the `Out` results are laid out in the trailing shape of `y`. Projections
    can thus produce per-head tensors directly, and the output projection
    can read them.

    ```mlir
    %z = gdn.linear %x, %w_z : (tensor<?x2048xbf16>, tensor<4096x2048xbf16>)
        -> tensor<?x32x128xbf16>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$x, Gdn_FloatTensor:$weight);
  let results = (outs Gdn_FloatTensor:$y);
  let assemblyFormat = [{
    $x `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_SplitQkvzOp : Gdn_Op<"split_qkvz", [Pure]> {
  let summary = "de-interleaves Qwen3-Next's fused qkvz and ba projections";
  let description = [{
    Qwen3-Next's `in_proj_qkvz` output is interleaved per key-head group:
    for each of the `H` key heads, `[q (K) | k (K) | v (r*V) | z (r*V)]` with
    `r = HV / H`; `in_proj_ba` is `[b (r) | a (r)]` per group. This op
    produces the conv input `[q of all heads | k | v]` (`[T, 2*H*K + HV*V]`),
    `z` as `[T, HV, V]`, and `b`, `a` as `[T, HV]`. Value head `g * r + j`
    belongs to key head `g`.

    ```mlir
    %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 16 : i64, head_dim_k = 128 : i64}
        : (tensor<?x12288xbf16>, tensor<?x64xbf16>)
        -> (tensor<?x8192xbf16>, tensor<?x32x128xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>)
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$qkvz, Gdn_FloatTensor:$ba,
                       ConfinedAttr<I64Attr, [IntPositive]>:$key_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_k);
  let results = (outs Gdn_FloatTensor:$mixed_qkv, Gdn_FloatTensor:$z,
                      Gdn_FloatTensor:$b, Gdn_FloatTensor:$a);
  let assemblyFormat = [{
    $qkvz `,` $ba attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_RegroupSectionsOp : Gdn_Op<"regroup_sections", [Pure]> {
  let summary = "orders the parts of every section by group, or back";
  let description = [{
    Dimension `dim` of `x` is a concatenation of sections of
    `section_sizes` elements (the conv channels: `[H*K, H*K, HV*V]` for q, k
    and v). Each section is cut into `groups` equal parts, and the result
    lists, for g = 0 .. groups-1, part g of every section in order:
    `[q_0 k_0 v_0 | q_1 k_1 v_1 | ...]`. Block g of `groups` equal blocks
    then holds group g's share of every section, which is what an
    all_to_all over that dimension, or `gdn_comm.local_shard`, hands to
    rank g: headwise context parallelism slices the channels per section,
    never as one block. `inverse = true` undoes the permutation. The
    layout (if any) and the shape are unchanged.

    ```mlir
    %y = gdn.regroup_sections %mixed {dim = 1 : i64, section_sizes = array<i64: 2048, 2048, 4096>, groups = 4 : i64}
        : tensor<2048x8192xbf16> -> tensor<2048x8192xbf16>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$x,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       DenseI64ArrayAttr:$section_sizes,
                       ConfinedAttr<I64Attr, [IntPositive]>:$groups,
                       DefaultValuedAttr<BoolAttr, "false">:$inverse);
  let results = (outs Gdn_FloatTensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  let hasVerifier = 1;
}

def Gdn_SplitQkvOp : Gdn_Op<"split_qkv", [Pure]> {
  let summary = "splits the conv output into per-head q, k and v";
  let description = [{
    The conv channels are `[q (H*K) | k (H*K) | v (HV*V)]`; the results are
    `q`, `k` as `[T, H, K]` and `v` as `[T, HV, V]`. The head counts and
    dimensions are read from the result types.

    ```mlir
    %q, %k, %v = gdn.split_qkv %c : tensor<?x8192xbf16>
        -> tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$mixed_qkv);
  let results = (outs Gdn_FloatTensor:$q, Gdn_FloatTensor:$k,
                      Gdn_FloatTensor:$v);
  let assemblyFormat = [{
    $mixed_qkv attr-dict `:` type($mixed_qkv) `->` type($q) `,` type($k) `,` type($v)
  }];
  let hasVerifier = 1;
}

def Gdn_ConvertLayoutOp : Gdn_Op<"convert_layout", [Pure]> {
  let summary = "changes how a packed tensor is distributed over ranks";
  let description = [{
    The same global tensor, seen in another layout: for example from all
    tokens in natural order to this rank's zigzag shard, or from a token shard
    to a head shard. The packing is needed because zigzag sharding cuts every
    sequence separately. The context-parallel passes lower this op to
    `gdn_comm` collectives and local permutations.

    Only the encoding and the distributed dimension may differ: with `P`
    ranks, a token shard has `T / P` rows and a head shard `H / P` heads.

    ```mlir
    %s = gdn.convert_layout %x, %p : (tensor<8192x2048xbf16>, !gdn.packing<seqs = 4, tokens = 8192>)
        -> tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$x, Gdn_PackingType:$packing);
  let results = (outs Gdn_FloatTensor:$y);
  let assemblyFormat = [{
    $x `,` $packing attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The composite layer
//===----------------------------------------------------------------------===//

def Gdn_LayerOp : Gdn_Op<"layer", [Pure, AttrSizedOperandSegments]> {
  let summary = "a whole GatedDeltaNet block (Qwen3-Next or Qwen3.5 layout)";
  let description = [{
    `in_proj` -> split q/k/v/z/b/a -> causal conv over `[q|k|v]` + SiLU ->
    l2norm(q, k) -> gates -> delta rule -> gated RMSNorm(o, z) -> `out_proj`,
    over packed tokens `x : [T, hidden]`.

    The weights are operands, in PyTorch's `[out, in]` layout, in this order:

    | `projections` | weights |
    |---|---|
    | `qwen3_next` | `in_proj_qkvz [2HK + 2HV*V, hidden]`, `in_proj_ba [2HV, hidden]`, `conv [C, W]`, `A_log [HV]`, `dt_bias [HV]`, `norm [V]`, `out_proj [hidden, HV*V]` |
    | `qwen3_5` | `in_proj_qkv [C, hidden]`, `in_proj_z [HV*V, hidden]`, `in_proj_b [HV, hidden]`, `in_proj_a [HV, hidden]`, `conv [C, W]`, `A_log [HV]`, `dt_bias [HV]`, `norm [V]`, `out_proj [hidden, HV*V]` |

    with `C = 2*H*K + HV*V` conv channels. `gdn-expand-layer` rewrites the op
    into the primitive ops.

    States, for a sequence continued across calls (a prefill, truncated
    backpropagation through time): `initial_states(%conv0, %s0)` gives each
    sequence the conv's last `W - 1` inputs `[N, C, W-1]` (in x's element
    type, most recent last; the causal_conv1d's `initial_state`) and the
    delta rule's state `[N, HV, K, V]` (f32, f64 in f64 programs); the op
    then returns, after y, the same two per sequence at its end (the
    conv's and the delta rule's `final_state`). With initial states the op
    has both final states; without, neither.

    ```mlir
    %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
        {projections = #gdn.projections<qwen3_next>, key_heads = 16 : i64,
         value_heads = 32 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
         conv_width = 4 : i64}
        : (...) -> tensor<?x2048xbf16>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$x, Gdn_PackingType:$packing,
                       Variadic<Gdn_FloatTensor>:$weights,
                       Variadic<Gdn_FloatTensor>:$initial_states,
                       Gdn_ProjectionsAttr:$projections,
                       ConfinedAttr<I64Attr, [IntPositive]>:$key_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$value_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_k,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_v,
                       ConfinedAttr<I64Attr, [IntPositive]>:$conv_width,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$norm_eps,
                       OptionalAttr<F64Attr>:$scale,
                       DefaultValuedAttr<I64Attr, "64">:$chunk_size,
                       DefaultValuedAttr<BoolAttr, "false">:$allow_neg_eigval);
  let results = (outs Gdn_FloatTensor:$y, Variadic<Gdn_FloatTensor>:$final_states);
  let assemblyFormat = [{
    $x `,` $packing `weights` `(` $weights `)`
    (`initial_states` `(` $initial_states^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The conv's and the delta rule's initial states; null without.
    ::mlir::Value getConvInitialState() {
      return getInitialStates().empty() ? ::mlir::Value() : getInitialStates()[0];
    }
    ::mlir::Value getDeltaInitialState() {
      return getInitialStates().empty() ? ::mlir::Value() : getInitialStates()[1];
    }
    /// The conv's and the delta rule's final states; null without.
    ::mlir::Value getConvFinalState() {
      return getFinalStates().empty() ? ::mlir::Value() : getFinalStates()[0];
    }
    ::mlir::Value getDeltaFinalState() {
      return getFinalStates().empty() ? ::mlir::Value() : getFinalStates()[1];
    }

    /// The weight operands by role; roles the layout lacks are null.
    struct Weights {
      ::mlir::Value inProjQkvz, inProjBa;                  // qwen3_next
      ::mlir::Value inProjQkv, inProjZ, inProjB, inProjA;  // qwen3_5
      ::mlir::Value conv, aLog, dtBias, norm, outProj;
    };

    /// Number of conv channels: 2 * key_heads * head_dim_k + value_heads * head_dim_v.
    int64_t getConvChannels();

    /// The weights by role. Only valid on a verified op.
    Weights getWeightsByRole();
  }];
}

#endif // GDN_DIALECT_GDN_GDNOPS_TD
