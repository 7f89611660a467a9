//===- GradientEmitters.cpp - the VJP of each gdn op, as IR ---------------===//
//
// One emitter per gdn op: it reads the cotangents of the op's results,
// materialises the forward values the gradient op needs, builds the
// gradient op (GdnGradientOps.td) and hands the cotangents of the op's
// operands back to the builder. Splits are permutations, so their VJPs are
// the inverse copies (gdn.merge_qkvz, gdn.merge_qkv, gdn.regroup_sections
// inverted).
//
//===----------------------------------------------------------------------===//

#include "BackwardBuilder.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The types of `values`, skipping null ones (absent optional operands).
SmallVector<Type> typesOf(ArrayRef<Value> values) {
  SmallVector<Type> types;
  for (Value value : values)
    if (value)
      types.push_back(value.getType());
  return types;
}

LogicalResult emitConv(CausalConv1dOp op, BackwardBuilder &b) {
  OpBuilder &builder = b.getBuilder();
  Value dy = b.getCotangentOrZeros(op.getY());
  Value dfinal = op.getFinalState() ? b.getCotangent(op.getFinalState())
                                    : Value();
  auto grad = CausalConv1dGradOp::create(
      builder, op.getLoc(), op.getX().getType(), op.getWeight().getType(),
      typesOf({op.getBias(), op.getInitialState()}), dy,
      b.materialize(op.getX()), b.materialize(op.getWeight()),
      b.materialize(op.getPacking()), b.materializeIfAny(op.getBias()),
      b.materializeIfAny(op.getInitialState()), dfinal, op.getWidth(),
      op.getActivation());
  b.addCotangent(op.getX(), grad.getXGrad());
  b.addCotangent(op.getWeight(), grad.getWeightGrad());
  if (op.getBias())
    b.addCotangent(op.getBias(), grad.getBiasGrad());
  if (op.getInitialState())
    b.addCotangent(op.getInitialState(), grad.getInitialStateGrad());
  return success();
}

LogicalResult emitL2Norm(L2NormOp op, BackwardBuilder &b) {
  Value dy = b.getCotangentOrZeros(op.getY());
  auto grad =
      L2NormGradOp::create(b.getBuilder(), op.getLoc(), op.getX().getType(), dy,
                           b.materialize(op.getX()), op.getEps());
  b.addCotangent(op.getX(), grad.getXGrad());
  return success();
}

LogicalResult emitGates(GatesOp op, BackwardBuilder &b) {
  Value dg = b.getCotangentOrZeros(op.getG());
  Value dbeta = b.getCotangentOrZeros(op.getBeta());
  auto grad = GatesGradOp::create(
      b.getBuilder(), op.getLoc(),
      typesOf({op.getA(), op.getB(), op.getALog(), op.getDtBias()}), dg, dbeta,
      b.materialize(op.getA()), b.materialize(op.getB()),
      b.materialize(op.getALog()), b.materialize(op.getDtBias()),
      op.getAllowNegEigval());
  b.addCotangent(op.getA(), grad.getAGrad());
  b.addCotangent(op.getB(), grad.getBGrad());
  b.addCotangent(op.getALog(), grad.getALogGrad());
  b.addCotangent(op.getDtBias(), grad.getDtBiasGrad());
  return success();
}

LogicalResult emitDeltaRule(DeltaRuleOp op, BackwardBuilder &b) {
  Value dout = b.getCotangentOrZeros(op.getO());
  Value dfinal = b.getCotangent(op.getFinalState());
  auto grad = DeltaRuleGradOp::create(
      b.getBuilder(), op.getLoc(), op.getQ().getType(), op.getK().getType(),
      op.getV().getType(), op.getG().getType(), op.getBeta().getType(),
      op.getInitialState() ? op.getInitialState().getType() : Type(), dout,
      b.materialize(op.getQ()), b.materialize(op.getK()),
      b.materialize(op.getV()), b.materialize(op.getG()),
      b.materialize(op.getBeta()), b.materialize(op.getPacking()),
      b.materializeIfAny(op.getInitialState()), dfinal, op.getScaleAttr(),
      op.getChunkSize());
  b.addCotangent(op.getQ(), grad.getQGrad());
  b.addCotangent(op.getK(), grad.getKGrad());
  b.addCotangent(op.getV(), grad.getVGrad());
  b.addCotangent(op.getG(), grad.getGGrad());
  b.addCotangent(op.getBeta(), grad.getBetaGrad());
  if (op.getInitialState())
    b.addCotangent(op.getInitialState(), grad.getInitialStateGrad());
  return success();
}

LogicalResult emitGatedRMSNorm(GatedRMSNormOp op, BackwardBuilder &b) {
  Value dy = b.getCotangentOrZeros(op.getY());
  auto grad = GatedRMSNormGradOp::create(
      b.getBuilder(), op.getLoc(),
      typesOf({op.getX(), op.getZ(), op.getWeight()}), dy,
      b.materialize(op.getX()), b.materialize(op.getZ()),
      b.materialize(op.getWeight()), op.getEps());
  b.addCotangent(op.getX(), grad.getXGrad());
  b.addCotangent(op.getZ(), grad.getZGrad());
  b.addCotangent(op.getWeight(), grad.getWeightGrad());
  return success();
}

LogicalResult emitLinear(LinearOp op, BackwardBuilder &b) {
  Value dy = b.getCotangentOrZeros(op.getY());
  auto grad = LinearGradOp::create(
      b.getBuilder(), op.getLoc(), typesOf({op.getX(), op.getWeight()}), dy,
      b.materialize(op.getX()), b.materialize(op.getWeight()));
  b.addCotangent(op.getX(), grad.getXGrad());
  b.addCotangent(op.getWeight(), grad.getWeightGrad());
  return success();
}

LogicalResult emitSplitQkvz(SplitQkvzOp op, BackwardBuilder &b) {
  auto merge = MergeQkvzOp::create(
      b.getBuilder(), op.getLoc(), typesOf({op.getQkvz(), op.getBa()}),
      b.getCotangentOrZeros(op.getMixedQkv()), b.getCotangentOrZeros(op.getZ()),
      b.getCotangentOrZeros(op.getB()), b.getCotangentOrZeros(op.getA()),
      op.getKeyHeads(), op.getHeadDimK());
  b.addCotangent(op.getQkvz(), merge.getQkvz());
  b.addCotangent(op.getBa(), merge.getBa());
  return success();
}

LogicalResult emitSplitQkv(SplitQkvOp op, BackwardBuilder &b) {
  auto merge = MergeQkvOp::create(
      b.getBuilder(), op.getLoc(), op.getMixedQkv().getType(),
      b.getCotangentOrZeros(op.getQ()), b.getCotangentOrZeros(op.getK()),
      b.getCotangentOrZeros(op.getV()));
  b.addCotangent(op.getMixedQkv(), merge.getMixedQkv());
  return success();
}

LogicalResult emitRegroupSections(RegroupSectionsOp op, BackwardBuilder &b) {
  auto inverse = RegroupSectionsOp::create(
      b.getBuilder(), op.getLoc(), op.getX().getType(),
      b.getCotangentOrZeros(op.getY()), op.getDim(), op.getSectionSizes(),
      op.getGroups(), !op.getInverse());
  b.addCotangent(op.getX(), inverse.getY());
  return success();
}

} // namespace

LogicalResult mlir::gdn::emitGdnGradient(Operation *op, BackwardBuilder &b) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](CausalConv1dOp conv) { return emitConv(conv, b); })
      .Case([&](L2NormOp norm) { return emitL2Norm(norm, b); })
      .Case([&](GatesOp gates) { return emitGates(gates, b); })
      .Case([&](DeltaRuleOp delta) { return emitDeltaRule(delta, b); })
      .Case([&](GatedRMSNormOp norm) { return emitGatedRMSNorm(norm, b); })
      .Case([&](LinearOp linear) { return emitLinear(linear, b); })
      .Case([&](SplitQkvzOp split) { return emitSplitQkvz(split, b); })
      .Case([&](SplitQkvOp split) { return emitSplitQkv(split, b); })
      .Case([&](RegroupSectionsOp regroup) {
        return emitRegroupSections(regroup, b);
      })
      .Default([](Operation *) { return failure(); });
}
