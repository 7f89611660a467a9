//===- GradientDriver.cpp - reverse-mode differentiation of a program -----===//
//
// Forward: the ranks run the program as usual (runOnRanksKeepingValues), but
// every value stays bound so the rules can read it. Backward: each rank
// seeds the cotangents of its results and walks its ops from the last to
// the first; as in the forward, ranks move independently between
// collectives and meet at each one (in reverse order), whose rule then runs
// for all ranks of a group at once. Global inputs, cotangents and gradients
// are scattered and gathered by the argument and result layouts.
//
//===----------------------------------------------------------------------===//

#include "GradientEngine.h"

#include "../RandomStream.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Interpreter/Distribution.h"
#include "gdn/Interpreter/Gradients.h"

#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

bool mlir::gdn::interp::isDifferentiable(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

std::vector<Tensor>
mlir::gdn::interp::generateCotangents(const std::vector<Tensor> &results,
                                      uint64_t seed) {
  std::vector<Tensor> cotangents;
  for (auto [index, result] : llvm::enumerate(results)) {
    if (result.getKind() == ElementKind::I32 ||
        result.getKind() == ElementKind::I64) {
      cotangents.emplace_back();
      continue;
    }
    Tensor cotangent = zerosLike(result);
    // Streams apart from the inputs' (which use the argument index).
    RandomStream random(seed, 0xC07A000000ull + index);
    for (double &value : cotangent.values())
      value = random.normal();
    cotangents.push_back(std::move(cotangent));
  }
  return cotangents;
}

namespace {

/// Walks every rank's ops backwards, meeting at collectives.
llvm::Error sweepBackwards(ArrayRef<func::FuncOp> rankFunctions,
                           ArrayRef<Environment> envs,
                           MutableArrayRef<CotangentMap> cotangents,
                           const RankGrid &grid,
                           const InterpreterOptions &options) {
  const int64_t ranks = static_cast<int64_t>(rankFunctions.size());
  // Each rank's ops without the terminator, last first.
  std::vector<std::vector<Operation *>> order(ranks);
  std::vector<size_t> next(ranks, 0);
  for (int64_t rank = 0; rank < ranks; ++rank)
    for (Operation &op : llvm::reverse(func::FuncOp(rankFunctions[rank])
                                           .getBody()
                                           .front()
                                           .without_terminator()))
      order[rank].push_back(&op);

  while (true) {
    for (int64_t rank = 0; rank < ranks; ++rank)
      for (; next[rank] < order[rank].size(); ++next[rank]) {
        Operation *op = order[rank][next[rank]];
        if (isCollective(op))
          break;
        if (auto error =
                propagateLocalOp(op, envs[rank], cotangents[rank], options))
          return error;
      }

    SmallVector<int64_t> waiting, finished;
    for (int64_t rank = 0; rank < ranks; ++rank)
      (next[rank] < order[rank].size() ? waiting : finished).push_back(rank);
    if (waiting.empty())
      return llvm::Error::success();
    // The forward met every collective on every rank, so the backward
    // meets them too; these errors guard against programs whose ranks
    // differ in ways the forward tolerated.
    if (!finished.empty())
      return llvm::createStringError(llvm::formatv(
          "gradient sweep: rank {0} reached the start of its "
          "function while rank {1} waits at {2}",
          finished.front(), waiting.front(),
          describeWaiting(order[waiting.front()][next[waiting.front()]])));
    SmallVector<Operation *> ops;
    for (int64_t rank = 0; rank < ranks; ++rank)
      ops.push_back(order[rank][next[rank]]);
    for (int64_t rank = 1; rank < ranks; ++rank)
      if (!isSameCollective(ops[0], ops[rank]))
        return llvm::createStringError(
            "gradient sweep: collective mismatch: rank 0 waits at " +
            describeWaiting(ops[0]) + " but rank " + std::to_string(rank) +
            " waits at " + describeWaiting(ops[rank]));

    llvm::SmallSet<int64_t, 8> done;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      if (done.contains(rank))
        continue;
      SmallVector<Operation *> groupOps;
      SmallVector<const Environment *> groupEnvs;
      SmallVector<CotangentMap *> groupCotangents;
      for (int64_t member : getGroupMembers(ops[0], grid, ranks, rank)) {
        groupOps.push_back(ops[member]);
        groupEnvs.push_back(&envs[member]);
        groupCotangents.push_back(&cotangents[member]);
        done.insert(member);
      }
      if (auto error =
              propagateCollective(groupOps, groupEnvs, groupCotangents))
        return error;
    }
    for (int64_t rank = 0; rank < ranks; ++rank)
      ++next[rank];
  }
}

} // namespace

llvm::Expected<GradientRun>
mlir::gdn::interp::runWithGradients(ArrayRef<func::FuncOp> rankFunctions,
                                    const std::vector<Tensor> &globalInputs,
                                    const std::vector<Tensor> &cotangents,
                                    const InterpreterOptions &options) {
  const int64_t ranks = static_cast<int64_t>(rankFunctions.size());
  func::FuncOp first = rankFunctions[0];
  if (auto error = checkSameSignature(rankFunctions))
    return std::move(error);
  FunctionType signature = first.getFunctionType();
  auto packing = getDistributionPacking(first, globalInputs);
  if (!packing)
    return packing.takeError();
  const PackingInfo *packingPtr = *packing ? &**packing : nullptr;

  // Forward, keeping every value.
  auto rankInputs = scatterArguments(first, globalInputs, ranks, packingPtr);
  if (!rankInputs)
    return rankInputs.takeError();
  SmallVector<Environment> envs;
  auto rankOutputs = runOnRanksKeepingValues(
      rankFunctions, std::move(*rankInputs), options, envs);
  if (!rankOutputs)
    return rankOutputs.takeError();
  GradientRun run;
  auto results = gatherResults(first, *rankOutputs, packingPtr);
  if (!results)
    return results.takeError();
  run.results = std::move(*results);

  // Seed each rank's results with its share of the cotangents.
  if (cotangents.size() != run.results.size())
    return llvm::createStringError(
        llvm::formatv("@{0} has {1} results but {2} cotangents were given",
                      first.getName(), run.results.size(), cotangents.size()));
  SmallVector<CotangentMap> rankCotangents(ranks);
  for (auto [index, type] : llvm::enumerate(signature.getResults())) {
    if (!isDifferentiable(type))
      continue;
    const Tensor &cotangent = cotangents[index];
    if (cotangent.getShape() != run.results[index].getShape())
      return llvm::createStringError(llvm::formatv(
          "the cotangent of result #{0} of @{1} has shape {2} but the result "
          "has shape {3}",
          index, first.getName(), cotangent.describe(),
          run.results[index].describe()));
    auto localType = cast<RankedTensorType>(type);
    Tensor global = zerosLike(cotangent);
    global.values() = cotangent.values();
    std::vector<std::optional<Tensor>> shares(ranks);
    if (getSequenceLayout(localType)) {
      auto shards = scatterToRanks(global, localType, ranks, packingPtr);
      if (!shards)
        return llvm::createStringError(
            llvm::formatv("the cotangent of result #{0} of @{1}: {2}", index,
                          first.getName(), llvm::toString(shards.takeError())));
      for (int64_t rank = 0; rank < ranks; ++rank)
        shares[rank] = std::move((*shards)[rank]);
    } else {
      // The global result is rank 0's copy (gatherFromRanks checked that
      // the ranks agree), so only rank 0's result carries the cotangent.
      shares[0] = std::move(global);
    }
    for (int64_t rank = 0; rank < ranks; ++rank)
      if (shares[rank])
        rankCotangents[rank].add(func::FuncOp(rankFunctions[rank])
                                     .getBody()
                                     .front()
                                     .getTerminator()
                                     ->getOperand(index),
                                 std::move(*shares[rank]));
  }

  auto grid = findRankGrid(first, ranks);
  if (!grid)
    return grid.takeError();
  if (auto error =
          sweepBackwards(rankFunctions, envs, rankCotangents, *grid, options))
    return std::move(error);

  for (auto [index, type] : llvm::enumerate(signature.getInputs())) {
    if (!isDifferentiable(type)) {
      run.gradients.push_back(std::nullopt);
      continue;
    }
    std::vector<Tensor> locals;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      BlockArgument argument =
          func::FuncOp(rankFunctions[rank]).getArgument(index);
      locals.push_back(
          rankCotangents[rank].take(argument, envs[rank].tensor(argument)));
    }
    auto localType = cast<RankedTensorType>(type);
    if (getSequenceLayout(localType)) {
      auto gradient = gatherFromRanks(locals, localType, packingPtr);
      if (!gradient)
        return llvm::createStringError(llvm::formatv(
            "the gradient of argument #{0} of @{1}: {2}", index,
            first.getName(), llvm::toString(gradient.takeError())));
      run.gradients.push_back(std::move(*gradient));
      continue;
    }
    // Every rank holds the whole argument: its gradient is the sum of the
    // ranks' (in rank order).
    Tensor gradient = std::move(locals[0]);
    for (int64_t rank = 1; rank < ranks; ++rank)
      accumulateInto(gradient, locals[rank]);
    run.gradients.push_back(std::move(gradient));
  }
  return run;
}
