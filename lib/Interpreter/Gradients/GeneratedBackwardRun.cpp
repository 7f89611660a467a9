//===- GeneratedBackwardRun.cpp - running @f_forward then @f_backward -----===//
//
// gdn-generate-backward turns @f into @f_forward (results, then saved
// values) and @f_backward (arguments, saved values, cotangents ->
// gradients). This runs the pair the way a training step would: each rank
// keeps its own saved values (they are never gathered: a rank's slice of
// heads is no global tensor), the cotangents are scattered by the results'
// layouts (whole to every rank where a result has none), and the gradients
// are gathered by the arguments' layouts. The outcome has the form of
// runWithGradients', so gdn-run compares the two directly.
//
//===----------------------------------------------------------------------===//

#include "GradientEngine.h"

#include "gdn/Interpreter/Distribution.h"
#include "gdn/Interpreter/Gradients.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

/// `tensor`'s values stored as `type`'s elements.
static llvm::Expected<Tensor> storeAs(const Tensor &tensor, Type type) {
  auto kind = getElementKind(cast<RankedTensorType>(type).getElementType());
  if (!kind)
    return kind.takeError();
  Tensor stored(*kind, std::vector<int64_t>(tensor.getShape()));
  stored.values() = tensor.values();
  stored.roundToStorage();
  return stored;
}

llvm::Expected<GradientRun> mlir::gdn::interp::runGeneratedBackward(
    func::FuncOp original, ArrayRef<func::FuncOp> forwardRanks,
    ArrayRef<func::FuncOp> backwardRanks,
    const std::vector<Tensor> &globalInputs,
    const std::vector<Tensor> &cotangents, const InterpreterOptions &options,
    RankViews *views) {
  const int64_t ranks = static_cast<int64_t>(forwardRanks.size());
  func::FuncOp forward = forwardRanks[0], backward = backwardRanks[0];
  FunctionType signature = original.getFunctionType();
  const unsigned numResults = signature.getNumResults();
  if (forward.getFunctionType().getInputs() != signature.getInputs() ||
      forward.getNumResults() < numResults ||
      forward.getFunctionType().getResults().take_front(numResults) !=
          signature.getResults())
    return llvm::createStringError(llvm::formatv(
        "@{0} does not have the signature of @{1} followed by saved values; "
        "regenerate it with gdn-opt --gdn-generate-backward",
        forward.getName(), original.getName()));
  const unsigned numSaved = forward.getNumResults() - numResults;
  SmallVector<unsigned> floatResults, floatArguments;
  for (auto [index, type] : llvm::enumerate(signature.getResults()))
    if (isDifferentiable(type))
      floatResults.push_back(index);
  for (auto [index, type] : llvm::enumerate(signature.getInputs()))
    if (isDifferentiable(type))
      floatArguments.push_back(index);
  if (backward.getNumArguments() !=
          signature.getNumInputs() + numSaved + floatResults.size() ||
      backward.getNumResults() != floatArguments.size())
    return llvm::createStringError(llvm::formatv(
        "@{0} must take @{1}'s {2} arguments, the {3} saved values of @{4} "
        "and {5} cotangents, and return {6} gradients; it takes {7} and "
        "returns {8}",
        backward.getName(), original.getName(), signature.getNumInputs(),
        numSaved, forward.getName(), floatResults.size(), floatArguments.size(),
        backward.getNumArguments(), backward.getNumResults()));
  if (cotangents.size() != numResults)
    return llvm::createStringError(
        llvm::formatv("@{0} has {1} results but {2} cotangents were given",
                      original.getName(), numResults, cotangents.size()));

  auto packing = getDistributionPacking(original, globalInputs);
  if (!packing)
    return packing.takeError();
  const PackingInfo *packingPtr = *packing ? &**packing : nullptr;
  auto rankArguments =
      scatterArguments(original, globalInputs, ranks, packingPtr);
  if (!rankArguments)
    return rankArguments.takeError();
  auto rankOutputs = runOnRanks(forwardRanks, *rankArguments, options);
  if (!rankOutputs)
    return rankOutputs.takeError();

  if (views) {
    views->arguments = *rankArguments;
    views->results = *rankOutputs;
    views->packing = *packing;
    views->cotangents.assign(ranks, {});
  }
  GradientRun run;
  RankTensors rankResults(ranks);
  for (int64_t rank = 0; rank < ranks; ++rank)
    rankResults[rank].assign((*rankOutputs)[rank].begin(),
                             (*rankOutputs)[rank].begin() + numResults);
  auto results = gatherResults(original, rankResults, packingPtr);
  if (!results)
    return results.takeError();
  run.results = std::move(*results);

  // Each rank's backward inputs: its arguments, its own saved values, and
  // its share of the cotangents.
  RankTensors backwardInputs = std::move(*rankArguments);
  for (int64_t rank = 0; rank < ranks; ++rank)
    for (unsigned i = numResults; i < numResults + numSaved; ++i)
      backwardInputs[rank].push_back(std::move((*rankOutputs)[rank][i]));
  for (unsigned index : floatResults) {
    Type type = signature.getResult(index);
    if (cotangents[index].getShape() != run.results[index].getShape())
      return llvm::createStringError(llvm::formatv(
          "the cotangent of result #{0} of @{1} has shape {2} but the result "
          "has shape {3}",
          index, original.getName(), cotangents[index].describe(),
          run.results[index].describe()));
    auto stored = storeAs(cotangents[index], type);
    if (!stored)
      return stored.takeError();
    auto shares = scatterToRanks(*stored, cast<RankedTensorType>(type), ranks,
                                 packingPtr);
    if (!shares)
      return llvm::createStringError(llvm::formatv(
          "the cotangent of result #{0} of @{1}: {2}", index,
          original.getName(), llvm::toString(shares.takeError())));
    for (int64_t rank = 0; rank < ranks; ++rank) {
      if (views)
        views->cotangents[rank].push_back((*shares)[rank]);
      backwardInputs[rank].push_back(std::move((*shares)[rank]));
    }
  }
  auto rankGradients =
      runOnRanks(backwardRanks, std::move(backwardInputs), options);
  if (!rankGradients)
    return rankGradients.takeError();
  if (views)
    views->gradients = *rankGradients;

  run.gradients.assign(signature.getNumInputs(), std::nullopt);
  for (auto [position, index] : llvm::enumerate(floatArguments)) {
    std::vector<Tensor> locals;
    for (int64_t rank = 0; rank < ranks; ++rank)
      locals.push_back(std::move((*rankGradients)[rank][position]));
    auto gradient = gatherFromRanks(
        locals, cast<RankedTensorType>(signature.getInput(index)), packingPtr);
    if (!gradient)
      return llvm::createStringError(
          llvm::formatv("the gradient of argument #{0} of @{1} from @{2}: {3}",
                        index, original.getName(), backward.getName(),
                        llvm::toString(gradient.takeError())));
    Tensor asFloat64 = zerosLike(*gradient);
    asFloat64.values() = gradient->values();
    run.gradients[index] = std::move(asFloat64);
  }
  return run;
}
