//===- Passes.td - gdn -> gdn: layer expansion and the backward program ---*- tablegen -*-===//
//
// The passes of one level, gdn -> gdn: layer expansion and the backward program.
// The flag names the effect; each pass has a lit test file of the same name
// under test/Transforms. Options, statistics and dependent dialects live
// here so that registration, documentation and flags come from one place.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_TRANSFORMS_PASSES_TD
#define GDN_DIALECT_GDN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GdnExpandLayer : Pass<"gdn-expand-layer"> {
  let summary = "Rewrite gdn.layer into the primitive gdn ops";
  let description = [{
    Replaces every `gdn.layer` by the dataflow of docs/spec.md (gdn.layer):

    ```
    linear (in_proj) -> [split_qkvz] -> causal_conv1d (+ SiLU) -> split_qkv
      -> l2norm(q), l2norm(k) -> gates -> delta_rule -> gated_rmsnorm -> linear (out_proj)
    ```

    For `#gdn.projections<qwen3_next>` the fused `in_proj_qkvz` and
    `in_proj_ba` outputs are de-interleaved per key-head group by
    `gdn.split_qkvz`; for `#gdn.projections<qwen3_5>` the four separate
    projections produce the conv input, `z`, `b` and `a` directly. The
    packing operand is threaded into the conv and the delta rule, and the
    layer's sequence layout is kept on every activation.

    With `f32-projections`, the input projections' outputs that feed the
    conv and the gate (`qkvz`, or `qkv` and `z`) are stored in f32 rather
    than the layer's dtype; the conv output, q, k, v and o keep it. In a
    bf16 layer this removes the rounding that dominates the output's error
    (docs/precision.md); their cotangents stay bf16 in the backward.
  }];
  let options = [
    Option<"f32Projections", "f32-projections", "bool", /*default=*/"false",
           "Store the in_proj outputs that feed the conv and the gate in f32">
  ];
  let dependentDialects = ["::mlir::gdn::GdnDialect"];
  let statistics = [
    Statistic<"numLayersExpanded", "layers-expanded", "Number of gdn.layer ops expanded">
  ];
}

def GdnSplitProjections : Pass<"gdn-split-projections"> {
  let summary = "Project straight into the layouts gdn.split_qkvz makes";
  let description = [{
    Qwen3-Next's fused `in_proj_qkvz` and `in_proj_ba` outputs are
    interleaved per key-head group, and `gdn.split_qkvz` de-interleaves them
    with a copy of every element (an f32 `qkvz` at 32K tokens: 1.6 GB read
    and written), as `gdn.merge_qkvz` re-interleaves their cotangents in the
    backward. Since the split permutes the projections' output features, it
    equals projecting with the weights' rows permuted the same way:

    ```
    linear(x, W_qkvz), linear(x, W_ba) -> split_qkvz -> mixed, z, b, a
      becomes
    W' = regroup_sections(W_qkvz, inverse)    (rows [q | k | v | z])
    mixed = linear(x, W'[rows of q, k, v]),  z = linear(x, W'[rows of z])
    and b, a the same from W_ba (rows [b | a])
    ```

    and in the backward, `merge_qkvz` feeding the projections'
    `linear_grad` becomes one `linear_grad` per part (their x gradients
    summed inside the GEMMs, their weight gradients put back in the
    interleaved order). Only weights move: `[Out, In]` elements per call
    instead of `[T, Out]`. Splits and merges whose operands are not the
    projections' own results (or have other users) are left alone.
  }];
  let dependentDialects = ["::mlir::gdn::GdnDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numSplits", "splits", "gdn.split_qkvz folded into projections">,
    Statistic<"numMerges", "merges", "gdn.merge_qkvz folded into linear_grad">
  ];
}

def GdnGenerateBackward : Pass<"gdn-generate-backward", "::mlir::ModuleOp"> {
  let summary = "Build the gradient program of each forward function";
  let description = [{
    For every function `@f` (or those named by `functions`), adds

    * `@f_forward`: `@f` that also returns the values its backward reads
      and does not recompute (the *saved* values, after `@f`'s results);
    * `@f_backward`: takes `@f`'s arguments, the saved values and one
      cotangent per floating-point result (in `@f`'s result types), and
      returns the gradient of `L = sum_i <result_i, cotangent_i>` with
      respect to every floating-point argument, in order, each in its
      argument's type (element type and layout).

    `@f` itself is left as it is. The backward is explicit IR: one gradient
    op per differentiable op (`gdn.*_grad`, `gdn.merge_qkvz`,
    `gdn.merge_qkv`, `gdn.regroup_sections` inverted), the transposed
    communication for every collective (`all_gather` <-> `reduce_scatter`,
    `all_to_all` with its dimensions swapped, `gdn.convert_layout` back,
    `gdn_comm.return_halo`, `reverse_state_exchange`,
    `reduce_sequence_states`, the chunkwise per-rank `*_grad` ops), and
    `arith.addf` where a value's cotangents add up. Every sequence-aware
    gradient op takes the packing, so no gradient crosses a sequence
    boundary. In a P-rank program, the cotangent of a result without a
    token layout is given whole to every rank
    (`gdn_comm.replicated_to_partial` makes it count once) and the gradient
    of an argument without one is summed over the ranks
    (`gdn_comm.all_reduce`), so the backward of a context- or
    sequence-parallel program is itself one, and computes the P = 1
    program's gradients.

    `save` chooses what the forward keeps (docs/backward.md gives the bytes
    per token and layer of each choice):

    * `activations`: every value a gradient op reads; nothing is
      recomputed.
    * `inputs` (default): the results of the expensive ops (projections,
      the delta rule, collectives); the cheap per-token ops between them
      (conv, splits, L2 norms, gates, gated RMSNorm) are recomputed from
      those in the backward, as a fused prologue would.
    * `operands`: what `inputs` keeps and the per-token values those
      expensive ops read (the delta rule's q, k, v, g and beta, a
      projection's input); the backward recomputes only what the cheap
      ops' own gradients read.
    * `none`: nothing but the arguments; the backward recomputes the whole
      forward it needs, collectives included.

    The delta rule's per-chunk states are never saved: `gdn.delta_rule_grad`
    recomputes them from checkpoints. Packings, constants and slices of
    weights are always recomputed. `report-memory` prints, for every
    function, the bytes per token its saved values take.

    Programs must be expanded (`gdn-expand-layer`) and not yet fused
    (`gdn-fuse`); an op without a gradient op is an error naming it.
  }];
  let dependentDialects = ["::mlir::gdn::GdnDialect",
                           "::mlir::gdn::comm::GdnCommDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"save", "save", "std::string", /*default=*/"\"inputs\"",
           "What the forward saves for the backward: activations, operands, "
           "inputs or none">,
    ListOption<"functions", "functions", "std::string",
               "Functions to differentiate (default: every function with a "
               "body that is not itself generated)">,
    Option<"reportMemory", "report-memory", "bool", /*default=*/"false",
           "Print the bytes per token the saved values take, as remarks">
  ];
  let statistics = [
    Statistic<"numFunctions", "functions", "Functions differentiated">,
    Statistic<"numSaved", "saved-values", "Values the forwards save">
  ];
}

#endif // GDN_DIALECT_GDN_TRANSFORMS_PASSES_TD
