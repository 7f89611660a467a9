//===- GradientSums.cpp - sums of projections' input gradients ------------===//
//
// A sum folds when it is a tree of arith.addf whose leaves are gdn.linear_grad
// x gradients and whose every value (leaf or partial sum) has that addition
// as its only use: then nothing reads a partial sum, and the projections'
// GEMMs can build the total in the root's buffer in program order. Anything
// else (a term used twice, an argument, another op's result) is not folded,
// and the function says the addition has no CUDA lowering.
//
//===----------------------------------------------------------------------===//

#include "GradientSums.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cuda;

namespace {

/// True when `value` can be a term of a folded sum consumed by `user`.
bool isFoldableTerm(Value value, Operation *user) {
  if (!value.hasOneUse())
    return false;
  Operation *producer = value.getDefiningOp();
  if (!producer || producer->getBlock() != user->getBlock())
    return false;
  if (auto grad = dyn_cast<LinearGradOp>(producer))
    return value == grad.getXGrad();
  if (auto add = dyn_cast<arith::AddFOp>(producer))
    return isFoldedGradientSum(add);
  return false;
}

/// The folded sum that takes `value` as a term, or null.
arith::AddFOp getConsumingSum(Value value) {
  if (!value.hasOneUse())
    return {};
  auto add = dyn_cast<arith::AddFOp>(*value.getUsers().begin());
  return add && isFoldedGradientSum(add) ? add : arith::AddFOp();
}

/// The gdn.linear_grad ops whose x gradients the folded sum `sum` adds up.
void collectTerms(Value sum, SmallVectorImpl<LinearGradOp> &terms) {
  if (auto grad = sum.getDefiningOp<LinearGradOp>()) {
    terms.push_back(grad);
    return;
  }
  auto add = sum.getDefiningOp<arith::AddFOp>();
  collectTerms(add.getLhs(), terms);
  collectTerms(add.getRhs(), terms);
}

} // namespace

bool mlir::gdn::cuda::isFoldedGradientSum(arith::AddFOp add) {
  // `x + x` would need the gradient twice; its single value has two uses.
  return isa<RankedTensorType>(add.getType()) &&
         isFoldableTerm(add.getLhs(), add) && isFoldableTerm(add.getRhs(), add);
}

Value mlir::gdn::cuda::getGradientSumStorage(Value value) {
  Value storage = value;
  while (arith::AddFOp sum = getConsumingSum(storage))
    storage = sum.getResult();
  return storage;
}

bool mlir::gdn::cuda::accumulatesInputGradient(LinearGradOp op) {
  Value root = getGradientSumStorage(op.getXGrad());
  if (root == op.getXGrad())
    return false;
  SmallVector<LinearGradOp> terms;
  collectTerms(root, terms);
  return llvm::any_of(terms, [&](LinearGradOp term) {
    return term != op && term->isBeforeInBlock(op);
  });
}
