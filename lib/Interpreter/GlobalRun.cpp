//===- GlobalRun.cpp - run a P-rank program on global tensors -------------===//
//
// What makes a P-rank program comparable with a one-rank program: both take
// the same global inputs and produce global outputs. The argument and result
// layouts say how to scatter and gather.
//
//===----------------------------------------------------------------------===//

#include "Engine.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Interpreter/Distribution.h"
#include "gdn/Interpreter/InputGenerator.h"
#include "gdn/Interpreter/Interpreter.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

/// The global packing, when the function takes cu_seqlens (needed to cut
/// zigzag shards).
static llvm::Expected<std::optional<PackingInfo>>
findGlobalPacking(func::FuncOp func, const std::vector<Tensor> &inputs) {
  std::vector<InputRole> roles = inferInputRoles(func);
  std::optional<std::vector<int64_t>> offsets, padded;
  for (auto [index, role] : llvm::enumerate(roles)) {
    const bool first = role == InputRole::Offsets ? !offsets
                       : role == InputRole::PaddedOffsets ? !padded
                                                          : false;
    if (!first)
      continue;
    auto values = inputs[index].toIntegers(
        role == InputRole::Offsets ? "cu_seqlens" : "cu_padded");
    if (!values)
      return values.takeError();
    (role == InputRole::Offsets ? offsets : padded) = std::move(*values);
  }
  if (!offsets)
    return std::optional<PackingInfo>();
  auto info = PackingInfo::create(*offsets, padded, /*expectedBuffer=*/-1);
  if (!info)
    return info.takeError();
  return std::optional<PackingInfo>(std::move(*info));
}

/// True when an argument or result of `func` is a zigzag shard.
static bool usesZigzag(func::FuncOp func) {
  auto isZigzag = [](Type type) {
    auto seq = dyn_cast_or_null<SeqLayoutAttr>(getSequenceLayout(type));
    return seq && seq.getKind() == SeqLayoutKind::Zigzag;
  };
  return llvm::any_of(func.getFunctionType().getInputs(), isZigzag) ||
         llvm::any_of(func.getFunctionType().getResults(), isZigzag);
}

llvm::Expected<std::optional<PackingInfo>>
mlir::gdn::interp::getDistributionPacking(func::FuncOp func,
                                          const std::vector<Tensor> &inputs) {
  // Invalid offsets are reported by the program's gdn.packing op, with its
  // location; only zigzag layouts need them before the program runs.
  auto packing = findGlobalPacking(func, inputs);
  if (packing)
    return std::move(*packing);
  if (usesZigzag(func))
    return packing.takeError();
  llvm::consumeError(packing.takeError());
  return std::optional<PackingInfo>();
}

llvm::Error mlir::gdn::interp::checkSameSignature(
    ArrayRef<func::FuncOp> rankFunctions) {
  func::FuncOp first = rankFunctions[0];
  for (func::FuncOp function : rankFunctions)
    if (function.getFunctionType() != first.getFunctionType())
      return llvm::createStringError(
          "every rank's function must have the same signature; @" +
          function.getName().str() + " differs from @" + first.getName().str());
  return llvm::Error::success();
}

llvm::Expected<RankTensors> mlir::gdn::interp::scatterArguments(
    func::FuncOp function, const std::vector<Tensor> &globalInputs,
    int64_t ranks, const PackingInfo *packing) {
  RankTensors rankInputs(ranks);
  for (auto [index, type] :
       llvm::enumerate(function.getFunctionType().getInputs())) {
    auto shards = scatterToRanks(globalInputs[index],
                                 cast<RankedTensorType>(type), ranks, packing);
    if (!shards)
      return llvm::createStringError(
          llvm::formatv("argument #{0} of @{1}: {2}", index,
                        function.getName(), llvm::toString(shards.takeError())));
    for (int64_t rank = 0; rank < ranks; ++rank)
      rankInputs[rank].push_back(std::move((*shards)[rank]));
  }
  return rankInputs;
}

llvm::Expected<std::vector<Tensor>>
mlir::gdn::interp::gatherResults(func::FuncOp function,
                                 const RankTensors &rankOutputs,
                                 const PackingInfo *packing) {
  std::vector<Tensor> outputs;
  for (auto [index, type] :
       llvm::enumerate(function.getFunctionType().getResults())) {
    std::vector<Tensor> locals;
    for (const std::vector<Tensor> &rank : rankOutputs)
      locals.push_back(rank[index]);
    auto global =
        gatherFromRanks(locals, cast<RankedTensorType>(type), packing);
    if (!global)
      return llvm::createStringError(
          llvm::formatv("result #{0} of @{1}: {2}", index, function.getName(),
                        llvm::toString(global.takeError())));
    outputs.push_back(std::move(*global));
  }
  return outputs;
}

llvm::Expected<std::vector<Tensor>>
mlir::gdn::interp::runOnGlobalInputs(ArrayRef<func::FuncOp> rankFunctions,
                                     const std::vector<Tensor> &globalInputs,
                                     const InterpreterOptions &options,
                                     RankViews *views) {
  const int64_t ranks = static_cast<int64_t>(rankFunctions.size());
  func::FuncOp first = rankFunctions[0];
  if (auto error = checkSameSignature(rankFunctions))
    return std::move(error);
  auto validPacking = getDistributionPacking(first, globalInputs);
  if (!validPacking)
    return validPacking.takeError();
  const PackingInfo *packingPtr = *validPacking ? &**validPacking : nullptr;
  auto rankInputs = scatterArguments(first, globalInputs, ranks, packingPtr);
  if (!rankInputs)
    return rankInputs.takeError();
  if (views) {
    views->arguments = *rankInputs;
    views->packing = *validPacking;
  }
  auto rankOutputs = runOnRanks(rankFunctions, std::move(*rankInputs), options);
  if (!rankOutputs)
    return rankOutputs.takeError();
  auto outputs = gatherResults(first, *rankOutputs, packingPtr);
  if (views)
    views->results = std::move(*rankOutputs);
  return outputs;
}
