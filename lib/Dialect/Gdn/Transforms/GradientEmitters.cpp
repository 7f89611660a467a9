//===- GradientEmitters.cpp - the VJP of each gdn op, as IR ---------------===//
//
// One emitter per gdn op: it reads the cotangents of the op's results,
// materialises the forward values the gradient op needs, builds the
// gradient op (GdnGradientOps.td) and hands the cotangents of the op's
// operands back to the builder. Splits are permutations, so their VJPs are
// the inverse copies (gdn.merge_qkvz, gdn.merge_qkv, gdn.regroup_sections
// inverted); a tensor reshape's VJP is the opposite reshape.
//
//===----------------------------------------------------------------------===//

#include "BackwardBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The cotangent types of the forward values `values` (getCotangentType),
/// skipping null ones (absent optional operands).
SmallVector<Type> cotangentTypesOf(ArrayRef<Value> values) {
  SmallVector<Type> types;
  for (Value value : values)
    if (value)
      types.push_back(getCotangentType(value));
  return types;
}

LogicalResult emitConv(CausalConv1dOp op, BackwardBuilder &b) {
  Value dy = b.getCotangentOrZeros(op.getY());
  Value dfinal =
      op.getFinalState() ? b.getCotangent(op.getFinalState()) : Value();
  SmallVector<Value> in =
      b.materializeAll({op.getX(), op.getWeight(), op.getPacking(),
                        op.getBias(), op.getInitialState()});
  auto grad = CausalConv1dGradOp::create(
      b.getBuilder(), op.getLoc(), getCotangentType(op.getX()),
      getCotangentType(op.getWeight()),
      cotangentTypesOf({op.getBias(), op.getInitialState()}), dy, in[0], in[1],
      in[2], in[3], in[4], dfinal, op.getWidth(), op.getActivation());
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
  Value x = b.materialize(op.getX());
  auto grad =
      L2NormGradOp::create(b.getBuilder(), op.getLoc(),
                           getCotangentType(op.getX()), dy, x, op.getEps());
  b.addCotangent(op.getX(), grad.getXGrad());
  return success();
}

LogicalResult emitGates(GatesOp op, BackwardBuilder &b) {
  Value dg = b.getCotangentOrZeros(op.getG());
  Value dbeta = b.getCotangentOrZeros(op.getBeta());
  SmallVector<Value> in =
      b.materializeAll({op.getA(), op.getB(), op.getALog(), op.getDtBias()});
  auto grad = GatesGradOp::create(
      b.getBuilder(), op.getLoc(),
      cotangentTypesOf({op.getA(), op.getB(), op.getALog(), op.getDtBias()}),
      dg, dbeta, in[0], in[1], in[2], in[3], op.getAllowNegEigval());
  b.addCotangent(op.getA(), grad.getAGrad());
  b.addCotangent(op.getB(), grad.getBGrad());
  b.addCotangent(op.getALog(), grad.getALogGrad());
  b.addCotangent(op.getDtBias(), grad.getDtBiasGrad());
  return success();
}

LogicalResult emitDeltaRule(DeltaRuleOp op, BackwardBuilder &b) {
  Value dout = b.getCotangentOrZeros(op.getO());
  Value dfinal = b.getCotangent(op.getFinalState());
  SmallVector<Value> in =
      b.materializeAll({op.getQ(), op.getK(), op.getV(), op.getG(),
                        op.getBeta(), op.getPacking(), op.getInitialState()});
  auto grad = DeltaRuleGradOp::create(
      b.getBuilder(), op.getLoc(), getCotangentType(op.getQ()),
      getCotangentType(op.getK()), getCotangentType(op.getV()),
      getCotangentType(op.getG()), getCotangentType(op.getBeta()),
      op.getInitialState() ? getCotangentType(op.getInitialState()) : Type(),
      dout, in[0], in[1], in[2], in[3], in[4], in[5], in[6], dfinal,
      op.getScaleAttr(), op.getChunkSize());
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
  SmallVector<Value> in =
      b.materializeAll({op.getX(), op.getZ(), op.getWeight()});
  auto grad = GatedRMSNormGradOp::create(
      b.getBuilder(), op.getLoc(),
      cotangentTypesOf({op.getX(), op.getZ(), op.getWeight()}), dy, in[0],
      in[1], in[2], op.getEps());
  b.addCotangent(op.getX(), grad.getXGrad());
  b.addCotangent(op.getZ(), grad.getZGrad());
  b.addCotangent(op.getWeight(), grad.getWeightGrad());
  return success();
}

LogicalResult emitLinear(LinearOp op, BackwardBuilder &b) {
  Value dy = b.getCotangentOrZeros(op.getY());
  SmallVector<Value> in = b.materializeAll({op.getX(), op.getWeight()});
  auto grad = LinearGradOp::create(
      b.getBuilder(), op.getLoc(),
      cotangentTypesOf({op.getX(), op.getWeight()}), dy, in[0], in[1]);
  b.addCotangent(op.getX(), grad.getXGrad());
  b.addCotangent(op.getWeight(), grad.getWeightGrad());
  return success();
}

LogicalResult emitSplitQkvz(SplitQkvzOp op, BackwardBuilder &b) {
  SmallVector<Value> d = b.getCotangentsOrZeros(
      {op.getMixedQkv(), op.getZ(), op.getB(), op.getA()});
  auto merge = MergeQkvzOp::create(
      b.getBuilder(), op.getLoc(), cotangentTypesOf({op.getQkvz(), op.getBa()}),
      d[0], d[1], d[2], d[3], op.getKeyHeads(), op.getHeadDimK());
  b.addCotangent(op.getQkvz(), merge.getQkvz());
  b.addCotangent(op.getBa(), merge.getBa());
  return success();
}

LogicalResult emitSplitQkv(SplitQkvOp op, BackwardBuilder &b) {
  SmallVector<Value> d =
      b.getCotangentsOrZeros({op.getQ(), op.getK(), op.getV()});
  auto merge =
      MergeQkvOp::create(b.getBuilder(), op.getLoc(),
                         getCotangentType(op.getMixedQkv()), d[0], d[1], d[2]);
  b.addCotangent(op.getMixedQkv(), merge.getMixedQkv());
  return success();
}

LogicalResult emitRegroupSections(RegroupSectionsOp op, BackwardBuilder &b) {
  auto inverse = RegroupSectionsOp::create(
      b.getBuilder(), op.getLoc(), getCotangentType(op.getX()),
      b.getCotangentOrZeros(op.getY()), op.getDim(), op.getSectionSizes(),
      op.getGroups(), !op.getInverse());
  b.addCotangent(op.getX(), inverse.getY());
  return success();
}

LogicalResult emitCollapseShape(tensor::CollapseShapeOp op,
                                BackwardBuilder &b) {
  OpBuilder &builder = b.getBuilder();
  Value dy = b.getCotangentOrZeros(op.getResult());
  // The expanded sizes: static ones as attributes, dynamic ones read from
  // the forward's operand.
  RankedTensorType srcType = op.getSrcType();
  SmallVector<OpFoldResult> sizes;
  Value src;
  for (int64_t dim = 0; dim < srcType.getRank(); ++dim) {
    if (!srcType.isDynamicDim(dim)) {
      sizes.push_back(builder.getIndexAttr(srcType.getDimSize(dim)));
      continue;
    }
    if (!src)
      src = b.materialize(op.getSrc());
    sizes.push_back(
        tensor::DimOp::create(builder, op.getLoc(), src, dim).getResult());
  }
  auto expand = tensor::ExpandShapeOp::create(
      builder, op.getLoc(), getCotangentType(op.getSrc()), dy,
      op.getReassociationIndices(), sizes);
  b.addCotangent(op.getSrc(), expand.getResult());
  return success();
}

LogicalResult emitExpandShape(tensor::ExpandShapeOp op, BackwardBuilder &b) {
  auto collapse = tensor::CollapseShapeOp::create(
      b.getBuilder(), op.getLoc(), getCotangentType(op.getSrc()),
      b.getCotangentOrZeros(op.getResult()), op.getReassociationIndices());
  b.addCotangent(op.getSrc(), collapse.getResult());
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
      .Case([&](tensor::CollapseShapeOp collapse) {
        return emitCollapseShape(collapse, b);
      })
      .Case([&](tensor::ExpandShapeOp expand) {
        return emitExpandShape(expand, b);
      })
      .Default([](Operation *) { return failure(); });
}
