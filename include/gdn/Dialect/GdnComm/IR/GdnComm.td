//===- GdnComm.td - the gdn_comm dialect -------------------*- tablegen -*-===//
//
// Collectives over a named process group (the SP or the CP group), kept apart
// from the gdn dialect so each lowering stage has a clear legality target: a
// program with no gdn_comm ops runs on one rank.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDNCOMM_GDNCOMM_TD
#define GDN_DIALECT_GDNCOMM_GDNCOMM_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def GdnComm_Dialect : Dialect {
  let name = "gdn_comm";
  let summary = "collectives for sequence and context parallel GDN layers";
  let description = [{
    Every op names its process group with `#gdn_comm.group<kind, ranks>` and
    is executed by all ranks of that group in the same order (the reference
    interpreter matches them by group and position, NCCL by issue order).
    The ops are value semantic: each rank passes its local tensor and gets
    the result tensor. All of them are side-effecting from the compiler's
    point of view, so they are never reordered, duplicated or removed.
  }];
  let cppNamespace = "::mlir::gdn::comm";
  let useDefaultAttributePrinterParser = 1;
}

class GdnComm_Op<string mnemonic, list<Trait> traits = []>
    : Op<GdnComm_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def GdnComm_GroupKind : I32Enum<"GroupKind", "role of a process group", [
  I32EnumCase<"SP", 0, "sp">,
  I32EnumCase<"CP", 1, "cp">
]> {
  let cppNamespace = "::mlir::gdn::comm";
}

def GdnComm_GroupAttr : AttrDef<GdnComm_Dialect, "Group"> {
  let mnemonic = "group";
  let summary = "a process group: its role and number of ranks";
  let description = [{
    `#gdn_comm.group<cp, 4>` is the context-parallel group of 4 ranks.
    The runtime binds each role to a communicator.
  }];
  let parameters = (ins EnumParameter<GdnComm_GroupKind>:$kind,
                        "int64_t":$ranks);
  let assemblyFormat = "`<` $kind `,` $ranks `>`";
  let genVerifyDecl = 1;
}

def GdnComm_ChainKind : I32Enum<"ChainKind",
    "how the chunkwise-CP state summaries are chained across ranks", [
  I32EnumCase<"AllGather", 0, "all_gather">,
  I32EnumCase<"Scan", 1, "scan">
]> {
  let cppNamespace = "::mlir::gdn::comm";
}

def GdnComm_ChainKindAttr : EnumAttr<GdnComm_Dialect, GdnComm_ChainKind, "chain"> {
  let assemblyFormat = "`<` $value `>`";
}

def GdnComm_Tensor : RankedTensorOf<[AnyFloat]>;

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

def GdnComm_RankOp : GdnComm_Op<"rank", [Pure]> {
  let summary = "this process's rank within a group";
  let description = [{
    ```mlir
    %r = gdn_comm.rank {group = #gdn_comm.group<cp, 4>} : index
    ```
  }];
  let arguments = (ins GdnComm_GroupAttr:$group);
  let results = (outs Index:$rank);
  let assemblyFormat = "attr-dict `:` type($rank)";
}

def GdnComm_LocalShardOp : GdnComm_Op<"local_shard", [Pure]> {
  let summary = "this rank's block of a tensor every rank holds whole";
  let description = [{
    Cuts `input` into `ranks` equal blocks along `dim` and returns block `r`
    on rank `r` of `group`, with no communication. Headwise context
    parallelism uses it for what every rank holds whole and each rank needs
    a part of: the conv weight, bias and initial conv state (after
    `gdn.regroup_sections` has put each rank's share of q, k and v side by
    side), `A_log`, `dt_bias` and initial delta-rule states (by head).
    Neither side carries a token layout.

    ```mlir
    %w = gdn_comm.local_shard %all {group = #gdn_comm.group<cp, 4>, dim = 0 : i64}
        : tensor<8192x4xbf16> -> tensor<2048x4xbf16>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$input, GdnComm_GroupAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs GdnComm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def GdnComm_AllGatherOp : GdnComm_Op<"all_gather"> {
  let summary = "concatenates every rank's tensor along a dimension";
  let description = [{
    The result is the rank-ordered concatenation of all ranks' inputs along
    `dim`, so that dimension grows `ranks` times. Gathering a contiguous
    token shard of the same group along tokens (`dim = 0`) yields the natural
    layout; a gather along any other dimension moves no token, so the result
    keeps the input's token layout. In a program with an SP group of S and a
    CP group of P ranks, SP ranks are innermost: gathering the contiguous
    shard over S * P ranks over the SP group gives the contiguous CP shard
    over P ranks.

    ```mlir
    %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64}
        : tensor<512x2048xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<2048x2048xbf16>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$input, GdnComm_GroupAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs GdnComm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def GdnComm_ReduceScatterOp : GdnComm_Op<"reduce_scatter"> {
  let summary = "sums across ranks, each rank keeps one slice";
  let description = [{
    Sums the inputs of all ranks elementwise and returns to rank `r` the
    `r`-th of `ranks` equal slices along `dim`. Along tokens (`dim = 0`) the
    input holds all tokens in natural order and the result is a contiguous
    shard of the group; along any other dimension the token layout is kept.
    Over the SP group of an S x P grid (SP innermost), the contiguous CP
    shard over P ranks scatters to the contiguous shard over S * P ranks.

    ```mlir
    %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64}
        : tensor<2048x2048xbf16> -> tensor<512x2048xbf16, #gdn.seq<contiguous, ranks = 4>>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$input, GdnComm_GroupAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs GdnComm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def GdnComm_AllToAllOp : GdnComm_Op<"all_to_all"> {
  let summary = "splits along one dimension, exchanges, concatenates along another";
  let description = [{
    Each rank cuts its input into `ranks` equal pieces along `split_dim` and
    sends piece `j` to rank `j`; the received pieces are concatenated in rank
    order along `concat_dim`. Headwise (Ulysses) context parallelism uses it
    to trade a token shard for a head shard and back: concatenating tokens
    needs a contiguous shard of the group and gives all tokens, splitting
    tokens does the reverse, and an exchange between two other dimensions
    keeps the token layout.

    ```mlir
    %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64}
        : tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>>
        -> tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$input, GdnComm_GroupAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$split_dim,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$concat_dim);
  let results = (outs GdnComm_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def GdnComm_HaloExchangeOp : GdnComm_Op<"halo_exchange"> {
  let summary = "receives the previous rank's last tokens (the conv halo)";
  let description = [{
    Returns the `tokens` buffer rows just before this rank's contiguous
    token shard: the previous rank's last rows, and further back when
    shards are shorter than `tokens` (any shard size works, empty ones
    included); rows before the buffer's start are zeros (all of rank 0's
    halo). The chunkwise-CP conv uses them as the `W - 1` taps before its
    first token when that token continues a sequence from the previous
    rank. The input is a contiguous token shard of the group (or carries no
    layout); the halo carries no layout.

    ```mlir
    %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64}
        : tensor<2048x8192xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<3x8192xbf16>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$input, GdnComm_GroupAttr:$group,
                       ConfinedAttr<I64Attr, [IntPositive]>:$tokens);
  let results = (outs GdnComm_Tensor:$halo);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($halo)";
  let hasVerifier = 1;
}

def GdnComm_StateExchangeOp : GdnComm_Op<"state_exchange"> {
  let summary = "chains the per-rank delta-rule summaries of chunkwise CP";
  let description = [{
    Rank `r` contributes the summary of the sequence that leaves its shard:
    the transition `M_r` (`[HV, K, K]`) and the partial state `S_r`
    (`[HV, K, V]`) such that the state it hands on is `M_r * S_in + S_r`
    (`M_r = 0` when that sequence starts on rank `r`). The result on rank `r`
    is its incoming state `S_in(r)`, with `S_in(0) = 0` and
    `S_in(r + 1) = M_r * S_in(r) + S_r`, computed in fp32. All three tensors
    share one element type (f32, or f64 in reference programs) and carry no
    token layout.
    `chain = all_gather` gathers every summary and chains locally;
    `chain = scan` uses a log-depth scan.

    ```mlir
    %h0 = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>, chain = #gdn_comm.chain<all_gather>}
        : (tensor<32x128x128xf32>, tensor<32x128x128xf32>) -> tensor<32x128x128xf32>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$transition, GdnComm_Tensor:$partial_state,
                       GdnComm_GroupAttr:$group,
                       DefaultValuedAttr<GdnComm_ChainKindAttr,
                           "::mlir::gdn::comm::ChainKind::AllGather">:$chain);
  let results = (outs GdnComm_Tensor:$incoming_state);
  let assemblyFormat = [{
    $transition `,` $partial_state attr-dict `:`
    `(` type($transition) `,` type($partial_state) `)` `->` type($incoming_state)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Chunkwise context parallelism: each rank's view of the packing
//===----------------------------------------------------------------------===//
//
// A chunkwise-CP rank runs the core on its contiguous token shard with a
// packing clipped to the shard. At most one sequence continues into the shard
// from the previous rank (its real tokens begin before the shard's first row
// and reach into it) and at most one leaves it for the next rank. The ops
// below are local (no communication) but depend on the rank; they take the
// global packing and find those two sequences from it.

def GdnComm_Packing : Type<CPred<"::llvm::isa<::mlir::gdn::PackingType>($_self)">,
                           "packed-sequence metadata", "::mlir::gdn::PackingType">;

def GdnComm_LocalPackingOp : GdnComm_Op<"local_packing", [Pure]> {
  let summary = "this rank's packing: every sequence clipped to its token shard";
  let description = [{
    The buffer of `T` rows is cut into `ranks` contiguous shards of `T/P`
    rows. On rank `r` the result describes shard `r` alone: the same `N`
    sequences, each one's slot and real tokens clipped to the shard (most
    of them to nothing), with offsets relative to the shard's first row. A
    sequence that continues from the previous rank starts at row 0 of the
    shard; its state comes from `gdn_comm.continue_state` and
    `gdn_comm.continue_conv_state`.

    ```mlir
    %lp = gdn_comm.local_packing %p {group = #gdn_comm.group<cp, 4>}
        : !gdn.packing<seqs = ?, tokens = 8192> -> !gdn.packing<seqs = ?, tokens = 2048>
    ```
  }];
  let arguments = (ins GdnComm_Packing:$packing, GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Packing:$local);
  let assemblyFormat = [{
    $packing attr-dict `:` qualified(type($packing)) `->` qualified(type($local))
  }];
  let hasVerifier = 1;
}

def GdnComm_ContinueConvStateOp : GdnComm_Op<"continue_conv_state", [Pure]> {
  let summary = "the conv states of a rank's sequences, with the halo for the continuing one";
  let description = [{
    The initial conv states (`[N, C, W-1]`, most recent last) of this
    rank's clipped sequences: `initial_state` (or zero) for every sequence
    except the one that continues from the previous rank, whose state is
    the `W-1` buffer rows before the shard. Those rows are the `halo` (from
    `gdn_comm.halo_exchange`) where they belong to the sequence, and its
    `initial_state` (or zero) before the sequence's first token.

    ```mlir
    %h = gdn_comm.continue_conv_state %halo, %p initial_state(%h0) {group = #gdn_comm.group<cp, 4>}
        : (tensor<3x8192xbf16>, !gdn.packing<seqs = 8, tokens = ?>, tensor<8x8192x3xbf16>)
        -> tensor<8x8192x3xbf16>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$halo, GdnComm_Packing:$packing,
                       Optional<GdnComm_Tensor>:$initial_state,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$state);
  let assemblyFormat = [{
    $halo `,` $packing (`initial_state` `(` $initial_state^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnComm_StateSummaryOp : GdnComm_Op<"state_summary", [Pure]> {
  let summary = "the delta-rule summary of the sequence that leaves this rank";
  let description = [{
    For the sequence whose real tokens continue past this rank's shard,
    over its tokens in the shard (`q`, `k`, `v`, `g`, `beta` are the shard's
    rows, `packing` is the global packing): the transition
    `M = prod_t exp(g_t) (I - beta_t k_t k_t^T)` (`[HV, K, K]`, latest
    token on the left) and the partial state `S` (`[HV, K, V]`) such that
    the state it hands to the next rank is `M S_in + S`, where `S_in` is
    the state it entered the shard with. A sequence that starts in the
    shard has `M = 0` and `S` computed from its `initial_state` (or zero);
    one that started earlier has `S` computed from zero. Without a leaving
    sequence (the last rank, or a shard that ends where a sequence does)
    both are zero. `gdn_comm.state_exchange` chains the summaries.

    ```mlir
    %m, %s = gdn_comm.state_summary %q, %k, %v, %g, %beta, %p {group = #gdn_comm.group<cp, 4>}
        : (tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>, ...)
        -> (tensor<32x128x128xf32>, tensor<32x128x128xf32>)
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$q, GdnComm_Tensor:$k, GdnComm_Tensor:$v,
                       GdnComm_Tensor:$g, GdnComm_Tensor:$beta,
                       GdnComm_Packing:$packing,
                       Optional<GdnComm_Tensor>:$initial_state,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$transition, GdnComm_Tensor:$partial_state);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta `,` $packing
    (`initial_state` `(` $initial_state^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnComm_SummaryPackingOp : GdnComm_Op<"summary_packing", [Pure]> {
  let summary = "the leaving sequence's rows of this rank's shard, as a packing";
  let description = [{
    A packing of this rank's contiguous shard (`T / P` rows) with two
    sequences: sequence 1 is the real tokens of the sequence that leaves the
    shard for the next rank (those in the shard: from its first row there
    to the shard's end), sequence 0 is the rows before them, all padding.
    Without a leaving sequence both are empty. `gdn-lower-state-summaries`
    runs the delta rule over it to compute a `gdn_comm.state_summary`, so
    the summary costs as many rows as the leaving sequence has in the
    shard, and reuses the delta-rule kernels. `packing` is the global
    packing.

    ```mlir
    %sp = gdn_comm.summary_packing %p {group = #gdn_comm.group<cp, 4>}
        : !gdn.packing<seqs = ?, tokens = 8192> -> !gdn.packing<seqs = 2, tokens = 2048, padded>
    ```
  }];
  let arguments = (ins GdnComm_Packing:$packing, GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Packing:$summary);
  let assemblyFormat = [{
    $packing attr-dict `:` qualified(type($packing)) `->` qualified(type($summary))
  }];
  let hasVerifier = 1;
}

def GdnComm_SummaryInitialStatesOp : GdnComm_Op<"summary_initial_states",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the initial states of the two delta-rule runs of a state summary";
  let description = [{
    Over `gdn_comm.summary_packing`'s two sequences, the delta rule from
    `partial` (`[2, HV, K, V]`) ends in the summary's partial state `S`,
    and the delta rule over zero values from `transition` (`[2, HV, K, K]`)
    ends in its transition `M` (the state is linear in the initial state,
    and with zero values the transition applies to the identity). Entry 1
    of `partial` is the leaving sequence's `initial_state` when the
    sequence starts in the shard (zero otherwise); entry 1 of `transition`
    is the identity when it began on an earlier rank (zero otherwise: a
    sequence that starts here hands on no incoming state). Entry 0, the
    padding's, is zero in both. `packing` is the global packing.

    With `incoming` (`[HV, K, V]`, the state the rank receives), entry 1 of
    `partial` is `incoming` when the leaving sequence began on an earlier
    rank: the delta rule from it ends in the state the sequence really has
    at the shard's end, `M incoming + S`. The gradient of a summary whose
    cotangents come from `gdn_comm.reverse_state_exchange` is that run's
    gradient (`gdn-lower-state-summaries`).

    ```mlir
    %hs, %hm = gdn_comm.summary_initial_states %p initial_state(%h0) {group = #gdn_comm.group<cp, 4>}
        : (!gdn.packing<seqs = 8, tokens = 8192>, tensor<8x32x128x128xf32>)
        -> (tensor<2x32x128x128xf32>, tensor<2x32x128x128xf32>)
    ```
  }];
  let arguments = (ins GdnComm_Packing:$packing,
                       Optional<GdnComm_Tensor>:$initial_state,
                       Optional<GdnComm_Tensor>:$incoming,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$partial, GdnComm_Tensor:$transition);
  let assemblyFormat = [{
    $packing (`initial_state` `(` $initial_state^ `)`)?
    (`incoming` `(` $incoming^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnComm_ContinueStateOp : GdnComm_Op<"continue_state", [Pure]> {
  let summary = "the delta-rule initial states of a rank's sequences";
  let description = [{
    The initial states (`[N, HV, K, V]`) of this rank's clipped sequences:
    `initial_state` (or zero) for every sequence except the one that
    continues from the previous rank, which starts from `incoming`
    (`[HV, K, V]`, from `gdn_comm.state_exchange`).

    ```mlir
    %s0 = gdn_comm.continue_state %in, %p {group = #gdn_comm.group<cp, 4>}
        : (tensor<32x128x128xf32>, !gdn.packing<seqs = 8, tokens = ?>) -> tensor<8x32x128x128xf32>
    ```
  }];
  let arguments = (ins GdnComm_Tensor:$incoming, GdnComm_Packing:$packing,
                       Optional<GdnComm_Tensor>:$initial_state,
                       GdnComm_GroupAttr:$group);
  let results = (outs GdnComm_Tensor:$state);
  let assemblyFormat = [{
    $incoming `,` $packing (`initial_state` `(` $initial_state^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def GdnComm_GatherSequenceStatesOp : GdnComm_Op<"gather_sequence_states"> {
  let summary = "each sequence's final state from the rank that ends it";
  let description = [{
    Every rank holds per-sequence states (`[N, ...]`) that are right only
    for the sequences whose last real token lies in its shard. The result,
    on every rank, takes sequence `i`'s entry from that rank (for an empty
    sequence, from the rank whose shard holds its slot's start; every rank
    agrees on those). `packing` is the global packing.

    ```mlir
    %s = gdn_comm.gather_sequence_states %local, %p {group = #gdn_comm.group<cp, 4>}
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

include "gdn/Dialect/GdnComm/IR/GdnCommGradientOps.td"

#endif // GDN_DIALECT_GDNCOMM_GDNCOMM_TD
