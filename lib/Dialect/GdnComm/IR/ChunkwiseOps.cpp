//===- ChunkwiseOps.cpp - verifiers of the chunkwise-CP ops ---------------===//
//
// The per-rank ops of chunkwise context parallelism (local_packing,
// continue_conv_state, state_summary, continue_state, gather_sequence_states)
// relate per-sequence states to the packing and per-head summaries to the
// activations they summarise; these verifiers check those shapes statically,
// so a pass that builds them wrong fails at once instead of at run time.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::comm;

namespace {
bool agree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Checks `value`'s rank and that each static size agrees with `expected`
/// (dynamic entries of `expected` are unconstrained); `dims` names them.
LogicalResult checkShape(Operation *op, Value value, StringRef name,
                         ArrayRef<int64_t> expected, StringRef dims) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() != static_cast<int64_t>(expected.size()))
    return op->emitOpError() << name << " must be a rank-" << expected.size()
                             << " tensor " << dims << ", found " << type;
  for (auto [index, size] : llvm::enumerate(expected))
    if (!agree(type.getDimSize(index), size))
      return op->emitOpError()
             << name << " must be " << dims << " with dimension " << index
             << " = " << size << ", found " << type;
  return success();
}

/// Per-sequence states and summaries are not token-indexed.
LogicalResult checkNoTokenLayout(Operation *op, Value value, StringRef name) {
  if (!getSequenceLayout(value.getType()))
    return success();
  return op->emitOpError() << name
                           << " is per sequence or per head, not a token "
                              "shard; it must carry no layout, found "
                           << value.getType();
}

LogicalResult checkStateElement(Operation *op, Value value, StringRef name) {
  Type element = cast<RankedTensorType>(value.getType()).getElementType();
  if (element.isF32() || element.isF64())
    return success();
  return op->emitOpError() << name
                           << " is a delta-rule state, kept in fp32 (or f64 "
                              "in reference programs), found "
                           << element;
}

/// The per-sequence initial states a continue_* op replaces one entry of
/// have the result's type.
LogicalResult checkInitialIsResultType(Operation *op, Value initial,
                                       Value result) {
  if (!initial || initial.getType() == result.getType())
    return success();
  return op->emitOpError() << "initial_state must have the result's type "
                           << result.getType() << ", found "
                           << initial.getType();
}

int64_t dimOf(Value value, unsigned dim) {
  return cast<RankedTensorType>(value.getType()).getDimSize(dim);
}
} // namespace

LogicalResult LocalPackingOp::verify() {
  PackingType global = getPacking().getType(), local = getLocal().getType();
  if (global.getSeqs() != local.getSeqs() ||
      global.getPadded() != local.getPadded() ||
      global.getMaxLen() != local.getMaxLen())
    return emitOpError() << "the local packing keeps the sequences, padding "
                            "and max_len of "
                         << global << ", found " << local;
  const int64_t ranks = getGroup().getRanks();
  if (!global.hasStaticTokens())
    return success();
  if (global.getTokens() % ranks != 0)
    return emitOpError() << global.getTokens()
                         << " buffer rows do not split into contiguous shards "
                            "over "
                         << ranks << " ranks; pad the pack to a multiple of "
                         << ranks;
  if (!agree(local.getTokens(), global.getTokens() / ranks))
    return emitOpError() << "a shard of " << global.getTokens() << " rows over "
                         << ranks << " ranks has " << global.getTokens() / ranks
                         << " rows, found " << local;
  return success();
}

LogicalResult ContinueConvStateOp::verify() {
  const int64_t seqs = getPacking().getType().getSeqs();
  const int64_t taps = dimOf(getHalo(), 0);
  if (failed(checkShape(*this, getHalo(), "halo",
                        {ShapedType::kDynamic, ShapedType::kDynamic},
                        "[W-1, C]")) ||
      failed(checkShape(*this, getState(), "the result",
                        {seqs, dimOf(getHalo(), 1), taps}, "[N, C, W-1]")) ||
      failed(checkNoTokenLayout(*this, getHalo(), "halo")) ||
      failed(checkNoTokenLayout(*this, getState(), "the result")))
    return failure();
  if (getElementTypeOrSelf(getHalo().getType()) !=
      getElementTypeOrSelf(getState().getType()))
    return emitOpError() << "the result's element type must be the halo's ("
                         << getElementTypeOrSelf(getHalo().getType()) << ")";
  return checkInitialIsResultType(*this, getInitialState(), getState());
}

LogicalResult StateSummaryOp::verify() {
  const int64_t tokens = dimOf(getQ(), 0);
  const int64_t keyHeads = dimOf(getQ(), 1), headDimK = dimOf(getQ(), 2);
  const int64_t valueHeads = dimOf(getV(), 1), headDimV = dimOf(getV(), 2);
  const int64_t any = ShapedType::kDynamic;
  if (failed(checkShape(*this, getQ(), "q", {any, any, any}, "[T, H, K]")) ||
      failed(checkShape(*this, getK(), "k", {tokens, keyHeads, headDimK},
                        "[T, H, K] like q")) ||
      failed(
          checkShape(*this, getV(), "v", {tokens, any, any}, "[T, HV, V]")) ||
      failed(checkShape(*this, getG(), "g", {tokens, valueHeads}, "[T, HV]")) ||
      failed(checkShape(*this, getBeta(), "beta", {tokens, valueHeads},
                        "[T, HV]")) ||
      failed(checkShape(*this, getTransition(), "transition",
                        {valueHeads, headDimK, headDimK}, "[HV, K, K]")) ||
      failed(checkShape(*this, getPartialState(), "partial_state",
                        {valueHeads, headDimK, headDimV}, "[HV, K, V]")) ||
      failed(checkStateElement(*this, getTransition(), "transition")) ||
      failed(checkNoTokenLayout(*this, getTransition(), "transition")) ||
      failed(checkNoTokenLayout(*this, getPartialState(), "partial_state")))
    return failure();
  if (!ShapedType::isDynamic(keyHeads) && !ShapedType::isDynamic(valueHeads) &&
      valueHeads % keyHeads != 0)
    return emitOpError() << "value heads (" << valueHeads
                         << ") must be a multiple of key heads (" << keyHeads
                         << ")";
  if (getTransition().getType().getElementType() !=
      getPartialState().getType().getElementType())
    return emitOpError() << "transition and partial_state must share one "
                            "element type";
  if (Value initial = getInitialState()) {
    if (failed(checkShape(
            *this, initial, "initial_state",
            {getPacking().getType().getSeqs(), valueHeads, headDimK, headDimV},
            "[N, HV, K, V]")))
      return failure();
    if (getElementTypeOrSelf(initial.getType()) !=
        getPartialState().getType().getElementType())
      return emitOpError() << "initial_state must hold the partial state's "
                              "element type ("
                           << getPartialState().getType().getElementType()
                           << "), found " << initial.getType();
  }
  return success();
}

LogicalResult SummaryPackingOp::verify() {
  PackingType global = getPacking().getType(), summary = getSummary().getType();
  if (summary.getSeqs() != 2 || !summary.getPadded())
    return emitOpError() << "the summary packing holds two sequences, the "
                            "second the leaving sequence's rows, and is "
                            "padded: !gdn.packing<seqs = 2, tokens = T/P, "
                            "padded>, found "
                         << summary;
  const int64_t ranks = getGroup().getRanks();
  if (!global.hasStaticTokens())
    return success();
  if (global.getTokens() % ranks != 0)
    return emitOpError() << global.getTokens()
                         << " buffer rows do not split into contiguous shards "
                            "over "
                         << ranks << " ranks; pad the pack to a multiple of "
                         << ranks;
  if (!agree(summary.getTokens(), global.getTokens() / ranks))
    return emitOpError() << "a shard of " << global.getTokens() << " rows over "
                         << ranks << " ranks has " << global.getTokens() / ranks
                         << " rows, found " << summary;
  return success();
}

LogicalResult SummaryInitialStatesOp::verify() {
  const int64_t any = ShapedType::kDynamic;
  if (failed(checkShape(*this, getPartial(), "partial", {2, any, any, any},
                        "[2, HV, K, V]")))
    return failure();
  auto partial = cast<RankedTensorType>(getPartial().getType());
  const int64_t heads = partial.getDimSize(1), keyDim = partial.getDimSize(2);
  if (failed(checkShape(*this, getTransition(), "transition",
                        {2, heads, keyDim, keyDim}, "[2, HV, K, K]")) ||
      failed(checkStateElement(*this, getPartial(), "partial")) ||
      failed(checkNoTokenLayout(*this, getPartial(), "partial")) ||
      failed(checkNoTokenLayout(*this, getTransition(), "transition")))
    return failure();
  if (getElementTypeOrSelf(getTransition().getType()) !=
      partial.getElementType())
    return emitOpError() << "partial and transition must share one element "
                            "type";
  if (Value initial = getInitialState()) {
    if (failed(checkShape(*this, initial, "initial_state",
                          {getPacking().getType().getSeqs(), heads, keyDim,
                           partial.getDimSize(3)},
                          "[N, HV, K, V]")))
      return failure();
    if (getElementTypeOrSelf(initial.getType()) != partial.getElementType())
      return emitOpError() << "initial_state must hold partial's element type ("
                           << partial.getElementType() << "), found "
                           << initial.getType();
  }
  if (Value incoming = getIncoming()) {
    auto type = cast<RankedTensorType>(incoming.getType());
    if (type.getShape() != partial.getShape().drop_front() ||
        type.getElementType() != partial.getElementType())
      return emitOpError() << "incoming must be one state [HV, K, V] of "
                              "partial's, found "
                           << incoming.getType();
  }
  return success();
}

LogicalResult ContinueStateOp::verify() {
  auto incoming = cast<RankedTensorType>(getIncoming().getType());
  const int64_t any = ShapedType::kDynamic;
  if (failed(checkShape(*this, getIncoming(), "incoming", {any, any, any},
                        "[HV, K, V]")) ||
      failed(
          checkShape(*this, getState(), "the result",
                     {getPacking().getType().getSeqs(), incoming.getDimSize(0),
                      incoming.getDimSize(1), incoming.getDimSize(2)},
                     "[N, HV, K, V]")) ||
      failed(checkStateElement(*this, getState(), "the result")) ||
      failed(checkNoTokenLayout(*this, getIncoming(), "incoming")))
    return failure();
  if (incoming.getElementType() != getElementTypeOrSelf(getState().getType()))
    return emitOpError() << "the result's element type must be incoming's ("
                         << incoming.getElementType() << ")";
  return checkInitialIsResultType(*this, getInitialState(), getState());
}

LogicalResult GatherSequenceStatesOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "the result must have the input's type "
                         << getInput().getType() << ", found "
                         << getResult().getType();
  auto type = cast<RankedTensorType>(getInput().getType());
  if (type.getRank() < 1 ||
      !agree(type.getDimSize(0), getPacking().getType().getSeqs()))
    return emitOpError() << "expects per-sequence states [N, ...] with N = "
                         << getPacking().getType().getSeqs() << ", found "
                         << type;
  return checkNoTokenLayout(*this, getInput(), "the input");
}
