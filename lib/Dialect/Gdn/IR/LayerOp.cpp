//===- LayerOp.cpp - the composite gdn.layer ------------------------------===//
//
// gdn.layer takes its weights as one variadic list whose meaning depends on
// the projection layout. This file holds the one table that maps positions to
// roles and expected shapes, used by the verifier (so a transposed or
// mis-sized weight is named by its role) and by the expansion pass.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

#include "ShapeChecks.h"
#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// One weight operand: its role and the shape the layer's attributes imply.
struct WeightSpec {
  StringRef role;
  SmallVector<int64_t, 2> shape;
};
} // namespace

/// The weights `layer` expects, in operand order.
static SmallVector<WeightSpec> getWeightSpecs(LayerOp layer, int64_t hidden) {
  // The attribute getters return uint64_t; shapes are int64_t.
  int64_t keyHeads = layer.getKeyHeads(), valueHeads = layer.getValueHeads();
  int64_t headDimV = layer.getHeadDimV(), width = layer.getConvWidth();
  int64_t keyDim = keyHeads * layer.getHeadDimK();
  int64_t valueDim = valueHeads * headDimV;
  int64_t channels = layer.getConvChannels();
  SmallVector<WeightSpec> specs;
  if (layer.getProjections() == Projections::Qwen3Next) {
    specs.push_back({"in_proj_qkvz", {2 * keyDim + 2 * valueDim, hidden}});
    specs.push_back({"in_proj_ba", {2 * valueHeads, hidden}});
  } else {
    specs.push_back({"in_proj_qkv", {channels, hidden}});
    specs.push_back({"in_proj_z", {valueDim, hidden}});
    specs.push_back({"in_proj_b", {valueHeads, hidden}});
    specs.push_back({"in_proj_a", {valueHeads, hidden}});
  }
  specs.push_back({"conv", {channels, width}});
  specs.push_back({"A_log", {valueHeads}});
  specs.push_back({"dt_bias", {valueHeads}});
  specs.push_back({"norm", {headDimV}});
  specs.push_back({"out_proj", {hidden, valueDim}});
  return specs;
}

int64_t LayerOp::getConvChannels() {
  return 2 * getKeyHeads() * getHeadDimK() + getValueHeads() * getHeadDimV();
}

LayerOp::Weights LayerOp::getWeightsByRole() {
  Weights weights;
  ValueRange operands = getWeights();
  unsigned next = 0;
  if (getProjections() == Projections::Qwen3Next) {
    weights.inProjQkvz = operands[next++];
    weights.inProjBa = operands[next++];
  } else {
    weights.inProjQkv = operands[next++];
    weights.inProjZ = operands[next++];
    weights.inProjB = operands[next++];
    weights.inProjA = operands[next++];
  }
  weights.conv = operands[next++];
  weights.aLog = operands[next++];
  weights.dtBias = operands[next++];
  weights.norm = operands[next++];
  weights.outProj = operands[next++];
  return weights;
}

/// The conv's and the delta rule's states, initial and final: both or
/// neither of each pair, and both pairs or neither (a layer continued
/// across calls needs both states back).
static LogicalResult verifyStates(LayerOp layer, ShapeChecker &check) {
  size_t initial = layer.getInitialStates().size(), final = layer.getFinalStates().size();
  if ((initial != 0 && initial != 2) || (final != 0 && final != 2))
    return layer.emitOpError() << "takes 0 or 2 initial states (the conv's, the "
                            "delta rule's) and returns 0 or 2 final states, "
                            "found "
                         << initial << " and " << final;
  if (initial != final)
    return layer.emitOpError()
           << (initial ? "has initial states but no final states"
                       : "returns final states but takes no initial states")
           << ": give both (a sequence continued across calls needs its "
              "states in and out)";
  if (!initial)
    return success();
  auto packing = cast<PackingType>(layer.getPacking().getType());
  const int64_t seqs = packing.getSeqs(), channels = layer.getConvChannels();
  Type stateElement = getElementTypeOrSelf(layer.getX().getType()).isF64()
                          ? Type(Float64Type::get(layer.getContext()))
                          : Type(Float32Type::get(layer.getContext()));
  for (auto [index, conv] :
       llvm::enumerate(SmallVector<Value>{layer.getConvInitialState(),
                                          layer.getConvFinalState()})) {
    StringRef name = index ? "conv final state" : "conv initial state";
    if (failed(check.rank(conv, name, 3, "[N, C, W-1]")) ||
        failed(check.dim(conv, name, 0, seqs, "sequences")) ||
        failed(check.dim(conv, name, 1, channels, "conv channels")) ||
        failed(check.dim(conv, name, 2, layer.getConvWidth() - 1, "width - 1")) ||
        failed(check.notTokenSharded(conv, name)))
      return failure();
  }
  for (auto [index, state] :
       llvm::enumerate(SmallVector<Value>{layer.getDeltaInitialState(),
                                          layer.getDeltaFinalState()})) {
    StringRef name = index ? "final state" : "initial state";
    if (failed(check.rank(state, name, 4, "[N, HV, K, V]")) ||
        failed(check.dim(state, name, 0, seqs, "sequences")) ||
        failed(check.dim(state, name, 1, layer.getValueHeads(), "value heads")) ||
        failed(check.dim(state, name, 2, layer.getHeadDimK(), "head dim K")) ||
        failed(check.dim(state, name, 3, layer.getHeadDimV(), "head dim V")) ||
        failed(check.notTokenSharded(state, name)))
      return failure();
    if (getElementTypeOrSelf(state.getType()) != stateElement)
      return layer.emitOpError() << "the delta rule's " << name << " must be "
                           << stateElement << " (f64 only in f64 layers), found "
                           << state.getType();
  }
  return success();
}

LogicalResult LayerOp::verify() {
  ShapeChecker check(*this);
  if (failed(check.rank(getX(), "x", 2, "[T, hidden]")) ||
      failed(check.rank(getY(), "y", 2, "[T, hidden]")))
    return failure();
  int64_t hidden = ShapeChecker::size(getX(), 1);
  if (ShapedType::isDynamic(hidden))
    return emitOpError() << "x must have a static hidden size, found "
                         << getX().getType();
  if (getValueHeads() % getKeyHeads() != 0)
    return emitOpError() << "value heads (" << getValueHeads()
                         << ") must be a multiple of key heads ("
                         << getKeyHeads() << ")";

  SmallVector<WeightSpec> specs = getWeightSpecs(*this, hidden);
  if (getWeights().size() != specs.size()) {
    InFlightDiagnostic diag = emitOpError()
                              << "with projections = "
                              << stringifyProjections(getProjections())
                              << " takes " << specs.size() << " weights (";
    llvm::interleaveComma(specs, diag,
                          [&](const WeightSpec &spec) { diag << spec.role; });
    return diag << "), found " << getWeights().size();
  }
  for (auto [index, weight, spec] : llvm::enumerate(getWeights(), specs)) {
    std::string name =
        ("weight #" + Twine(index) + " (" + spec.role + ")").str();
    auto type = cast<RankedTensorType>(weight.getType());
    if (type.getShape() != ArrayRef<int64_t>(spec.shape)) {
      InFlightDiagnostic diag = emitOpError() << name << " must have shape [";
      llvm::interleaveComma(spec.shape, diag);
      return diag << "], found " << weight.getType();
    }
    if (failed(check.notTokenSharded(weight, name)))
      return failure();
  }

  if (failed(check.dim(getY(), "y", 1, hidden, "hidden")) ||
      failed(check.tokens(getX(), "x")) || failed(check.tokens(getY(), "y")) ||
      failed(check.packingTokens(getPacking())) ||
      failed(check.sameElementType(getY(), "y", getX(), "x")))
    return failure();
  if (failed(verifyChunkAndScale(*this, getChunkSize(), getScaleAttr())) ||
      failed(verifyStates(*this, check)))
    return failure();
  // Written so that NaN fails too.
  if (!(getNormEps().convertToDouble() >= 0.0))
    return emitOpError() << "norm_eps must be >= 0, found "
                         << getNormEps().convertToDouble();
  return verifySameSequenceLayout(*this, {getX(), getY()}, "x and y");
}
