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
    `gdn_kernel.gated_rmsnorm_grad`.

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
           "Rows per chunk of a prologue block (its row table); at most "
           "one row block per this many rows">,
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

def GdnSequenceParallel : Pass<"gdn-sequence-parallel", "::mlir::func::FuncOp"> {
  let summary = "Megatron-style sequence parallelism (with tensor parallelism over heads) around a layer";
  let description = [{
    Rewrites a function that computes one expanded GDN layer on all tokens
    (after `gdn-expand-layer`) into the program every rank of a
    `ranks`-rank SP/TP group runs: the hidden states arrive as a contiguous
    token shard, are all-gathered along tokens, and each rank computes all
    tokens for `H/P` key and `HV/P` value heads. The input projections are
    sliced by head: Qwen3-Next's `in_proj_qkvz` and `in_proj_ba` by key-head
    group (they are interleaved per group, so a rank's groups are one block
    of rows), Qwen3.5's `in_proj_qkv` per q/k/v section and `in_proj_z`,
    `in_proj_b`, `in_proj_a` by head; the conv parameters per section,
    `A_log` and `dt_bias` by head; `out_proj` by its input columns, so each
    rank's output is a partial sum that one reduce-scatter both sums and
    shards back along tokens. Stacked layers stay token-sharded between
    layers (the next layer all-gathers the previous reduce-scatter's
    output). Needs `H % P == 0` and `HV % P == 0`, and a token count
    divisible by P.
  }];
  let dependentDialects = ["::mlir::gdn::GdnDialect",
                           "::mlir::gdn::comm::GdnCommDialect"];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"2",
           "Ranks of the sequence/tensor-parallel group">
  ];
}

def GdnContextParallel : Pass<"gdn-context-parallel", "::mlir::func::FuncOp"> {
  let summary = "Distribute GDN cores and layers over a context-parallel group";
  let description = [{
    Rewrites a function that computes GDN cores or expanded layers on all
    tokens (P = 1) into the program every rank of a `ranks`-rank
    context-parallel group runs, computing the same function:

    * `mode=headwise` (Ulysses): the token-indexed inputs of the core (the
      conv input `mixed_qkv` and the gate inputs `a`, `b`) become contiguous
      token shards (`#gdn.seq<contiguous, ranks = P>`). `mixed_qkv`'s
      channels are regrouped so that each rank's share of q, k and v sits
      in one block (`gdn.regroup_sections`), one all_to_all trades the
      token shard for all tokens of `H/P` key and `HV/P` value heads, and
      the conv weight, bias and initial conv state are sliced the same way,
      per section (`gdn_comm.local_shard`); `A_log`, `dt_bias` and the
      initial delta-rule state are sliced by head. The core runs with the
      global packing; the output goes back to a token shard with the
      inverse all_to_all, and the final states are gathered. Needs
      `H % P == 0` and `HV % P == 0`.

    Around the cores, the token-indexed values (from the function's
    arguments through the input projections, `split_qkvz`, the gated RMSNorm
    and `out_proj`, also between stacked layers) stay token shards; any
    other op that reads one is rejected with a diagnostic.

    `layout=zigzag` gives the function's activations the load-balanced
    zigzag sharding (`#gdn.seq<zigzag, ranks = P>`; every sequence's length a
    multiple of 2P, checked at run time with the sequence named): they are
    converted to contiguous shards (`gdn.convert_layout`) before the
    all_to_all and back after it.

    * `mode=chunkwise` (state passing): every rank keeps all heads and runs
      the core on its contiguous token shard with the packing clipped to
      it (`gdn_comm.local_packing`). The conv of the sequence continuing
      from the previous rank reads that rank's last `W-1` rows
      (`gdn_comm.halo_exchange`, merged with its initial conv state by
      `gdn_comm.continue_conv_state`). Each rank summarises the sequence
      that leaves its shard as a transition and a partial state
      (`gdn_comm.state_summary`), `gdn_comm.state_exchange` chains the
      summaries in fp32 (`chain=all_gather` or the log-depth `scan`), and
      the delta rule runs once from the received state
      (`gdn_comm.continue_state`). Final states come from the rank that
      ends each sequence (`gdn_comm.gather_sequence_states`). No
      head-count constraint; shards of any size (the halo reaches back over
      as many ranks as it needs).
    * `mode=auto` picks, per core, the mode the cost model prices lower:
      bytes each rank sends over a link of `link-gbps`, extra FLOPs at
      `tflops`, and `collective-us` per collective (docs/parallel.md).
      It prices `tokens` tokens when given, else the static token count
      (32768 when it is dynamic); `report-costs` prints both estimates as
      remarks.

    The distributed delta rule carries its mode as `gdn.cp_mode`. A
    `gdn.layer` that was not expanded is rejected with a diagnostic.
  }];
  let dependentDialects = ["::mlir::gdn::GdnDialect",
                           "::mlir::gdn::comm::GdnCommDialect"];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"2",
           "Ranks of the context-parallel group">,
    Option<"mode", "mode", "std::string", /*default=*/"\"headwise\"",
           "headwise, chunkwise or auto">,
    Option<"chain", "chain", "std::string", /*default=*/"\"auto\"",
           "How chunkwise chains the state summaries: all_gather, scan, or "
           "auto (the one the cost model prices lower)">,
    Option<"tokens", "tokens", "int64_t", /*default=*/"0",
           "Tokens (all ranks together) that mode=auto prices; 0: the "
           "static token count, or 32768 when it is dynamic">,
    Option<"linkGBps", "link-gbps", "double", /*default=*/"300",
           "mode=auto: bytes per second one rank sends, in GB/s">,
    Option<"tflops", "tflops", "double", /*default=*/"400",
           "mode=auto: sustained TFLOP/s of the core's kernels">,
    Option<"collectiveUs", "collective-us", "double", /*default=*/"20",
           "mode=auto: latency of one collective, in microseconds">,
    Option<"reportCosts", "report-costs", "bool", /*default=*/"false",
           "mode=auto: print both modes' estimates as remarks">,
    Option<"layout", "layout", "std::string", /*default=*/"\"contiguous\"",
           "Token sharding of the function's activations: contiguous or "
           "zigzag">
  ];
}

def GdnHoistLayouts : Pass<"gdn-hoist-layouts", "::mlir::func::FuncOp"> {
  let summary = "Move token-layout conversions to where they move the fewest bytes";
  let description = [{
    The token-local ops around GDN cores (the projections, `split_qkvz`,
    the gated RMSNorm, `out_proj`, also between stacked layers) compute
    row by row, so they run in any token layout. gdn-context-parallel with
    `layout=zigzag` keeps them on the function's zigzag shards and converts
    at every core: `mixed_qkv`, `a` and `b` to contiguous shards before it,
    its output back after it (`gdn.convert_layout`, a collective).

    This pass takes each connected region of token-local values and, when it
    is cheaper, runs the whole region in the layout its cores need: the
    conversions move to the region's edge (the function's token-indexed
    arguments and results) and the ones at the cores disappear. The cost is
    the bytes per token row the conversions move; for a Qwen3-Next layer
    that is the hidden state in and out (2 x 2048 values) instead of the
    conv channels, the gates and the core output (8192 + 64 + 4096 values).
    Regions where moving does not pay are left as they are.
  }];
  let dependentDialects = ["::mlir::gdn::GdnDialect"];
  let statistics = [
    Statistic<"numRegionsMoved", "regions-moved",
              "Token-local regions whose conversions moved to their edge">
  ];
}

def GdnLowerStateSummaries : Pass<"gdn-lower-state-summaries"> {
  let summary = "Compute chunkwise CP's state summaries with the delta rule";
  let description = [{
    Rewrites every `gdn_comm.state_summary` (bf16 activations, fp32
    summaries) into two `gdn.delta_rule` runs over
    `gdn_comm.summary_packing`, the leaving sequence's rows of the shard as
    one sequence: from `gdn_comm.summary_initial_states`' partial-state
    initial states it ends in the partial state `S`, and over zero values
    from the identity it ends in the transition `M` (the state is affine in
    the initial state; with zero values only the transition acts on it).
    Each `gdn_comm.state_summary_grad` becomes the delta rule's gradient
    over the same rows (`gdn.delta_rule_grad` with zero output cotangents
    and the summary's cotangents as final-state cotangents) and
    `gdn_comm.summary_initial_states_grad` for the initial states'. When
    its cotangents come from `gdn_comm.reverse_state_exchange` (every
    generated backward), they are `G S_in^T` and `G`, and
    `<G S_in^T, M> + <G, S> = <G, M S_in + S>`: one run from the state the
    sequence really has at the shard's start (the forward chain's `S_in`,
    recomputed by a `gdn_comm.state_exchange`) gives the gradient. Other
    cotangents take both runs' gradients, their k, g and beta gradients
    added. `gdn-fuse` then lowers the runs to the delta-rule kernels like
    any other, so the summaries run on the GPU at a cost proportional to the
    leaving sequence's rows in the shard. Part of `gdn-pipeline`, before
    `gdn-fuse`.

    ```mlir
    %m, %s = gdn_comm.state_summary %q, %k, %v, %g, %beta, %p {group = #gdn_comm.group<cp, 4>} : ...
    // becomes
    %sp = gdn_comm.summary_packing %p {group = #gdn_comm.group<cp, 4>} : ...
    %hs, %hm = gdn_comm.summary_initial_states %p {group = #gdn_comm.group<cp, 4>} : ...
    %o1, %fs = gdn.delta_rule %k, %k, %v, %g, %beta, %sp initial_state(%hs) : ...
    %o2, %fm = gdn.delta_rule %k, %k, %zeros, %g, %beta, %sp initial_state(%hm) : ...
    %m' = tensor.extract_slice %fm[1, 0, 0, 0] [1, 32, 128, 128] [1, 1, 1, 1] : ...
    ```
  }];
  let dependentDialects = ["::mlir::gdn::GdnDialect",
                           "::mlir::gdn::comm::GdnCommDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numSummaries", "summaries-lowered",
              "State summaries and their gradients lowered to delta-rule runs">
  ];
}

def GdnSelectKernels : Pass<"gdn-select-kernels"> {
  let summary = "Choose the tiles of the generated kernels from the packing and the device";
  let description = [{
    Sets the scan kernel and tile attributes of every `gdn_kernel.delta_rule`
    from what the packing says about the work and from the device, by the
    rule measured on the H200 (docs/performance.md). The scan kernel runs
    one block per (sequence, value head, V tile). With `wgmma` (the target
    is sm_90a, the default) the scan is `"wgmma"` with three chunks in
    flight, V tile 128 when the `N * HV` blocks fill `sm-count` SMs (within
    an eighth), else 64 (twice the blocks; measured faster than every
    mma.sync tile at 8192x4, 2048x4 and 1x32768). Without it the scan is
    `"mma_sync"` and the pass picks the widest V tile (128, 64, 32) whose
    `N * HV * V / tile` blocks still fill the SMs, with the stage count
    measured best for it (128: 2, 64: 1, 32: 2). Wide tiles read each
    chunk's shared operands once for more columns; narrow ones make blocks
    when sequences are few (one long sequence). N is the packing's static
    sequence count, else `expected-seqs`; with neither, sequences count as
    many and the op also gets `narrow_value_tile` (64 for wgmma, 32 for
    mma.sync) and `narrow_below_blocks`, so that the entry point picks the
    narrow tile at run time for packs of few sequences. With `split-chains`
    (the default) the scan instead takes its widest tile whatever the
    sequence count, and the op gets `split_target_blocks = sm-count` and
    `warmup_bits`: packs of few long sequences are cut into segments at run
    time (measured at 1x32768: 0.58 ms against 1.08 with V tile 64 unsplit;
    docs/delta-rule.md says how a segment's state is warmed up). mma.sync
    tiles whose scan needs more shared memory than `shared-bytes` (the
    target's per-block limit) are skipped, down to V tile 32 with one stage
    (82 KiB at K = 128); when none fits, the pass fails and says what the
    smallest needs. It also sets `scores`: with the wgmma scan at V tile
    128 and no narrow tile `"producer"` (the scan's block gets a warpgroup
    that computes `P`; on the H200 faster than the alternatives for one,
    two and four value heads per key head, whole or split chains), else
    the prepare kernel's `P`; the `scores` option forces one choice. Every
    `gdn_kernel.prologue` gets blocks of 512 threads when whole blocks cover
    its channels' 16-byte lanes (one block of 16 warps per SM, measured
    faster than two of 256 on the H200), else 256 when they do, else keeps
    its own. The choice is the op's attributes, which the emitted kernel's
    banner repeats.
  }];
  let dependentDialects = ["::mlir::gdn::kernel::GdnKernelDialect"];
  let options = [
    Option<"smCount", "sm-count", "int64_t", /*default=*/"132",
           "Streaming multiprocessors of the target GPU (H200: 132)">,
    Option<"expectedSeqs", "expected-seqs", "int64_t", /*default=*/"0",
           "Sequences per pack when the packing type does not say; 0: "
           "unknown">,
    Option<"wgmma", "wgmma", "bool", /*default=*/"true",
           "The target has sm_90a's wgmma and TMA (Hopper); false picks the "
           "mma.sync scan, which runs on any sm_80+ GPU">,
    Option<"splitChains", "split-chains", "bool", /*default=*/"true",
           "Cut long sequences into segments at run time when the sequences "
           "alone make too few scan blocks; false picks a narrower tile "
           "instead (one block still walks each whole chain)">,
    Option<"sharedBytes", "shared-bytes", "int64_t", /*default=*/"232448",
           "Dynamic shared memory a block may use on the target (H100 / "
           "H200: 232448; A100: 166912; sm_86 / sm_89: 101376): mma.sync "
           "scan tiles that need more are not chosen">,
    Option<"warmupBits", "warmup-bits", "int64_t", /*default=*/"24",
           "A split segment's warm-up leaves out at most 2^-warmup-bits of "
           "the state before it; 0: every segment runs from its sequence's "
           "start (exact)">,
    Option<"scores", "scores", "std::string", /*default=*/"\"auto\"",
           "Which kernel computes each chunk's P: auto (the rule above), or "
           "prepare, scan or producer for every delta rule (a choice its "
           "tile cannot take is an error of the op's verifier)">
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
           "What the forward saves for the backward: activations, inputs "
           "or none">,
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

#endif // GDN_TRANSFORMS_PASSES_TD
