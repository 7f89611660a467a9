//===- GdnGradientOps.td - gdn gradient operations ---------*- tablegen -*-===//
//
// The reverse-mode derivatives of the gdn ops, as ops, so that a generated
// backward program (gdn-generate-backward) is explicit IR that later passes
// can fuse and lower to kernels like the forward. Each `*_grad` op computes
// the vector-Jacobian product of one forward op: given the forward op's
// operands and the cotangents of its results, the cotangents of its
// operands. Every cotangent has the type of the value it belongs to
// (element type and sequence layout). The exact functions are in
// docs/spec.md ("gdn gradient ops"); sequence-aware ops take the packing, so no
// gradient crosses a sequence boundary by construction.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDNGRADIENTOPS_TD
#define GDN_DIALECT_GDN_GDNGRADIENTOPS_TD

include "gdn/Dialect/Gdn/IR/GdnOps.td"

def Gdn_CausalConv1dGradOp : Gdn_Op<"causal_conv1d_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the vector-Jacobian product of gdn.causal_conv1d";
  let description = [{
    Given the operands of a `gdn.causal_conv1d` (`x`, `weight`, the packing,
    and its optional `bias` and `initial_state`, with the same `width` and
    `activation`), the cotangent `y_grad` of its output and, when the conv
    returned one, the cotangent `final_state_grad` of its final state,
    returns the cotangents of `x`, `weight`, and (as `optional_grads`, in
    this order) of `bias` and `initial_state` when the conv has them. Each
    tap sends its share back to
    the token or initial-state entry it read, so no gradient crosses a
    sequence boundary; padding rows get zero; the final state's cotangent
    goes back to the raw inputs (or initial-state entries) it copied.

    ```mlir
    %dx, %dw, %db, %dh0 = gdn.causal_conv1d_grad %dy, %x, %w, %p bias(%b)
        initial_state(%h0) final_state_grad(%dh) {width = 4 : i64, activation = #gdn.act<silu>}
        : (...) -> (tensor<?x64xf64>, tensor<64x4xf64>, tensor<64xf64>, tensor<?x64x3xf64>)
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$y_grad, Gdn_FloatTensor:$x,
                       Gdn_FloatTensor:$weight, Gdn_PackingType:$packing,
                       Optional<Gdn_FloatTensor>:$bias,
                       Optional<Gdn_FloatTensor>:$initial_state,
                       Optional<Gdn_FloatTensor>:$final_state_grad,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$width,
                       DefaultValuedAttr<Gdn_ActivationAttr,
                                         "::mlir::gdn::Activation::None">:$activation);
  let results = (outs Gdn_FloatTensor:$x_grad, Gdn_FloatTensor:$weight_grad,
                      Variadic<Gdn_FloatTensor>:$optional_grads);
  let assemblyFormat = [{
    $y_grad `,` $x `,` $weight `,` $packing (`bias` `(` $bias^ `)`)?
    (`initial_state` `(` $initial_state^ `)`)?
    (`final_state_grad` `(` $final_state_grad^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The cotangent of the bias, null when the conv has none.
    ::mlir::Value getBiasGrad();
    /// The cotangent of the initial state, null when the conv has none.
    ::mlir::Value getInitialStateGrad();
  }];
}

def Gdn_L2NormGradOp : Gdn_Op<"l2norm_grad", [Pure, AllTypesMatch<["y_grad", "x", "x_grad"]>]> {
  let summary = "the vector-Jacobian product of gdn.l2norm";
  let description = [{
    With `r = rsqrt(sum(x^2) + eps)` along the last dimension and `y = x r`:
    `x_grad = r * (y_grad - y * sum(y * y_grad))`, row by row.

    ```mlir
    %dq = gdn.l2norm_grad %dqn, %q {eps = 1.0e-06 : f64} : tensor<?x16x128xbf16>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$y_grad, Gdn_FloatTensor:$x,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Gdn_FloatTensor:$x_grad);
  let assemblyFormat = "$y_grad `,` $x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Gdn_GatesGradOp : Gdn_Op<"gates_grad", [Pure]> {
  let summary = "the vector-Jacobian product of gdn.gates";
  let description = [{
    Given the operands of a `gdn.gates` and the cotangents `g_grad` and
    `beta_grad` of its results, returns the cotangents of `a`, `b`, `A_log`
    and `dt_bias`. Per token and head, with `u = a + dt_bias`:
    `a_grad = g_grad * (-exp(A_log)) * softplus'(u)` (softplus' is the
    sigmoid below the threshold of 20 and 1 above it),
    `b_grad = beta_grad * beta' ` (`s (1 - s)`, doubled with
    `allow_neg_eigval`); `A_log_grad` sums `g_grad * g` and `dt_bias_grad`
    sums `a_grad` over tokens, per head.

    ```mlir
    %da, %db, %dalog, %ddt = gdn.gates_grad %dg, %dbeta, %a, %b, %a_log, %dt_bias
        : (...) -> (tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<32xf32>, tensor<32xf32>)
    ```
  }];
  let arguments = (ins Gdn_F32Tensor:$g_grad, Gdn_F32Tensor:$beta_grad,
                       Gdn_FloatTensor:$a, Gdn_FloatTensor:$b,
                       Gdn_FloatTensor:$a_log, Gdn_FloatTensor:$dt_bias,
                       DefaultValuedAttr<BoolAttr, "false">:$allow_neg_eigval);
  let results = (outs Gdn_FloatTensor:$a_grad, Gdn_FloatTensor:$b_grad,
                      Gdn_FloatTensor:$a_log_grad, Gdn_FloatTensor:$dt_bias_grad);
  let assemblyFormat = [{
    $g_grad `,` $beta_grad `,` $a `,` $b `,` $a_log `,` $dt_bias attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_DeltaRuleGradOp : Gdn_Op<"delta_rule_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the vector-Jacobian product of gdn.delta_rule";
  let description = [{
    Given the operands of a `gdn.delta_rule` (`q`, `k`, `v`, `g`, `beta`,
    the packing, the optional `initial_state`, the same `scale` and
    `chunk_size`), the cotangent `o_grad` of its output and the optional
    cotangent `final_state_grad` of its final state, returns the cotangents
    of `q`, `k`, `v`, `g`, `beta` and, when given, `initial_state`. Per
    sequence and value head, token by token from the last: with
    `S' = exp(g) S_{t-1}`, `p = S'^T k`, `d = beta (v - p)`,
    `S_t = S' + k d^T`, and `G` the cotangent of `S_t` (the final state's
    for the last token), `G += scale q o_grad^T`, `q_grad = scale S_t o_grad`,
    `dd = G^T k`, `k_grad = G d + S' (-beta dd)`, `v_grad = beta dd`,
    `beta_grad = dd . (v - p)`, `G' = G + k (-beta dd)^T`,
    `g_grad = sum(S' * G')`, and `exp(g) G'` is the cotangent of `S_{t-1}`,
    after the first token the initial state's. With GQA, `q_grad` and
    `k_grad` sum over the value heads of each group. The states are
    recomputed inside from checkpoints (never saved by the forward).

    ```mlir
    %dq, %dk, %dv, %dg, %dbeta = gdn.delta_rule_grad %do, %q, %k, %v, %g, %beta, %p
        : (...) -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
                    tensor<?x32xf32>, tensor<?x32xf32>)
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$o_grad, Gdn_FloatTensor:$q,
                       Gdn_FloatTensor:$k, Gdn_FloatTensor:$v,
                       Gdn_F32Tensor:$g, Gdn_F32Tensor:$beta,
                       Gdn_PackingType:$packing,
                       Optional<Gdn_F32Tensor>:$initial_state,
                       Optional<Gdn_F32Tensor>:$final_state_grad,
                       OptionalAttr<F64Attr>:$scale,
                       DefaultValuedAttr<I64Attr, "64">:$chunk_size);
  let results = (outs Gdn_FloatTensor:$q_grad, Gdn_FloatTensor:$k_grad,
                      Gdn_FloatTensor:$v_grad, Gdn_F32Tensor:$g_grad,
                      Gdn_F32Tensor:$beta_grad,
                      Optional<Gdn_F32Tensor>:$initial_state_grad);
  let assemblyFormat = [{
    $o_grad `,` $q `,` $k `,` $v `,` $g `,` $beta `,` $packing
    (`initial_state` `(` $initial_state^ `)`)?
    (`final_state_grad` `(` $final_state_grad^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scale applied to q: the attribute, or K^-1/2 when absent.
    double getEffectiveScale();
  }];
}

def Gdn_GatedRMSNormGradOp : Gdn_Op<"gated_rmsnorm_grad", [Pure]> {
  let summary = "the vector-Jacobian product of gdn.gated_rmsnorm";
  let description = [{
    Given the operands of a `gdn.gated_rmsnorm` and the cotangent `y_grad`
    of its output, returns the cotangents of `x`, `z` and `weight`. Per row,
    with `r = rsqrt(mean(x^2) + eps)`, `n = x r` and `s = silu(z)`:
    `weight_grad` sums `y_grad * n * s` over tokens and heads,
    `z_grad = y_grad * weight * n * silu'(z)`, and with `u = y_grad * weight * s`,
    `x_grad = r (u - n mean(u * n))`.

    ```mlir
    %dx, %dz, %dw = gdn.gated_rmsnorm_grad %dy, %o, %z, %w {eps = 1.0e-06 : f64}
        : (...) -> (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>)
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$y_grad, Gdn_FloatTensor:$x,
                       Gdn_FloatTensor:$z, Gdn_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Gdn_FloatTensor:$x_grad, Gdn_FloatTensor:$z_grad,
                      Gdn_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $y_grad `,` $x `,` $z `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_LinearGradOp : Gdn_Op<"linear_grad", [Pure]> {
  let summary = "the vector-Jacobian product of gdn.linear";
  let description = [{
    Given the operands of a `gdn.linear` and the cotangent `y_grad` of its
    output (features flattened per token as in the forward):
    `x_grad[t] = W^T y_grad[t]` (reshaped like `x`) and
    `weight_grad = sum_t y_grad[t] x[t]^T` (`[Out, In]`, summed over tokens
    in order). Two GEMMs: the data gradient and the weight gradient.

    ```mlir
    %dx, %dw = gdn.linear_grad %dy, %x, %w
        : (tensor<?x12288xbf16>, tensor<?x2048xbf16>, tensor<12288x2048xbf16>)
        -> (tensor<?x2048xbf16>, tensor<12288x2048xbf16>)
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$y_grad, Gdn_FloatTensor:$x,
                       Gdn_FloatTensor:$weight);
  let results = (outs Gdn_FloatTensor:$x_grad, Gdn_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $y_grad `,` $x `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Inverse copies
//===----------------------------------------------------------------------===//

def Gdn_MergeQkvzOp : Gdn_Op<"merge_qkvz", [Pure]> {
  let summary = "interleaves q|k|v, z, b and a back into Qwen3-Next's qkvz and ba";
  let description = [{
    The inverse of `gdn.split_qkvz`: every element of `mixed_qkv`
    (`[q of all heads | k | v]`), `z`, `b` and `a` goes back to the position
    of `qkvz` (interleaved per key-head group, `[q | k | v_r | z_r]`) or `ba`
    (`[b_r | a_r]`) that `gdn.split_qkvz` reads it from. Since the split is a
    permutation, this is also its transpose: the backward of a split is a
    merge of the cotangents.

    ```mlir
    %qkvz, %ba = gdn.merge_qkvz %mixed, %z, %b, %a {key_heads = 16 : i64, head_dim_k = 128 : i64}
        : (tensor<?x8192xbf16>, tensor<?x32x128xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>)
        -> (tensor<?x12288xbf16>, tensor<?x64xbf16>)
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$mixed_qkv, Gdn_FloatTensor:$z,
                       Gdn_FloatTensor:$b, Gdn_FloatTensor:$a,
                       ConfinedAttr<I64Attr, [IntPositive]>:$key_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_k);
  let results = (outs Gdn_FloatTensor:$qkvz, Gdn_FloatTensor:$ba);
  let assemblyFormat = [{
    $mixed_qkv `,` $z `,` $b `,` $a attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_MergeQkvOp : Gdn_Op<"merge_qkv", [Pure]> {
  let summary = "concatenates per-head q, k and v back into the conv channels";
  let description = [{
    The inverse (and transpose) of `gdn.split_qkv`: the result is
    `[q (H*K) | k (H*K) | v (HV*V)]` per token.

    ```mlir
    %c = gdn.merge_qkv %q, %k, %v
        : tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16> -> tensor<?x8192xbf16>
    ```
  }];
  let arguments = (ins Gdn_FloatTensor:$q, Gdn_FloatTensor:$k,
                       Gdn_FloatTensor:$v);
  let results = (outs Gdn_FloatTensor:$mixed_qkv);
  let assemblyFormat = [{
    $q `,` $k `,` $v attr-dict `:` type($q) `,` type($k) `,` type($v) `->` type($mixed_qkv)
  }];
  let hasVerifier = 1;
}

#endif // GDN_DIALECT_GDN_GDNGRADIENTOPS_TD
