//===- Passes.td - gdn -> gdn_kernel: the lowering to generated kernels ---*- tablegen -*-===//
//
// The passes of one level, gdn -> gdn_kernel: the lowering to generated kernels.
// The flag names the effect; each pass has a lit test file of the same name
// under test/Transforms. Options, statistics and dependent dialects live
// here so that registration, documentation and flags come from one place.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_CONVERSION_PASSES_TD
#define GDN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    into a `gdn_kernel.gated_rmsnorm`, and lowers every `gdn.delta_rule`
    the chunked kernel can take (bf16, K and V in {64, 128}) to
    `gdn_kernel.delta_rule`.

    In backward programs (`gdn-generate-backward`) it does the same for the
    gradient ops: every `gdn.delta_rule_grad` the kernels take becomes
    `gdn_kernel.delta_rule_grad`; the VJPs of the prologue that computed
    its q, k, v, g and beta (`l2norm_grad` of q and k, `merge_qkv`,
    `causal_conv1d_grad` and `gates_grad`) become one
    `gdn_kernel.prologue_grad` (which recomputes the conv and the norms),
    after which the recomputed prologue itself fuses into a
    `gdn_kernel.prologue`; and every `gdn.gated_rmsnorm_grad` becomes a
    `gdn_kernel.gated_rmsnorm_grad`. Where the delta rule's gradient reads
    saved q, k, v, g and beta instead (`save=operands`), the prologue's
    VJPs are matched from the norms' VJPs, which read the split of the
    conv the backward recomputes for them; that conv then goes too.

    The kernel ops get the tile chosen by the
    options (the delta rule: the widest V tile, 128 when V is);
    `gdn-select-kernels` revises it. Dataflow that does not match (a conv
    whose output has other users, q/k without their L2 norm, heads that do
    not fill whole 16-byte vectors, an f32 delta rule) is left alone.
  }];
  let dependentDialects = ["::mlir::gdn::kernel::GdnKernelDialect"];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"256",
           "Threads per block of the generated kernels">,
    Option<"tokensPerBlock", "tokens-per-block", "int64_t", /*default=*/"32",
           "Rows per chunk of a prologue block (the gates are shared out "
           "per chunk); at most one row block per this many rows">,
    Option<"rowsInFlight", "rows-in-flight", "int64_t", /*default=*/"8",
           "Rows each prologue thread keeps in flight (asynchronous copies "
           "into shared memory)">
  ];
  let statistics = [
    Statistic<"numPrologues", "prologues", "Prologue kernels formed">,
    Statistic<"numEpilogues", "epilogues", "Gated RMSNorm kernels formed">,
    Statistic<"numDeltaRules", "delta-rules", "Delta rules lowered to kernels">,
    Statistic<"numDeltaRuleGrads", "delta-rule-grads",
              "Delta-rule backwards lowered to kernels">,
    Statistic<"numPrologueGrads", "prologue-grads",
              "Prologue backward kernels formed">,
    Statistic<"numEpilogueGrads", "epilogue-grads",
              "Gated RMSNorm backward kernels formed">
  ];
}

#endif // GDN_CONVERSION_PASSES_TD
