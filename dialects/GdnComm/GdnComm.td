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
    keeps the input's token layout.

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
    Rank `r` sends the last `tokens` rows of its token shard to rank `r + 1`
    and returns the rows received from rank `r - 1` (zeros on rank 0). The
    chunkwise-CP conv uses them as the `W - 1` taps before its first token
    when that token continues a sequence from the previous rank. The input
    is a contiguous token shard of the group (or carries no layout) with at
    least `tokens` rows; the halo carries no layout.

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

#endif // GDN_DIALECT_GDNCOMM_GDNCOMM_TD
