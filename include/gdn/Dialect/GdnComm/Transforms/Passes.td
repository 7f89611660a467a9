//===- Passes.td - gdn -> gdn_comm: sequence and context parallelism ---*- tablegen -*-===//
//
// The passes of one level, gdn -> gdn_comm: sequence and context parallelism.
// The flag names the effect; each pass has a lit test file of the same name
// under test/Transforms. Options, statistics and dependent dialects live
// here so that registration, documentation and flags come from one place.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDNCOMM_TRANSFORMS_PASSES_TD
#define GDN_DIALECT_GDNCOMM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif // GDN_DIALECT_GDNCOMM_TRANSFORMS_PASSES_TD
