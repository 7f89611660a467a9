//===- GradientOps.cpp - verifiers of the transposed communication --------===//
//
// The ops of GdnCommGradientOps.td send cotangents back the way their
// forward ops sent values. Their shapes are the forward ops' read in
// reverse: a cotangent has the type of the value it belongs to, so each
// verifier checks the forward op's shape rules with the roles swapped.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::comm;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Replicated values, partial sums and per-sequence states carry no token
/// layout.
LogicalResult checkNoLayout(Operation *op, Value value, StringRef name) {
  if (!getSequenceLayout(value.getType()))
    return success();
  return op->emitOpError() << name
                           << " is held whole or per sequence by every rank, "
                              "not a shard; it must carry no layout, found "
                           << value.getType();
}

LogicalResult checkSameType(Operation *op, Value value, StringRef name,
                            Type expected, StringRef expectedName) {
  if (value.getType() == expected)
    return success();
  return op->emitOpError() << name << " must have the type of " << expectedName
                           << " (" << expected << "), found "
                           << value.getType();
}

/// `value` must have the given rank; `dims` spells the dimensions.
LogicalResult checkRank(Operation *op, Value value, StringRef name,
                        int64_t rank, StringRef dims) {
  if (tensorType(value).getRank() == rank)
    return success();
  return op->emitOpError() << name << " must be " << dims << ", found "
                           << value.getType();
}

bool sizesAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// A per-sequence tensor `[N, ...]` must have the packing's N.
LogicalResult checkSequences(Operation *op, Value value, StringRef name,
                             PackingType packing) {
  auto type = tensorType(value);
  if (type.getRank() >= 1 && sizesAgree(type.getDimSize(0), packing.getSeqs()))
    return success();
  return op->emitOpError() << name << " must be per sequence [N, ...] with N = "
                           << packing.getSeqs() << ", found " << type;
}

} // namespace

LogicalResult AllReduceOp::verify() {
  return checkNoLayout(*this, getInput(), "the input");
}

LogicalResult ReplicatedToPartialOp::verify() {
  return checkNoLayout(*this, getInput(), "the input");
}

LogicalResult LocalUnshardOp::verify() {
  auto input = tensorType(getInput()), result = tensorType(getResult());
  const int64_t dim = getDim(), ranks = getGroup().getRanks();
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return emitOpError() << "the result must be the input's kind of tensor "
                            "with one dimension "
                         << ranks << " times larger, found " << input << " -> "
                         << result;
  if (dim >= input.getRank())
    return emitOpError() << "dim = " << dim << " is out of range for a rank-"
                         << input.getRank() << " tensor";
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t in = input.getDimSize(d), out = result.getDimSize(d);
    int64_t expected = ShapedType::isDynamic(in) || d != dim ? in : in * ranks;
    if (!sizesAgree(expected, out))
      return emitOpError() << "result dimension " << d << " must be "
                           << expected << " (the input's"
                           << (d == dim ? " times the group's ranks" : "")
                           << "), found " << out;
  }
  if (failed(checkNoLayout(*this, getInput(), "the input")))
    return failure();
  return checkNoLayout(*this, getResult(), "the result");
}

LogicalResult ReturnHaloOp::verify() {
  auto halo = tensorType(getHaloGrad()), dest = tensorType(getDest());
  if (failed(checkSameType(*this, getResult(), "the result", dest, "dest")))
    return failure();
  if (halo.getElementType() != dest.getElementType() ||
      halo.getRank() != dest.getRank() || halo.getRank() == 0)
    return emitOpError() << "halo_grad must be rows [W-1, ...] of dest's "
                            "kind of tensor, found "
                         << halo << " for dest " << dest;
  for (int64_t d = 1; d < halo.getRank(); ++d)
    if (!sizesAgree(halo.getDimSize(d), dest.getDimSize(d)))
      return emitOpError() << "halo_grad dimension " << d << " ("
                           << halo.getDimSize(d) << ") must match dest's ("
                           << dest.getDimSize(d) << ")";
  if (failed(checkNoLayout(*this, getHaloGrad(), "halo_grad")))
    return failure();
  auto seq = dyn_cast_or_null<SeqLayoutAttr>(getSequenceLayout(dest));
  if (seq && (seq.getKind() != SeqLayoutKind::Contiguous ||
              seq.getRanks() != getGroup().getRanks()))
    return emitOpError() << "dest must be a contiguous token shard of the "
                            "group's "
                         << getGroup().getRanks() << " ranks, found "
                         << describeLayout(seq);
  return success();
}

LogicalResult ReverseStateExchangeOp::verify() {
  auto transition = tensorType(getTransition());
  auto partial = tensorType(getPartialState());
  if (transition.getRank() != 3 || partial.getRank() != 3)
    return emitOpError() << "expects transition [HV, K, K] and partial_state "
                            "[HV, K, V], found "
                         << transition << " and " << partial;
  if (!sizesAgree(transition.getDimSize(0), partial.getDimSize(0)) ||
      !sizesAgree(transition.getDimSize(1), partial.getDimSize(1)) ||
      !sizesAgree(transition.getDimSize(2), partial.getDimSize(1)))
    return emitOpError() << "transition " << transition
                         << " must be [HV, K, K] for the partial state "
                         << partial << " [HV, K, V]";
  if (failed(checkSameType(*this, getIncomingStateGrad(), "incoming_state_grad",
                           partial, "partial_state")) ||
      failed(checkSameType(*this, getTransitionGrad(), "transition_grad",
                           transition, "transition")) ||
      failed(checkSameType(*this, getPartialStateGrad(), "partial_state_grad",
                           partial, "partial_state")))
    return failure();
  if (failed(checkNoLayout(*this, getTransition(), "transition")))
    return failure();
  return checkNoLayout(*this, getPartialState(), "partial_state");
}

LogicalResult ReduceSequenceStatesOp::verify() {
  if (failed(checkSameType(*this, getResult(), "the result",
                           getInput().getType(), "the input")) ||
      failed(checkSequences(*this, getInput(), "the input",
                            getPacking().getType())))
    return failure();
  return checkNoLayout(*this, getInput(), "the input");
}

LogicalResult StateSummaryGradOp::verify() {
  auto k = tensorType(getK()), v = tensorType(getV());
  if (failed(checkRank(*this, getK(), "k", 3, "[T, H, K]")) ||
      failed(checkRank(*this, getV(), "v", 3, "[T, HV, V]")) ||
      failed(checkRank(*this, getG(), "g", 2, "[T, HV]")) ||
      failed(checkRank(*this, getBeta(), "beta", 2, "[T, HV]")) ||
      failed(checkRank(*this, getTransitionGrad(), "transition_grad", 3,
                       "[HV, K, K]")) ||
      failed(checkRank(*this, getPartialStateGrad(), "partial_state_grad", 3,
                       "[HV, K, V]")))
    return failure();
  auto transition = tensorType(getTransitionGrad());
  auto partial = tensorType(getPartialStateGrad());
  const int64_t heads = v.getDimSize(1), keyDim = k.getDimSize(2);
  if (!sizesAgree(transition.getDimSize(0), heads) ||
      !sizesAgree(transition.getDimSize(1), keyDim) ||
      !sizesAgree(transition.getDimSize(2), keyDim) ||
      !sizesAgree(partial.getDimSize(0), heads) ||
      !sizesAgree(partial.getDimSize(1), keyDim) ||
      !sizesAgree(partial.getDimSize(2), v.getDimSize(2)))
    return emitOpError() << "the summary's cotangents " << transition << " and "
                         << partial
                         << " must be [HV, K, K] and [HV, K, V] for k " << k
                         << " and v " << v;
  if (failed(checkSameType(*this, getKGrad(), "k_grad", k, "k")) ||
      failed(checkSameType(*this, getVGrad(), "v_grad", v, "v")) ||
      failed(
          checkSameType(*this, getGGrad(), "g_grad", getG().getType(), "g")) ||
      failed(checkSameType(*this, getBetaGrad(), "beta_grad",
                           getBeta().getType(), "beta")))
    return failure();
  if (static_cast<bool>(getInitialState()) !=
      static_cast<bool>(getInitialStateGrad()))
    return emitOpError() << "returns initial_state_grad exactly when it has "
                            "an initial_state";
  if (Value initial = getInitialState())
    return checkSameType(*this, getInitialStateGrad(), "initial_state_grad",
                         initial.getType(), "initial_state");
  return success();
}

LogicalResult ContinueConvStateGradOp::verify() {
  auto state = tensorType(getStateGrad()), halo = tensorType(getHaloGrad());
  if (failed(
          checkRank(*this, getStateGrad(), "state_grad", 3, "[N, C, W-1]")) ||
      failed(checkRank(*this, getHaloGrad(), "halo_grad", 2, "[W-1, C]")) ||
      failed(checkSequences(*this, getStateGrad(), "state_grad",
                            getPacking().getType())))
    return failure();
  // halo_grad may be narrower than state_grad: the halo of an f32 conv input
  // (an f32 projection output) has its cotangent stored in bf16.
  Type haloElement = halo.getElementType(),
       stateElement = state.getElementType();
  if (!sizesAgree(halo.getDimSize(0), state.getDimSize(2)) ||
      !sizesAgree(halo.getDimSize(1), state.getDimSize(1)) ||
      (haloElement != stateElement &&
       !isNarrowerFloat(haloElement, stateElement)))
    return emitOpError() << "halo_grad must be [W-1, C] of state_grad's "
                            "element type or a narrower float for state_grad "
                         << state << ", found " << halo;
  if (Value initial = getInitialStateGrad())
    if (failed(checkSameType(*this, initial, "initial_state_grad", state,
                             "state_grad")))
      return failure();
  if (failed(checkNoLayout(*this, getHaloGrad(), "halo_grad")))
    return failure();
  return checkNoLayout(*this, getStateGrad(), "state_grad");
}

LogicalResult ContinueStateGradOp::verify() {
  auto state = tensorType(getStateGrad()),
       incoming = tensorType(getIncomingGrad());
  if (failed(
          checkRank(*this, getStateGrad(), "state_grad", 4, "[N, HV, K, V]")) ||
      failed(checkRank(*this, getIncomingGrad(), "incoming_grad", 3,
                       "[HV, K, V]")) ||
      failed(checkSequences(*this, getStateGrad(), "state_grad",
                            getPacking().getType())))
    return failure();
  for (int64_t d = 0; d < 3; ++d)
    if (!sizesAgree(incoming.getDimSize(d), state.getDimSize(d + 1)))
      return emitOpError() << "incoming_grad must be [HV, K, V] of state_grad "
                           << state << ", found " << incoming;
  if (incoming.getElementType() != state.getElementType())
    return emitOpError() << "incoming_grad must hold state_grad's element "
                            "type ("
                         << state.getElementType() << ")";
  if (Value initial = getInitialStateGrad())
    if (failed(checkSameType(*this, initial, "initial_state_grad", state,
                             "state_grad")))
      return failure();
  return checkNoLayout(*this, getStateGrad(), "state_grad");
}

LogicalResult SummaryInitialStatesGradOp::verify() {
  auto partial = tensorType(getPartialGrad());
  auto result = tensorType(getInitialStateGrad());
  if (partial.getRank() != 4 || !sizesAgree(partial.getDimSize(0), 2))
    return emitOpError() << "partial_grad must be the cotangent of a summary "
                            "run's initial states, [2, HV, K, V], found "
                         << partial;
  if (result.getRank() != 4 ||
      !sizesAgree(result.getDimSize(0), getPacking().getType().getSeqs()) ||
      !sizesAgree(result.getDimSize(1), partial.getDimSize(1)) ||
      !sizesAgree(result.getDimSize(2), partial.getDimSize(2)) ||
      !sizesAgree(result.getDimSize(3), partial.getDimSize(3)) ||
      result.getElementType() != partial.getElementType())
    return emitOpError() << "the result must be per-sequence states [N, HV, "
                            "K, V] with N = "
                         << getPacking().getType().getSeqs()
                         << " and partial_grad's element type, found "
                         << result;
  if (failed(checkNoLayout(*this, getPartialGrad(), "partial_grad")))
    return failure();
  return checkNoLayout(*this, getInitialStateGrad(), "the result");
}
