//===- Passes.td - gdn transformation passes ---------------*- tablegen -*-===//
//
// Every pass of the project is declared here, with its options, statistics and
// dependent dialects, so that registration, documentation and the command-line
// flags all come from one place. The flag names the effect; each pass has a
// lit test file of the same name under test/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TRANSFORMS_PASSES_TD
#define GDN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GdnExpandLayer : Pass<"gdn-expand-layer"> {
  let summary = "Rewrite gdn.layer into the primitive gdn ops";
  let description = [{
    Replaces every `gdn.layer` by the dataflow of SEMANTICS.md:

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
  }];
  let dependentDialects = ["::mlir::gdn::GdnDialect"];
  let statistics = [
    Statistic<"numLayersExpanded", "layers-expanded", "Number of gdn.layer ops expanded">
  ];
}

def GdnFuse : Pass<"gdn-fuse"> {
  let summary = "Fuse the conv, split, L2 norms and gates into kernel ops";
  let description = [{
    Rewrites, for every `gdn.delta_rule` whose operands come from the
    prologue dataflow

    ```
    causal_conv1d(silu) -> split_qkv -> l2norm(q), l2norm(k)    gates(a, b)
    ```

    one `gdn_kernel.prologue` that computes q, k, v, g and beta in one pass
    (the conv output never reaches memory), and every `gdn.gated_rmsnorm`
    into a `gdn_kernel.gated_rmsnorm`. The fused ops get the tile chosen by
    the options; `gdn-select-kernels` may revise it. Dataflow that does not
    match (a conv whose output has other users, q/k without their L2 norm,
    heads that do not fill whole 16-byte vectors) is left alone.
  }];
  let dependentDialects = ["::mlir::gdn::kernel::GdnKernelDialect"];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"256",
           "Threads per block of the generated kernels">,
    Option<"tokensPerBlock", "tokens-per-block", "int64_t", /*default=*/"32",
           "Rows per chunk of a prologue block (its row table); at most "
           "one row block per this many rows">,
    Option<"rowsInFlight", "rows-in-flight", "int64_t", /*default=*/"8",
           "Rows each prologue thread keeps in flight (asynchronous copies "
           "into shared memory)">
  ];
  let statistics = [
    Statistic<"numPrologues", "prologues", "Prologue kernels formed">,
    Statistic<"numEpilogues", "epilogues", "Gated RMSNorm kernels formed">
  ];
}

#endif // GDN_TRANSFORMS_PASSES_TD
