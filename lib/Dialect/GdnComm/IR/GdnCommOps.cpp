//===- GdnCommOps.cpp - gdn_comm op verifiers -----------------------------===//
//
// Shape rules of the collectives (what grows, what shrinks by the group size)
// and the layout rules that tie them to gdn's tensor encodings: gathering a
// contiguous token shard of P ranks over a group of P ranks gives the natural
// order, and nothing else does; a collective along another dimension moves no
// token, so it keeps the token layout it was given.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::comm;

#define GET_OP_CLASSES
#include "gdn/Dialect/GdnComm/IR/GdnCommOps.cpp.inc"

namespace {
/// Shared checks of ops that map one tensor to another of the same rank and
/// element type, where some dimensions change by the group size.
class CollectiveShape {
public:
  CollectiveShape(Operation *op, Value input, Value result)
      : op(op), input(cast<RankedTensorType>(input.getType())),
        result(cast<RankedTensorType>(result.getType())) {}

  LogicalResult sameRankAndElement() {
    if (input.getElementType() != result.getElementType())
      return op->emitOpError()
             << "result element type (" << result.getElementType()
             << ") must match the input's (" << input.getElementType() << ")";
    if (input.getRank() != result.getRank())
      return op->emitOpError()
             << "result rank (" << result.getRank()
             << ") must match the input's (" << input.getRank() << ")";
    return success();
  }

  LogicalResult dimInRange(int64_t dim, StringRef name) {
    if (dim < input.getRank())
      return success();
    return op->emitOpError()
           << name << " = " << dim << " is out of range for a rank-"
           << input.getRank() << " tensor";
  }

  /// result[dim] must be input[dim] * numerator / denominator. A dynamic
  /// side is unknown, but the static side must still be divisible: an input
  /// scattered over P ranks, or a result gathered from P ranks.
  LogicalResult scaled(unsigned dim, int64_t numerator, int64_t denominator) {
    int64_t in = input.getDimSize(dim), out = result.getDimSize(dim);
    int64_t groupSize = std::max(numerator, denominator);
    if (!ShapedType::isDynamic(in) && (in * numerator) % denominator != 0)
      return op->emitOpError()
             << "dimension " << dim << " of the input (" << in
             << ") must be divisible by the group size (" << denominator << ")";
    if (!ShapedType::isDynamic(out) && (out * denominator) % numerator != 0)
      return op->emitOpError()
             << "result dimension " << dim << " (" << out
             << ") must be a multiple of the group size (" << numerator
             << "): it concatenates one equal piece from every rank";
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(out))
      return success();
    int64_t expected = in * numerator / denominator;
    if (out == expected)
      return success();
    return op->emitOpError() << "result dimension " << dim << " must be "
                             << expected << " (input " << in << ", group of "
                             << groupSize << " ranks), found " << out;
  }

  /// Every dimension not in `changed` must be the same in input and result.
  LogicalResult othersUnchanged(ArrayRef<int64_t> changed) {
    for (int64_t dim = 0; dim < input.getRank(); ++dim) {
      if (llvm::is_contained(changed, dim))
        continue;
      int64_t in = input.getDimSize(dim), out = result.getDimSize(dim);
      if (!ShapedType::isDynamic(in) && !ShapedType::isDynamic(out) &&
          in != out)
        return op->emitOpError() << "result dimension " << dim << " must be "
                                 << in << " like the input's, found " << out;
    }
    return success();
  }

private:
  Operation *op;
  RankedTensorType input, result;
};

/// The token distribution of a type: its #gdn.seq shard, or null when the
/// tensor holds all tokens (natural order or a #gdn.heads shard).
SeqLayoutAttr getTokenShard(Type type) {
  return dyn_cast_or_null<SeqLayoutAttr>(getSequenceLayout(type));
}

/// A token-sharded layout's rank count must match the group it is gathered
/// or scattered over.
LogicalResult checkShardMatchesGroup(Operation *op, Type sharded,
                                     GroupAttr group, StringRef which) {
  SeqLayoutAttr seq = getTokenShard(sharded);
  if (!seq)
    return success();
  if (seq.getKind() != SeqLayoutKind::Contiguous)
    return op->emitOpError()
           << which << " is a " << stringifySeqLayoutKind(seq.getKind())
           << " shard; only contiguous shards map to rank order, use "
              "gdn.convert_layout for the others";
  if (seq.getRanks() != group.getRanks())
    return op->emitOpError() << which << " is sharded over " << seq.getRanks()
                             << " ranks but the group has " << group.getRanks();
  return success();
}

/// The tensor that holds every rank's tokens after a gather (or before a
/// scatter) along dimension 0 is in natural order, so it carries no token
/// shard.
LogicalResult checkAllTokens(Operation *op, Type type, StringRef which,
                             StringRef action) {
  SeqLayoutAttr seq = getTokenShard(type);
  if (!seq)
    return success();
  return op->emitOpError() << action << " tokens, so " << which
                           << " holds all of them in natural order, but it has "
                              "layout "
                           << describeLayout(seq)
                           << "; drop the encoding, or insert "
                              "gdn.convert_layout to reshard";
}

/// A collective along a dimension other than 0 leaves every token on its
/// rank, so the result keeps the input's token distribution.
LogicalResult checkTokensStay(Operation *op, Type input, Type result,
                              const Twine &action) {
  SeqLayoutAttr in = getTokenShard(input), out = getTokenShard(result);
  if (in == out)
    return success();
  return op->emitOpError() << action
                           << " moves no tokens, so the result must keep the "
                              "input's layout "
                           << describeLayout(in) << ", found "
                           << describeLayout(out);
}
/// In a program with an SP group of S ranks and a CP group of P ranks, SP
/// ranks are innermost: a contiguous token shard over S * P ranks, gathered
/// along tokens over the SP group, is the contiguous CP shard over P ranks,
/// and `#gdn.seq<zigzag, ranks = P, inner = S>` gathers to the zigzag CP
/// shard `#gdn.seq<zigzag, ranks = P>` (a reduce-scatter does the reverse).
/// `fine` is the shard over more ranks, `coarse` the one over fewer.
LogicalResult checkNestedShard(Operation *op, GroupAttr group, Type fine,
                               Type coarse, StringRef fineName,
                               StringRef coarseName) {
  SeqLayoutAttr in = getTokenShard(fine), out = getTokenShard(coarse);
  if (group.getKind() != GroupKind::SP)
    return op->emitOpError()
           << coarseName << " is a token shard over " << out.getRanks()
           << " ranks: only an SP group, the innermost ranks, moves between "
              "nested shards";
  const bool zigzag = out.getKind() == SeqLayoutKind::Zigzag;
  SeqLayoutAttr expected =
      zigzag ? SeqLayoutAttr::get(op->getContext(), SeqLayoutKind::Zigzag,
                                  out.getRanks(), group.getRanks())
             : SeqLayoutAttr::get(op->getContext(), SeqLayoutKind::Contiguous,
                                  out.getRanks() * group.getRanks());
  if (out.getInner() != 1 || in != expected)
    return op->emitOpError()
           << "with " << coarseName << " sharded as " << describeLayout(out)
           << ", " << fineName << " must be " << describeLayout(expected)
           << " (the SP group's " << group.getRanks()
           << " ranks nested inside), found " << describeLayout(in);
  return success();
}
} // namespace

LogicalResult AllGatherOp::verify() {
  CollectiveShape shape(*this, getInput(), getResult());
  int64_t ranks = getGroup().getRanks();
  if (failed(shape.sameRankAndElement()) ||
      failed(shape.dimInRange(getDim(), "dim")) ||
      failed(shape.scaled(getDim(), ranks, 1)) ||
      failed(shape.othersUnchanged({static_cast<int64_t>(getDim())})))
    return failure();
  Type input = getInput().getType(), result = getResult().getType();
  if (getDim() != 0)
    return checkTokensStay(*this, input, result,
                           "gathering along dim = " + Twine(getDim()));
  if (getTokenShard(result))
    return checkNestedShard(*this, getGroup(), input, result, "the input",
                            "the result");
  if (failed(checkShardMatchesGroup(*this, input, getGroup(), "the input")))
    return failure();
  return checkAllTokens(*this, result, "the result", "gathering");
}

LogicalResult ReduceScatterOp::verify() {
  CollectiveShape shape(*this, getInput(), getResult());
  int64_t ranks = getGroup().getRanks();
  if (failed(shape.sameRankAndElement()) ||
      failed(shape.dimInRange(getDim(), "dim")) ||
      failed(shape.scaled(getDim(), 1, ranks)) ||
      failed(shape.othersUnchanged({static_cast<int64_t>(getDim())})))
    return failure();
  Type input = getInput().getType(), result = getResult().getType();
  if (getDim() != 0)
    return checkTokensStay(*this, input, result,
                           "scattering along dim = " + Twine(getDim()));
  if (getTokenShard(input))
    return checkNestedShard(*this, getGroup(), result, input, "the result",
                            "the input");
  if (failed(checkAllTokens(*this, input, "the input", "scattering")))
    return failure();
  return checkShardMatchesGroup(*this, result, getGroup(), "the result");
}

LogicalResult AllToAllOp::verify() {
  CollectiveShape shape(*this, getInput(), getResult());
  int64_t ranks = getGroup().getRanks();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (failed(shape.sameRankAndElement()) ||
      failed(shape.dimInRange(split, "split_dim")) ||
      failed(shape.dimInRange(concat, "concat_dim")))
    return failure();
  // With split_dim = concat_dim every piece returns to the same dimension,
  // so no dimension changes size.
  if (split == concat) {
    if (failed(shape.othersUnchanged({})))
      return failure();
  } else if (failed(shape.othersUnchanged({split, concat})) ||
             failed(shape.scaled(split, 1, ranks)) ||
             failed(shape.scaled(concat, ranks, 1))) {
    return failure();
  }
  // A head shard can only come from splitting the head dimension over the
  // same group.
  for (auto [value, which] : {std::pair<Value, StringRef>{getInput(), "input"},
                              {getResult(), "result"}}) {
    auto heads =
        dyn_cast_or_null<HeadsLayoutAttr>(getSequenceLayout(value.getType()));
    if (!heads)
      continue;
    if (heads.getRanks() != ranks)
      return emitOpError() << "the " << which << " is split over "
                           << heads.getRanks()
                           << " ranks by heads but the group has " << ranks;
  }
  Type input = getInput().getType(), result = getResult().getType();
  if (split == 0 && concat == 0) {
    // Rank r receives block r of every rank's tokens: an interleaving that
    // no gdn layout describes.
    for (auto [type, which] : {std::pair<Type, StringRef>{input, "the input"},
                               {result, "the result"}})
      if (SeqLayoutAttr seq = getTokenShard(type))
        return emitOpError()
               << "split_dim = concat_dim = 0 interleaves token blocks of all "
                  "ranks, which no layout describes, but "
               << which << " has layout " << describeLayout(seq)
               << "; use gdn.convert_layout to reshard tokens";
    return success();
  }
  if (split != 0 && concat != 0)
    return checkTokensStay(*this, input, result,
                           "exchanging along split_dim = " + Twine(split) +
                               " and concat_dim = " + Twine(concat));
  if (concat == 0 &&
      (failed(checkShardMatchesGroup(*this, input, getGroup(), "the input")) ||
       failed(checkAllTokens(*this, result, "the result", "concatenating"))))
    return failure();
  if (split == 0 &&
      (failed(checkAllTokens(*this, input, "the input", "splitting")) ||
       failed(checkShardMatchesGroup(*this, result, getGroup(), "the result"))))
    return failure();
  return success();
}

LogicalResult LocalShardOp::verify() {
  CollectiveShape shape(*this, getInput(), getResult());
  const int64_t dim = getDim();
  if (failed(shape.sameRankAndElement()) ||
      failed(shape.dimInRange(dim, "dim")) ||
      failed(shape.othersUnchanged({dim})) ||
      failed(shape.scaled(dim, 1, getGroup().getRanks())))
    return failure();
  for (auto [value, which] : {std::pair<Value, StringRef>{getInput(), "input"},
                              {getResult(), "result"}})
    if (Attribute layout = getSequenceLayout(value.getType()))
      return emitOpError() << "cuts a tensor every rank holds whole, but the "
                           << which << " carries the layout " << layout;
  return success();
}

LogicalResult HaloExchangeOp::verify() {
  CollectiveShape shape(*this, getInput(), getHalo());
  if (failed(shape.sameRankAndElement()))
    return failure();
  auto input = getInput().getType();
  if (input.getRank() == 0)
    return emitOpError() << "expects a token-indexed input [T, ...], found "
                         << input;
  if (failed(shape.othersUnchanged({0})))
    return failure();
  int64_t tokens = getTokens();
  int64_t rows = getHalo().getType().getDimSize(0);
  if (!ShapedType::isDynamic(rows) && rows != tokens)
    return emitOpError() << "the halo must have tokens = " << tokens
                         << " rows, found " << rows;
  if (failed(checkShardMatchesGroup(*this, input, getGroup(), "the input")))
    return failure();
  if (getSequenceLayout(getHalo().getType()))
    return emitOpError() << "the halo is a few rows of the previous rank, not "
                            "a shard; it must carry no layout";
  return success();
}

LogicalResult StateExchangeOp::verify() {
  auto transition = getTransition().getType();
  auto partial = getPartialState().getType();
  auto incoming = getIncomingState().getType();
  if (transition.getRank() != 3 || partial.getRank() != 3)
    return emitOpError() << "expects transition [HV, K, K] and partial_state "
                            "[HV, K, V], found "
                         << transition << " and " << partial;
  for (Type type : {Type(transition), Type(partial), Type(incoming)})
    if (!getElementTypeOrSelf(type).isF32() &&
        !getElementTypeOrSelf(type).isF64())
      return emitOpError() << "chains states in fp32: every operand and the "
                              "result must be f32 (or f64), found "
                           << type;
  if (transition.getElementType() != partial.getElementType())
    return emitOpError() << "transition element type ("
                         << transition.getElementType()
                         << ") must match partial_state's ("
                         << partial.getElementType()
                         << "); chain both in one precision";
  for (auto [type, which] :
       {std::pair<RankedTensorType, StringRef>{transition, "transition"},
        {partial, "partial_state"}})
    if (SeqLayoutAttr seq = getTokenShard(type))
      return emitOpError() << which
                           << " is a per-rank summary, not a token-indexed "
                              "activation; it must carry no sequence layout, "
                              "found "
                           << describeLayout(seq);
  if (incoming != partial)
    return emitOpError() << "the incoming state must have the partial state's "
                            "type "
                         << partial << ", found " << incoming;
  auto agree = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  int64_t heads = partial.getDimSize(0), keyDim = partial.getDimSize(1);
  if (agree(transition.getDimSize(0), heads) &&
      agree(transition.getDimSize(1), keyDim) &&
      agree(transition.getDimSize(2), keyDim))
    return success();
  auto print = [](int64_t size) {
    return ShapedType::isDynamic(size) ? std::string("?")
                                       : std::to_string(size);
  };
  return emitOpError() << "transition " << transition
                       << " must be [HV, K, K] = [" << print(heads) << ", "
                       << print(keyDim) << ", " << print(keyDim)
                       << "] for the partial state " << partial
                       << " [HV, K, V]";
}
