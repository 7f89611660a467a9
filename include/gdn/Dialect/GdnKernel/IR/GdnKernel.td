//===- GdnKernel.td - one op per generated kernel ----------*- tablegen -*-===//
//
// The kernel level: each op is exactly one generated CUDA kernel, with every
// specialization decision (dtypes, dims, conv width, tile shape, flags) an
// attribute or a type, so that gdn-translate --gdn-to-cuda only prints.
// Passes (gdn-fuse, gdn-select-kernels) produce these ops and choose the
// attributes; the verifier checks that the choices fit the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDNKERNEL_GDNKERNEL_TD
#define GDN_DIALECT_GDNKERNEL_GDNKERNEL_TD

include "gdn/Dialect/Gdn/IR/GdnTypes.td"
include "gdn/Dialect/Gdn/IR/GdnAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def GdnKernel_Dialect : Dialect {
  let name = "gdn_kernel";
  let summary = "generated GDN kernels, one op each, fully specialised";
  let description = [{
    Ops of this dialect name one CUDA kernel each. Their operands and results
    are the tensors the kernel reads and writes, in the layouts it uses; their
    attributes are the specialization (tile shape, threads, flags). The CUDA
    emitter prints one instantiation of the device header library per op.
  }];
  let cppNamespace = "::mlir::gdn::kernel";
  let dependentDialects = ["::mlir::gdn::GdnDialect"];
}

class GdnKernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<GdnKernel_Dialect, mnemonic, traits>;

def GdnKernel_Tensor : RankedTensorOf<[BF16, F16, F32]>;
def GdnKernel_F32Tensor : RankedTensorOf<[F32]>;

def GdnKernel_PrologueOp : GdnKernel_Op<"prologue",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "fused varlen conv + SiLU + q/k/v split + L2 norm + gates";
  let description = [{
    Computes, in one pass over the conv channels `[q | k | v]` of
    `mixed_qkv [T, C]`:

    * the depthwise causal conv of width `conv_width` over each packed
      sequence (taps before a sequence start read `conv_initial_state` or 0),
      with `activation`, and the final conv states if requested;
    * the split into `q`, `k` (`[T, H, K]`) and `v` (`[T, HV, V]`);
    * the L2 norm of every q and k head (`eps = l2norm_eps`);
    * the gates `g = -exp(A_log) softplus(a + dt_bias)` and
      `beta = sigmoid(b)` (times 2 with `allow_neg_eigval`), in fp32.

    Padding rows of q, k and v are 0. The tile: each of `threads` threads
    owns `vector_bytes` bytes of q, k, v channels (16, the default, or 8,
    which needs a conv input twice as wide as q, k and v: f32 beside bf16
    or f16, one 16-byte word of input a thread and row); the grid is
    persistent, and each row block walks one balanced range of rows (plus
    `conv_width - 1` halo rows) in chunks of `tokens_per_block` rows (the
    gates are shared out per chunk; there is at most one row block per
    `tokens_per_block` rows); each thread keeps `rows_in_flight` rows in
    flight through asynchronous copies into shared memory. The verifier
    checks that the block's shared memory (the ring of rows and a word for
    the offsets' check) fits Hopper's 227 KiB. The vector changes which
    lanes sum a head's squares for its L2 norm, so the two vectors' outputs
    may differ in their last bits.

    ```mlir
    %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %conv, %a, %b, %a_log, %dt_bias, %p
        {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
         head_dim_v = 128 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
         l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
         threads = 256 : i64, tokens_per_block = 64 : i64, rows_in_flight = 8 : i64}
        : (...) -> (...)
    ```
  }];
  let arguments = (ins GdnKernel_Tensor:$mixed_qkv, GdnKernel_Tensor:$conv_weight,
                       Optional<GdnKernel_Tensor>:$conv_bias,
                       Optional<GdnKernel_Tensor>:$conv_initial_state,
                       GdnKernel_Tensor:$a, GdnKernel_Tensor:$b,
                       GdnKernel_Tensor:$a_log, GdnKernel_Tensor:$dt_bias,
                       Gdn_PackingType:$packing,
                       ConfinedAttr<I64Attr, [IntPositive]>:$key_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$value_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_k,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_v,
                       ConfinedAttr<I64Attr, [IntPositive]>:$conv_width,
                       Gdn_ActivationAttr:$activation,
                       F64Attr:$l2norm_eps,
                       BoolAttr:$allow_neg_eigval,
                       ConfinedAttr<I64Attr, [IntPositive]>:$threads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$tokens_per_block,
                       ConfinedAttr<I64Attr, [IntPositive]>:$rows_in_flight,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>,
                                         "16">:$vector_bytes);
  let results = (outs GdnKernel_Tensor:$q, GdnKernel_Tensor:$k,
                      GdnKernel_Tensor:$v, GdnKernel_F32Tensor:$g,
                      GdnKernel_F32Tensor:$beta,
                      Optional<GdnKernel_Tensor>:$conv_final_state);
  let assemblyFormat = [{
    $mixed_qkv `,` $conv_weight `,` $a `,` $b `,` $a_log `,` $dt_bias `,` $packing
    (`bias` `(` $conv_bias^ `)`)? (`initial_state` `(` $conv_initial_state^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnKernel_GatedRMSNormOp : GdnKernel_Op<"gated_rmsnorm", [Pure]> {
  let summary = "the gated RMSNorm epilogue kernel";
  let description = [{
    `y = weight * (x * rsqrt(mean(x^2) + eps)) * silu(z)` per token and head
    over `V`. A row of `V` channels is handled by `V / vector width` lanes;
    a block of `threads` lanes covers several rows.

    ```mlir
    %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
        : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>) -> tensor<?x32x128xbf16>
    ```
  }];
  let arguments = (ins GdnKernel_Tensor:$x, GdnKernel_Tensor:$z,
                       GdnKernel_Tensor:$weight, F64Attr:$eps,
                       ConfinedAttr<I64Attr, [IntPositive]>:$threads);
  let results = (outs GdnKernel_Tensor:$y);
  let assemblyFormat = [{
    $x `,` $z `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnKernel_DeltaRuleOp : GdnKernel_Op<"delta_rule", [Pure]> {
  let summary = "the chunked gated delta rule forward (prepare + scan kernels)";
  let description = [{
    The gated delta rule of docs/spec.md over packed varlen sequences, by
    the chunked algorithm of `kernels/include/gdn/device/delta_rule.cuh`
    (chunks of 64 tokens that never cross a sequence boundary): a parallel
    *prepare* kernel per (chunk, value-head pair) computes the chunk-local
    decay cumsum, `K K^T` and `Q K^T` on tensor cores and the inverse of the
    unit-lower-triangular system; a *scan* kernel per (sequence, value
    head, `value_tile` columns of V) carries the fp32 state across the
    sequence's chunks, staging each chunk through shared memory
    (`scan_stages` chunks in flight). `scan` names the scan kernel:
    `"mma_sync"` (warp-level mma.sync and cp.async, any sm_80+ GPU; V tiles
    of 32, 64 or 128, 1 or 2 stages) or `"wgmma"` (sm_90a only: the state
    transposed in warpgroup accumulators, wgmma products chained in
    registers, tiles copied by TMA; V tiles of 64 or 128, one warpgroup per
    64 columns, 2 or 3 stages). With `narrow_value_tile` and
    `narrow_below_blocks` (both or neither; for a sequence count the
    compiler does not know) the tile is chosen at run time: when the
    packing's sequences make fewer than `narrow_below_blocks` scan blocks at
    `value_tile`, the scan runs with the narrower `narrow_value_tile` (same
    scan and stages). With `split_target_blocks` the entry point splits
    long chains at run time: when the packing's sequences make at most half
    that many scan blocks, each sequence is cut into segments of equal
    length, one scan block each, sized so that the blocks number about
    `split_target_blocks` (the SM count). A segment's block first runs its
    state up from a zero state over the chunks before the segment, from the
    latest chunk where the norm bound of the transitions in between falls to
    `2^-warmup_bits` (default 24; the prepare kernel writes each chunk's
    bound: its total decay, times the growth factor of any key with
    `beta |k|^2 > 2`), or from the sequence's start when none does;
    `warmup_bits = 0` runs every segment from its sequence's start (exact).
    `split_target_blocks` and `narrow_value_tile` are alternatives.
    `scores` says which kernel computes the chunk's `P` (gated, masked
    `Q K^T`): `"prepare"` (default; written to the workspace, shared by the
    two value heads of a prepare block), `"scan"` (wgmma only: the scan
    computes it from the `Q` and `K` it stages, and the prepare kernel
    reads no `Q`; the workspace holds no `P`) or `"producer"` (wgmma only,
    no `narrow_value_tile`: the scan is a warp-specialised block whose
    producer warpgroup computes `P` while two consumer warpgroups run the
    chunk, whole or split; the workspace holds no `P`). Value
    head `i` reads key head `i / (HV / H)`. `q`, `k`, `v` and `o` are bf16;
    `g`, `beta` and the states fp32. Padding rows of `o` are 0.

    ```mlir
    %o, %ht = gdn_kernel.delta_rule %q, %k, %v, %g, %beta, %p
        {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
         head_dim_v = 128 : i64, scale = 0.088388347648318441 : f64,
         value_tile = 64 : i64, scan_stages = 1 : i64}
        : (...) -> (tensor<?x32x128xbf16>, tensor<?x32x128x128xf32>)
    ```
  }];
  let arguments = (ins GdnKernel_Tensor:$q, GdnKernel_Tensor:$k,
                       GdnKernel_Tensor:$v, GdnKernel_F32Tensor:$g,
                       GdnKernel_F32Tensor:$beta, Gdn_PackingType:$packing,
                       Optional<GdnKernel_F32Tensor>:$initial_state,
                       ConfinedAttr<I64Attr, [IntPositive]>:$key_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$value_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_k,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_v,
                       F64Attr:$scale,
                       ConfinedAttr<I64Attr, [IntPositive]>:$value_tile,
                       ConfinedAttr<I64Attr, [IntPositive]>:$scan_stages,
                       DefaultValuedStrAttr<StrAttr, "mma_sync">:$scan,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$narrow_value_tile,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$narrow_below_blocks,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$split_target_blocks,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$warmup_bits,
                       DefaultValuedStrAttr<StrAttr, "prepare">:$scores);
  let results = (outs GdnKernel_Tensor:$o,
                      Optional<GdnKernel_F32Tensor>:$final_state);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta `,` $packing
    (`initial_state` `(` $initial_state^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnKernel_DeltaRuleGradOp : GdnKernel_Op<"delta_rule_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the chunked gated delta rule backward (five kernels)";
  let description = [{
    The vector-Jacobian product of the gated delta rule by the chunked
    algorithm of `kernels/include/gdn/device/delta_rule_backward.cuh`:
    given the forward's operands, the cotangent `o_grad` of its output and
    the optional cotangent `final_state_grad` of its final states, returns
    the gradients of `q`, `k`, `v`, `g`, `beta` and, with an
    `initial_state`, of the initial states. The kernels recompute the
    forward (the chunk tiles, the state at every chunk start and `Vnew`),
    run the state-gradient recurrence from each sequence's last chunk, then
    every chunk's gradients in parallel, and sum `q_grad` and `k_grad` over
    each GQA group in head order. No atomics: the same inputs give the same
    bits. `q`, `k`, `v`, `o_grad` are bf16; `q_grad`, `k_grad`, `v_grad`
    bf16 or f32 (one type for the three); `g`, `beta`, the states and their
    gradients f32. Padding rows of every gradient are 0. With
    `split_target_blocks` (the SM count) the entry point splits long chains
    at run time in both sequential scans, as `gdn_kernel.delta_rule` does:
    when a scan's blocks are at most half the blocks the GPU runs at once,
    each sequence is cut into segments of equal length. A segment's block
    of the forward recomputation runs its state up from zero over the
    chunks before it; one of the reverse scan runs its state gradient down
    from zero over the chunks after it (the transposed transitions have the
    same norm bounds), from the nearest chunk where the bound falls to
    `2^-warmup_bits` (default 24), or from the sequence's start (end) when
    none does; `warmup_bits = 0` makes every segment exact. `scan` names
    the kernels of the two sequential scans and the chunk gradients, as
    `gdn_kernel.delta_rule`'s does: `"mma_sync"` (any sm_80+ GPU) or
    `"wgmma"` (sm_90a only: the forward recomputation on the wgmma scan
    without `Q` or `P`, the reverse scan with the state gradient in
    warpgroup accumulators, one warpgroup per 64 columns of V, and the
    chunk gradients as persistent warp-specialised blocks fed by TMA).

    ```mlir
    %dq, %dk, %dv, %dg, %dbeta = gdn_kernel.delta_rule_grad %do, %q, %k, %v,
        %g, %beta, %p
        {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
         head_dim_v = 128 : i64, scale = 0.088388347648318441 : f64}
        : (...) -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>,
                    tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x32xf32>)
    ```
  }];
  let arguments = (ins GdnKernel_Tensor:$o_grad, GdnKernel_Tensor:$q,
                       GdnKernel_Tensor:$k, GdnKernel_Tensor:$v,
                       GdnKernel_F32Tensor:$g, GdnKernel_F32Tensor:$beta,
                       Gdn_PackingType:$packing,
                       Optional<GdnKernel_F32Tensor>:$initial_state,
                       Optional<GdnKernel_F32Tensor>:$final_state_grad,
                       ConfinedAttr<I64Attr, [IntPositive]>:$key_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$value_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_k,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_v,
                       F64Attr:$scale,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$split_target_blocks,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$warmup_bits,
                       DefaultValuedStrAttr<StrAttr, "mma_sync">:$scan);
  let results = (outs GdnKernel_Tensor:$q_grad, GdnKernel_Tensor:$k_grad,
                      GdnKernel_Tensor:$v_grad, GdnKernel_F32Tensor:$g_grad,
                      GdnKernel_F32Tensor:$beta_grad,
                      Optional<GdnKernel_F32Tensor>:$initial_state_grad);
  let assemblyFormat = [{
    $o_grad `,` $q `,` $k `,` $v `,` $g `,` $beta `,` $packing
    (`initial_state` `(` $initial_state^ `)`)?
    (`final_state_grad` `(` $final_state_grad^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnKernel_PrologueGradOp : GdnKernel_Op<"prologue_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the prologue's backward: conv, SiLU, split, L2 norms and gates";
  let description = [{
    The vector-Jacobian product of `gdn_kernel.prologue` (and of the
    `gdn.causal_conv1d_grad`, `gdn.merge_qkv`, two `gdn.l2norm_grad` and
    `gdn.gates_grad` ops it replaces), by the kernels of
    `kernels/include/gdn/device/prologue_backward.cuh`. Given the
    prologue's operands and the cotangents of its `q`, `k` (after their L2
    norm), `v`, `g`, `beta` and, optionally, of its final conv states,
    returns the gradients of `mixed_qkv`, the conv weight, `a`, `b`,
    `A_log`, `dt_bias` and (as `optional_grads`, in this order) of the conv
    bias and the initial conv states when it has them. The conv,
    the activation and the norms are recomputed from `mixed_qkv`; nothing
    of the forward is saved. No gradient crosses a sequence boundary;
    padding rows of `mixed_qkv_grad` are 0.

    Parameter gradients are summed per block in a fixed order, then the
    blocks' partial sums in block order: no atomics, the same inputs give
    the same bits. The tile: each of `threads` threads owns `vector_bytes`
    bytes of channels; `row_blocks` (at most) blocks of rows per channel
    block, each keeping `rows_in_flight` rows in flight.

    ```mlir
    %dmixed, %dw, %da, %db, %dalog, %ddt = gdn_kernel.prologue_grad
        %mixed, %conv, %a, %b, %a_log, %dt_bias, %p
        cotangents(%dq, %dk, %dv, %dg, %dbeta)
        {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
         head_dim_v = 128 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
         l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
         threads = 512 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64,
         row_blocks = 33 : i64}
        : (...) -> (...)
    ```
  }];
  let arguments = (ins GdnKernel_Tensor:$mixed_qkv, GdnKernel_Tensor:$conv_weight,
                       Optional<GdnKernel_Tensor>:$conv_bias,
                       Optional<GdnKernel_Tensor>:$conv_initial_state,
                       GdnKernel_Tensor:$a, GdnKernel_Tensor:$b,
                       GdnKernel_Tensor:$a_log, GdnKernel_Tensor:$dt_bias,
                       Gdn_PackingType:$packing,
                       GdnKernel_Tensor:$q_grad, GdnKernel_Tensor:$k_grad,
                       GdnKernel_Tensor:$v_grad, GdnKernel_F32Tensor:$g_grad,
                       GdnKernel_F32Tensor:$beta_grad,
                       Optional<GdnKernel_Tensor>:$conv_final_state_grad,
                       ConfinedAttr<I64Attr, [IntPositive]>:$key_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$value_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_k,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim_v,
                       ConfinedAttr<I64Attr, [IntPositive]>:$conv_width,
                       Gdn_ActivationAttr:$activation,
                       F64Attr:$l2norm_eps,
                       BoolAttr:$allow_neg_eigval,
                       ConfinedAttr<I64Attr, [IntPositive]>:$threads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$vector_bytes,
                       ConfinedAttr<I64Attr, [IntPositive]>:$rows_in_flight,
                       ConfinedAttr<I64Attr, [IntPositive]>:$row_blocks);
  let results = (outs GdnKernel_Tensor:$mixed_qkv_grad,
                      GdnKernel_Tensor:$conv_weight_grad,
                      GdnKernel_Tensor:$a_grad, GdnKernel_Tensor:$b_grad,
                      GdnKernel_Tensor:$a_log_grad,
                      GdnKernel_Tensor:$dt_bias_grad,
                      Variadic<GdnKernel_Tensor>:$optional_grads);
  let assemblyFormat = [{
    $mixed_qkv `,` $conv_weight `,` $a `,` $b `,` $a_log `,` $dt_bias `,` $packing
    (`bias` `(` $conv_bias^ `)`)? (`initial_state` `(` $conv_initial_state^ `)`)?
    `cotangents` `(` $q_grad `,` $k_grad `,` $v_grad `,` $g_grad `,` $beta_grad
    (`,` `final_state` $conv_final_state_grad^)? `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The gradient of the conv bias, null without a bias.
    ::mlir::Value getConvBiasGrad();
    /// The gradient of the initial conv states, null without them.
    ::mlir::Value getConvInitialStateGrad();
  }];
}

def GdnKernel_GatedRMSNormGradOp : GdnKernel_Op<"gated_rmsnorm_grad", [Pure]> {
  let summary = "the gated RMSNorm epilogue's backward";
  let description = [{
    The vector-Jacobian product of `gdn_kernel.gated_rmsnorm` (and of
    `gdn.gated_rmsnorm_grad`), by the kernels of
    `kernels/include/gdn/device/epilogue_backward.cuh`: given `x`, `z`, the
    weight and the cotangent `y_grad` of the output, the gradients of `x`,
    `z` and the weight, in one pass over the rows (`threads` lanes per
    block, a row of `V` channels per `V / vector width` lanes). The weight
    gradient is summed per block in row order, then over at most `blocks`
    blocks in block order: no atomics, the same inputs give the same bits.

    ```mlir
    %dx, %dz, %dw = gdn_kernel.gated_rmsnorm_grad %dy, %o, %z, %w
        {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 528 : i64}
        : (...) -> (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>)
    ```
  }];
  let arguments = (ins GdnKernel_Tensor:$y_grad, GdnKernel_Tensor:$x,
                       GdnKernel_Tensor:$z, GdnKernel_Tensor:$weight,
                       F64Attr:$eps,
                       ConfinedAttr<I64Attr, [IntPositive]>:$threads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$blocks);
  let results = (outs GdnKernel_Tensor:$x_grad, GdnKernel_Tensor:$z_grad,
                      GdnKernel_Tensor:$weight_grad);
  let assemblyFormat = [{
    $y_grad `,` $x `,` $z `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // GDN_DIALECT_GDNKERNEL_GDNKERNEL_TD
