//===- GdnCommGradientOps.td - transposed communication ----*- tablegen -*-===//
//
// The backward of a P-rank program moves cotangents the opposite way its
// forward moved values. Most transposes are existing collectives
// (all_gather <-> reduce_scatter, all_to_all with its dimensions swapped,
// gdn.convert_layout back); the ops here are the ones with no forward
// counterpart: the reverse halo and state chains of chunkwise CP, the
// return of final-state cotangents to the ranks that own the sequences, the
// VJPs of chunkwise CP's per-rank ops, and the two conversions between a
// value every rank holds whole (replicated) and per-rank partial sums.
//
// In a backward program the cotangent of a tensor without a token layout is a
// partial sum: its value is the sum of the ranks' tensors (the loss counts
// every rank's contribution once). gdn_comm.all_reduce turns partial sums into
// the replicated total; gdn_comm.replicated_to_partial turns a replicated
// cotangent (one the caller gives whole to every rank) into partial sums.
// docs/spec.md ("Partial sums") states the convention.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDNCOMM_GDNCOMMGRADIENTOPS_TD
#define GDN_DIALECT_GDNCOMM_GDNCOMMGRADIENTOPS_TD


//===----------------------------------------------------------------------===//
// Replicated values and partial sums
//===----------------------------------------------------------------------===//

def GdnComm_AllReduceOp : GdnComm_Op<"all_reduce", [AllTypesMatch<["input", "result"]>]> {
  let summary = "sums every rank's tensor; every rank gets the sum";
  let description = [{
    Elementwise sum of the inputs of all ranks of the group, in rank order,
    returned to every rank. The backward of a P-rank program uses it for the
    gradient of an argument every rank holds whole (weights, parameters,
    initial states): each rank's gradient is a partial sum, and the
    argument's gradient is their total, the same on every rank. The input
    carries no token layout.

    ```mlir
    %dw = gdn_comm.all_reduce %dw_partial {group = #gdn_comm.group<cp, 4>} : tensor<128xf32>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$input, GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def GdnComm_ReplicatedToPartialOp : GdnComm_Op<"replicated_to_partial",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "a tensor every rank holds whole, as partial sums over the group";
  let description = [{
    Rank 0 of the group returns `input`, every other rank zeros, so that the
    sum over the group's ranks is `input` once. A backward program applies
    it to the cotangent of a result every rank holds whole (a final state
    gathered to all ranks): the caller gives that cotangent to every rank,
    the loss counts it once, and the transposed collectives downstream sum
    cotangents over ranks. No communication. The input carries no token
    layout.

    ```mlir
    %c = gdn_comm.replicated_to_partial %dht {group = #gdn_comm.group<cp, 4>} : tensor<?x16x2x2xf64>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$input, GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def GdnComm_LocalUnshardOp : GdnComm_Op<"local_unshard", [Pure]> {
  let summary = "places this rank's block at its offset in a zero tensor";
  let description = [{
    The transpose of `gdn_comm.local_shard`: the result has `ranks` times the
    input's extent along `dim`, holds `input` in block `r` on rank `r` of
    the group and zeros elsewhere. No communication: summed over the ranks
    (`gdn_comm.all_reduce`), the blocks give the cotangent of the tensor the
    forward sliced. Neither side carries a token layout.

    ```mlir
    %dw = gdn_comm.local_unshard %dblock {group = #gdn_comm.group<cp, 4>, dim = 0 : i64}
        : tensor<2048x4xbf16> -> tensor<8192x4xbf16>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$input, GdnComm_GroupAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs GdnComm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Chunkwise context parallelism, reversed
//===----------------------------------------------------------------------===//

def GdnComm_ReturnHaloOp : GdnComm_Op<"return_halo", [AllTypesMatch<["dest", "result"]>]> {
  let summary = "adds every rank's halo cotangent back onto the rows it was copied from";
  let description = [{
    The transpose of `gdn_comm.halo_exchange`: rank `r`'s `halo_grad` holds
    the cotangents of the `tokens` buffer rows before its shard; each row's
    cotangent is sent to the rank that holds that row (the previous one, or
    further back when shards are shorter) and added there to `dest`, the
    cotangent of that rank's shard so far. Rows before the buffer's start
    (rank 0's halo) are dropped. The result has `dest`'s type: a contiguous
    token shard of the group (or no layout, like the forward's input).

    ```mlir
    %dx = gdn_comm.return_halo %dhalo, %dx0 {group = #gdn_comm.group<cp, 4>}
        : tensor<3x8192xbf16>, tensor<2048x8192xbf16, #gdn.seq<contiguous, ranks = 4>>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$halo_grad, GdnComm_Tensor:$dest,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$result);
  let assemblyFormat = [{
    $halo_grad `,` $dest attr-dict `:` type($halo_grad) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def GdnComm_ReverseStateExchangeOp : GdnComm_Op<"reverse_state_exchange"> {
  let summary = "the reverse chain of gdn_comm.state_exchange";
  let description = [{
    The VJP of `gdn_comm.state_exchange` at its operands `transition` (`M_r`)
    and `partial_state` (`S_r`), given the cotangent `incoming_state_grad`
    of each rank's incoming state `S_in(r)`. The chain runs backwards over
    the ranks: `G(P) = 0`, `G(r) = incoming_state_grad(r) + M_r^T G(r + 1)`
    (the whole cotangent of `S_in(r)`), and rank `r` gets
    `partial_state_grad = G(r + 1)` and
    `transition_grad = G(r + 1) S_in(r)^T`, where `S_in(r)` is the forward
    chain's value, recomputed from the operands in fp32 (f64 in reference
    programs). `chain` names the forward's chain; both compute this
    function.

    ```mlir
    %dm, %ds = gdn_comm.reverse_state_exchange %dsin, %m, %s {group = #gdn_comm.group<cp, 4>}
        : (tensor<32x128x128xf32>, tensor<32x128x128xf32>, tensor<32x128x128xf32>)
        -> (tensor<32x128x128xf32>, tensor<32x128x128xf32>)
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$incoming_state_grad,
                       GdnComm_Tensor:$transition, GdnComm_Tensor:$partial_state,
                       GdnComm_GroupAttr:$group,
                       DefaultValuedAttr<GdnComm_ChainKindAttr,
                           "::mlir::gdn::comm::ChainKind::AllGather">:$chain);
  let results = (outs GdnComm_Tensor:$transition_grad,
                      GdnComm_Tensor:$partial_state_grad);
  let assemblyFormat = [{
    $incoming_state_grad `,` $transition `,` $partial_state attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnComm_ReduceSequenceStatesOp : GdnComm_Op<"reduce_sequence_states"> {
  let summary = "sums the ranks' per-sequence cotangents onto the rank that ends each sequence";
  let description = [{
    The transpose of `gdn_comm.gather_sequence_states`: entry `i` of the
    result is, on the rank that holds sequence `i`'s last real token (for an
    empty sequence, the rank `gather_sequence_states` reads it from), the
    sum over all ranks of their entry `i` of `input`, and zero on every
    other rank. `packing` is the global packing.

    ```mlir
    %d = gdn_comm.reduce_sequence_states %dht, %p {group = #gdn_comm.group<cp, 4>}
        : (tensor<8x32x128x128xf32>, !gdn.packing<seqs = 8, tokens = ?>) -> tensor<8x32x128x128xf32>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$input, GdnComm_Packing:$packing,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $packing attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnComm_StateSummaryGradOp : GdnComm_Op<"state_summary_grad", [Pure]> {
  let summary = "the vector-Jacobian product of gdn_comm.state_summary";
  let description = [{
    Given the operands of a `gdn_comm.state_summary` (but `q`, which no
    summary reads) and the cotangents of its transition and partial state,
    returns the cotangents of `k`, `v`, `g`, `beta` and, when given,
    `initial_state`: a reverse sweep over the leaving sequence's rows of the
    shard through `S <- exp(g) (I - beta k k^T) S + beta k v^T` and
    `M <- exp(g) (I - beta k k^T) M`. Rows of other sequences get zero.

    ```mlir
    %dk, %dv, %dg, %dbeta = gdn_comm.state_summary_grad %dm, %ds, %k, %v, %g, %beta, %p
        {group = #gdn_comm.group<cp, 4>} : (...) -> (...)
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$transition_grad,
                       GdnComm_Tensor:$partial_state_grad,
                       GdnComm_Tensor:$k, GdnComm_Tensor:$v, GdnComm_Tensor:$g,
                       GdnComm_Tensor:$beta, GdnComm_Packing:$packing,
                       Optional<GdnComm_Tensor>:$initial_state,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$k_grad, GdnComm_Tensor:$v_grad,
                      GdnComm_Tensor:$g_grad, GdnComm_Tensor:$beta_grad,
                      Optional<GdnComm_Tensor>:$initial_state_grad);
  let assemblyFormat = [{
    $transition_grad `,` $partial_state_grad `,` $k `,` $v `,` $g `,` $beta `,`
    $packing (`initial_state` `(` $initial_state^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnComm_ContinueConvStateGradOp : GdnComm_Op<"continue_conv_state_grad", [Pure]> {
  let summary = "the vector-Jacobian product of gdn_comm.continue_conv_state";
  let description = [{
    Sends the cotangent of each clipped sequence's conv state back where
    `gdn_comm.continue_conv_state` read it: for the sequence that continues
    from the previous rank, entries from the halo go to `halo_grad`
    (`[W-1, C]`) and the taps before its first token to its entry of
    `initial_state_grad`; every other sequence's entry goes to
    `initial_state_grad`. `initial_state_grad` is a result when the forward
    had an initial state (what no initial state read is dropped).

    ```mlir
    %dhalo, %dh0 = gdn_comm.continue_conv_state_grad %dstate, %p {group = #gdn_comm.group<cp, 4>}
        : (tensor<8x8192x3xbf16>, !gdn.packing<seqs = 8, tokens = ?>)
        -> (tensor<3x8192xbf16>, tensor<8x8192x3xbf16>)
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$state_grad, GdnComm_Packing:$packing,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$halo_grad,
                      Optional<GdnComm_Tensor>:$initial_state_grad);
  let assemblyFormat = [{
    $state_grad `,` $packing attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnComm_ContinueStateGradOp : GdnComm_Op<"continue_state_grad", [Pure]> {
  let summary = "the vector-Jacobian product of gdn_comm.continue_state";
  let description = [{
    The continuing sequence's entry of `state_grad` is the cotangent of the
    incoming state (`[HV, K, V]`; zero when no sequence continues into the
    shard); the other entries, with the continuing one zeroed, are
    `initial_state_grad`, a result when the forward had an initial state.

    ```mlir
    %din, %ds0 = gdn_comm.continue_state_grad %dstate, %p {group = #gdn_comm.group<cp, 4>}
        : (tensor<8x32x128x128xf32>, !gdn.packing<seqs = 8, tokens = ?>)
        -> (tensor<32x128x128xf32>, tensor<8x32x128x128xf32>)
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$state_grad, GdnComm_Packing:$packing,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$incoming_grad,
                      Optional<GdnComm_Tensor>:$initial_state_grad);
  let assemblyFormat = [{
    $state_grad `,` $packing attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnComm_SummaryInitialStatesGradOp : GdnComm_Op<"summary_initial_states_grad", [Pure]> {
  let summary = "the vector-Jacobian product of gdn_comm.summary_initial_states";
  let description = [{
    Given the cotangent of `partial` (`[2, HV, K, V]`), returns that of the
    per-sequence `initial_state` (`[N, HV, K, V]`): entry 1 goes to the
    leaving sequence's entry when it starts in the shard, every other entry
    is zero. (`transition` does not depend on the initial states.)

    ```mlir
    %dh0 = gdn_comm.summary_initial_states_grad %dhs, %p {group = #gdn_comm.group<cp, 4>}
        : (tensor<2x32x128x128xf32>, !gdn.packing<seqs = 8, tokens = 8192>) -> tensor<8x32x128x128xf32>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$partial_grad, GdnComm_Packing:$packing,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$initial_state_grad);
  let assemblyFormat = [{
    $partial_grad `,` $packing attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // GDN_DIALECT_GDNCOMM_GDNCOMMGRADIENTOPS_TD
