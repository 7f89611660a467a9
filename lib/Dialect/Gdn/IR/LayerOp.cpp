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
  if (failed(verifyChunkAndScale(*this, getChunkSize(), getScaleAttr())))
    return failure();
  // Written so that NaN fails too.
  if (!(getNormEps().convertToDouble() >= 0.0))
    return emitOpError() << "norm_eps must be >= 0, found "
                         << getNormEps().convertToDouble();
  return verifySameSequenceLayout(*this, {getX(), getY()}, "x and y");
}
