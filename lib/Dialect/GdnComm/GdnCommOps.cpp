//===- GdnCommOps.cpp - gdn_comm op verifiers -----------------------------===//
//
// Shape rules of the collectives (what grows, what shrinks by the group size)
// and the layout rules that tie them to gdn's tensor encodings: gathering a
// contiguous token shard of P ranks over a group of P ranks gives the natural
// order, and nothing else does.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnComm/GdnCommDialect.h"

#include "gdn/Dialect/Gdn/SequenceLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::comm;

#define GET_OP_CLASSES
#include "gdn/Dialect/GdnComm/GdnCommOps.cpp.inc"

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

  /// result[dim] must be input[dim] * numerator / denominator.
  LogicalResult scaled(unsigned dim, int64_t numerator, int64_t denominator) {
    int64_t in = input.getDimSize(dim), out = result.getDimSize(dim);
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(out))
      return success();
    if ((in * numerator) % denominator != 0)
      return op->emitOpError()
             << "dimension " << dim << " of the input (" << in
             << ") must be divisible by the group size (" << denominator << ")";
    int64_t expected = in * numerator / denominator;
    if (out == expected)
      return success();
    return op->emitOpError()
           << "result dimension " << dim << " must be " << expected
           << " (input " << in << ", group of "
           << (numerator > denominator ? numerator : denominator)
           << " ranks), found " << out;
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

/// A token-sharded layout's rank count must match the group it is gathered
/// or scattered over.
LogicalResult checkShardMatchesGroup(Operation *op, Type sharded,
                                     GroupAttr group, StringRef which) {
  auto seq = dyn_cast_or_null<SeqLayoutAttr>(getSequenceLayout(sharded));
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
} // namespace

LogicalResult AllGatherOp::verify() {
  CollectiveShape shape(*this, getInput(), getResult());
  int64_t ranks = getGroup().getRanks();
  if (failed(shape.sameRankAndElement()) ||
      failed(shape.dimInRange(getDim(), "dim")) ||
      failed(shape.scaled(getDim(), ranks, 1)) ||
      failed(shape.othersUnchanged({static_cast<int64_t>(getDim())})))
    return failure();
  if (getDim() != 0)
    return success();
  if (failed(checkShardMatchesGroup(*this, getInput().getType(), getGroup(),
                                    "the input")))
    return failure();
  if (getSequenceLayout(getResult().getType()))
    return emitOpError() << "gathering tokens gives all of them in natural "
                            "order, but the result has layout "
                         << describeLayout(
                                getSequenceLayout(getResult().getType()));
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  CollectiveShape shape(*this, getInput(), getResult());
  int64_t ranks = getGroup().getRanks();
  if (failed(shape.sameRankAndElement()) ||
      failed(shape.dimInRange(getDim(), "dim")) ||
      failed(shape.scaled(getDim(), 1, ranks)) ||
      failed(shape.othersUnchanged({static_cast<int64_t>(getDim())})))
    return failure();
  if (getDim() != 0)
    return success();
  if (getSequenceLayout(getInput().getType()))
    return emitOpError() << "scattering tokens needs all of them in natural "
                            "order, but the input has layout "
                         << describeLayout(
                                getSequenceLayout(getInput().getType()));
  return checkShardMatchesGroup(*this, getResult().getType(), getGroup(),
                                "the result");
}

LogicalResult AllToAllOp::verify() {
  CollectiveShape shape(*this, getInput(), getResult());
  int64_t ranks = getGroup().getRanks();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (failed(shape.sameRankAndElement()) ||
      failed(shape.dimInRange(split, "split_dim")) ||
      failed(shape.dimInRange(concat, "concat_dim")) ||
      failed(shape.othersUnchanged({split, concat})))
    return failure();
  if (split != concat && (failed(shape.scaled(split, 1, ranks)) ||
                          failed(shape.scaled(concat, ranks, 1))))
    return failure();
  if (split == concat && failed(shape.scaled(split, 1, 1)))
    return failure();
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
  if (concat == 0 &&
      failed(checkShardMatchesGroup(*this, input, getGroup(), "the input")))
    return failure();
  if (split == 0 &&
      failed(checkShardMatchesGroup(*this, result, getGroup(), "the result")))
    return failure();
  return success();
}

LogicalResult HaloExchangeOp::verify() {
  CollectiveShape shape(*this, getInput(), getHalo());
  if (failed(shape.sameRankAndElement()) || failed(shape.othersUnchanged({0})))
    return failure();
  int64_t rows = getHalo().getType().getDimSize(0);
  if (!ShapedType::isDynamic(rows) && rows != getTokens())
    return emitOpError() << "the halo must have tokens = " << getTokens()
                         << " rows, found " << rows;
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
  if (incoming != partial)
    return emitOpError() << "the incoming state must have the partial state's "
                            "type "
                         << partial << ", found " << incoming;
  auto agree = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  if (!agree(transition.getDimSize(0), partial.getDimSize(0)) ||
      !agree(transition.getDimSize(1), partial.getDimSize(1)) ||
      !agree(transition.getDimSize(2), partial.getDimSize(1)))
    return emitOpError() << "transition " << transition
                         << " must be [HV, K, K] for the partial state "
                         << partial << " [HV, K, V]";
  return success();
}
