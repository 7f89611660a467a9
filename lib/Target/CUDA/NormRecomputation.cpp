//===- NormRecomputation.cpp - y of the gated RMSNorm from its backward -===//
//
// The queries of NormRecomputation.h.
//
//===----------------------------------------------------------------------===//

#include "NormRecomputation.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The only user of `value`, or null.
Operation *soleUser(Value value) {
  return value.hasOneUse() ? *value.getUsers().begin() : nullptr;
}

/// The projection gradient between `norm` and the backward that writes its
/// output, or null (the conditions of getFoldedRecomputation).
LinearGradOp matchProjection(kernel::GatedRMSNormOp norm,
                             kernel::GatedRMSNormGradOp &grad) {
  auto projection = dyn_cast_or_null<LinearGradOp>(soleUser(norm.getY()));
  if (!projection || projection.getX() != norm.getY())
    return {};
  grad = dyn_cast_or_null<kernel::GatedRMSNormGradOp>(
      soleUser(projection.getXGrad()));
  if (!grad || grad.getYGrad() != projection.getXGrad() ||
      grad.getX() != norm.getX() || grad.getZ() != norm.getZ() ||
      grad.getWeight() != norm.getWeight() || grad.getEps() != norm.getEps())
    return {};
  Block *block = norm->getBlock();
  if (projection->getBlock() != block || grad->getBlock() != block)
    return {};
  // The weight GEMM moves after the backward: nothing may read its result
  // before that.
  for (Operation *user : projection.getWeightGrad().getUsers())
    if (user->getBlock() != block || !grad->isBeforeInBlock(user))
      return {};
  return projection;
}

} // namespace

kernel::GatedRMSNormOp
mlir::gdn::cuda::getFoldedRecomputation(kernel::GatedRMSNormGradOp grad) {
  auto projection = grad.getYGrad().getDefiningOp<LinearGradOp>();
  if (!projection)
    return {};
  auto norm = projection.getX().getDefiningOp<kernel::GatedRMSNormOp>();
  kernel::GatedRMSNormGradOp folding;
  if (!norm || !matchProjection(norm, folding) || folding != grad)
    return {};
  return norm;
}

kernel::GatedRMSNormGradOp
mlir::gdn::cuda::getFoldingBackward(kernel::GatedRMSNormOp norm) {
  kernel::GatedRMSNormGradOp grad;
  return matchProjection(norm, grad) ? grad : nullptr;
}

kernel::GatedRMSNormGradOp
mlir::gdn::cuda::getSplittingBackward(LinearGradOp projection) {
  auto norm = projection.getX().getDefiningOp<kernel::GatedRMSNormOp>();
  return norm ? getFoldingBackward(norm) : nullptr;
}
