//===- GradientOps.cpp - verifiers of the gdn gradient ops ----------------===//
//
// A gradient op takes its forward op's operands and the cotangents of its
// results, and returns the cotangents of its operands. Its verifier checks
// the forward op's invariants over those values (a result's cotangent plays
// the result's role, ShapeChecks.h) and that every cotangent has the type
// of the value it belongs to, element type and sequence layout included.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

#include "ShapeChecks.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// `cotangent` (named `name`) must have the type of the value `primal` it
/// belongs to; both may be absent, but not only one of them.
LogicalResult checkCotangent(Operation *op, Value cotangent, Value primal,
                             StringRef name, StringRef primalName) {
  if (!cotangent && !primal)
    return success();
  if (!cotangent)
    return op->emitOpError() << "has " << primalName << " but no " << name
                             << "; a gradient op returns the cotangent of "
                                "every operand its forward op has";
  if (!primal)
    return op->emitOpError() << "has " << name << " but no " << primalName
                             << " it would be the cotangent of";
  auto cotangentType = cast<RankedTensorType>(cotangent.getType());
  auto primalType = cast<RankedTensorType>(primal.getType());
  // A cotangent may be stored narrower than its primal: the gradient of an
  // activation kept in fp32 for the forward's precision is consumed by a
  // bf16 GEMM, which would round it anyway (docs/backward.md).
  Type element = cotangentType.getElementType();
  Type primalElement = primalType.getElementType();
  if (cotangentType.clone(primalElement) != primalType ||
      (element != primalElement && !isNarrowerFloat(element, primalElement)))
    return op->emitOpError()
           << name << " must have the type of " << primalName << " ("
           << primalType << "), or its shape and layout with a narrower "
           << "float type, found " << cotangentType;
  return success();
}

/// checkCotangent for several (cotangent, primal, names) tuples in order.
LogicalResult checkCotangents(
    Operation *op,
    ArrayRef<std::tuple<Value, Value, StringRef, StringRef>> pairs) {
  for (auto [cotangent, primal, name, primalName] : pairs)
    if (failed(checkCotangent(op, cotangent, primal, name, primalName)))
      return failure();
  return success();
}

} // namespace

Value CausalConv1dGradOp::getBiasGrad() {
  return getBias() ? getOptionalGrads().front() : Value();
}

Value CausalConv1dGradOp::getInitialStateGrad() {
  return getInitialState() ? getOptionalGrads().back() : Value();
}

LogicalResult CausalConv1dGradOp::verify() {
  const size_t expected = (getBias() ? 1 : 0) + (getInitialState() ? 1 : 0);
  if (getOptionalGrads().size() != expected)
    return emitOpError() << "returns " << getOptionalGrads().size()
                         << " optional cotangents but has " << expected
                         << " of bias and initial_state";
  if (failed(verifyCausalConv1dSignature(
          *this, getX(), getWeight(), getPacking(), getBias(),
          getInitialState(), getYGrad(), getFinalStateGrad(), getWidth())))
    return failure();
  return checkCotangents(
      *this, {{getXGrad(), getX(), "x_grad", "x"},
              {getWeightGrad(), getWeight(), "weight_grad", "weight"},
              {getBiasGrad(), getBias(), "bias_grad", "bias"},
              {getInitialStateGrad(), getInitialState(), "initial_state_grad",
               "initial_state"}});
}

LogicalResult L2NormGradOp::verify() {
  return verifyL2NormSignature(*this, getX(), getEps().convertToDouble());
}

LogicalResult GatesGradOp::verify() {
  if (failed(verifyGatesSignature(*this, getA(), getB(), getALog(), getDtBias(),
                                  getGGrad(), getBetaGrad())))
    return failure();
  if (getGGrad().getType() != getBetaGrad().getType())
    return emitOpError() << "g_grad and beta_grad are cotangents of one "
                            "op's two results of one type, found "
                         << getGGrad().getType() << " and "
                         << getBetaGrad().getType();
  return checkCotangents(
      *this, {{getAGrad(), getA(), "a_grad", "a"},
              {getBGrad(), getB(), "b_grad", "b"},
              {getALogGrad(), getALog(), "a_log_grad", "a_log"},
              {getDtBiasGrad(), getDtBias(), "dt_bias_grad", "dt_bias"}});
}

double DeltaRuleGradOp::getEffectiveScale() {
  if (FloatAttr scale = getScaleAttr())
    return scale.getValueAsDouble();
  return getDefaultDeltaRuleScale(getQ().getType().getDimSize(2));
}

LogicalResult DeltaRuleGradOp::verify() {
  if (failed(verifyDeltaRuleSignature(
          *this, getQ(), getK(), getV(), getG(), getBeta(),
          getPacking(), getInitialState(), getOGrad(),
          getFinalStateGrad(), getChunkSize(), getScaleAttr())))
    return failure();
  if (Value finalGrad = getFinalStateGrad();
      finalGrad && getInitialState() &&
      finalGrad.getType() != getInitialState().getType())
    return emitOpError() << "final_state_grad must have the states' type "
                         << getInitialState().getType() << ", found "
                         << finalGrad.getType();
  return checkCotangents(*this,
                         {{getQGrad(), getQ(), "q_grad", "q"},
                          {getKGrad(), getK(), "k_grad", "k"},
                          {getVGrad(), getV(), "v_grad", "v"},
                          {getGGrad(), getG(), "g_grad", "g"},
                          {getBetaGrad(), getBeta(), "beta_grad", "beta"},
                          {getInitialStateGrad(), getInitialState(),
                           "initial_state_grad", "initial_state"}});
}

LogicalResult GatedRMSNormGradOp::verify() {
  if (failed(verifyGatedRMSNormSignature(*this, getX(), getZ(), getWeight(),
                                         getYGrad(),
                                         getEps().convertToDouble())))
    return failure();
  return checkCotangents(
      *this, {{getXGrad(), getX(), "x_grad", "x"},
              {getZGrad(), getZ(), "z_grad", "z"},
              {getWeightGrad(), getWeight(), "weight_grad", "weight"}});
}

LogicalResult LinearGradOp::verify() {
  if (failed(verifyLinearSignature(*this, getX(), getWeight(), getYGrad())))
    return failure();
  return checkCotangents(
      *this, {{getXGrad(), getX(), "x_grad", "x"},
              {getWeightGrad(), getWeight(), "weight_grad", "weight"}});
}

LogicalResult MergeQkvzOp::verify() {
  return verifySplitQkvzSignature(*this, getQkvz(), getBa(), getMixedQkv(),
                                  getZ(), getB(), getA(), getKeyHeads(),
                                  getHeadDimK());
}

LogicalResult MergeQkvOp::verify() {
  return verifySplitQkvSignature(*this, getMixedQkv(), getQ(), getK(), getV());
}
