//===- ChunkwiseGradients.cpp - VJPs of chunkwise CP's per-rank ops -------===//
//
// gdn_comm.continue_conv_state, state_summary and continue_state build a
// rank's initial states and its summary from the global packing: they find
// the sequence that continues into the rank's shard and the one that leaves
// it (Distribution.h), exactly as ChunkwiseOps.cpp does, and their rules
// send the cotangents back along the same choices of sequence and row.
//
//===----------------------------------------------------------------------===//

#include "GradientEngine.h"

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Interpreter/Distribution.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

ContinuedStateGradients mlir::gdn::interp::continueConvStateVJP(
    Tensor dState, const PackingInfo &packing, const ChunkwiseShard &shard,
    bool hasInitialState) {
  const int64_t channels = dState.getDimSize(1), taps = dState.getDimSize(2);
  ContinuedStateGradients grads;
  grads.dreceived = Tensor(ElementKind::F64, {taps, channels});
  // Every sequence but the continuing one copies its initial state.
  grads.dinitialState = std::move(dState);
  if (!shard.continuing)
    return grads;
  const int64_t seq = *shard.continuing;
  const int64_t first = packing.getBegin(seq);
  double *entry = grads.dinitialState.getData() + seq * channels * taps;
  const std::vector<double> from(entry, entry + channels * taps);
  std::fill_n(entry, channels * taps, 0.0);
  for (int64_t j = 0; j < taps; ++j) {
    const int64_t row = shard.begin - taps + j;
    for (int64_t c = 0; c < channels; ++c) {
      if (row >= first)
        grads.dreceived.getData()[j * channels + c] += from[c * taps + j];
      else if (hasInitialState)
        entry[c * taps + taps - (first - row)] += from[c * taps + j];
    }
  }
  return grads;
}

ContinuedStateGradients
mlir::gdn::interp::continueStateVJP(Tensor dState,
                                    const ChunkwiseShard &shard) {
  std::vector<int64_t> shape(dState.getShape().begin() + 1,
                             dState.getShape().end());
  ContinuedStateGradients grads;
  grads.dreceived = Tensor(ElementKind::F64, shape);
  const int64_t perSequence = grads.dreceived.getNumElements();
  if (shard.continuing) {
    double *entry = dState.getData() + *shard.continuing * perSequence;
    std::copy_n(entry, perSequence, grads.dreceived.getData());
    // The continuing sequence ignores its initial state.
    std::fill_n(entry, perSequence, 0.0);
  }
  grads.dinitialState = std::move(dState);
  return grads;
}

std::optional<DeltaRuleSummaryGradients> mlir::gdn::interp::stateSummaryVJP(
    const DeltaRuleInputs &inputs, const ChunkwiseShard &shard,
    const Tensor *dtransition, const Tensor *dpartial) {
  // Without a leaving sequence the summary is constant (zero).
  if (!shard.leaving)
    return std::nullopt;
  const PackingInfo &packing = inputs.packing;
  const int64_t seq = *shard.leaving;
  const int64_t first = std::max(packing.getBegin(seq), shard.begin);
  return deltaRuleSummaryVJP(
      inputs, seq, first - shard.begin, shard.end - shard.begin,
      /*startsHere=*/packing.getBegin(seq) >= shard.begin, dtransition,
      dpartial);
}

namespace {

llvm::Error propagateContinueConvState(Operation *operation,
                                       const Environment &env,
                                       CotangentMap &cotangents,
                                       const InterpreterOptions &) {
  auto op = cast<comm::ContinueConvStateOp>(operation);
  const PackingInfo &packing = env.packing(op.getPacking());
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  ContinuedStateGradients grads = continueConvStateVJP(
      cotangents.take(op.getState(), env.tensor(op.getState())), packing,
      *shard, static_cast<bool>(op.getInitialState()));
  cotangents.add(op.getHalo(), std::move(grads.dreceived));
  if (op.getInitialState())
    cotangents.add(op.getInitialState(), std::move(grads.dinitialState));
  return llvm::Error::success();
}

llvm::Error propagateContinueState(Operation *operation, const Environment &env,
                                   CotangentMap &cotangents,
                                   const InterpreterOptions &) {
  auto op = cast<comm::ContinueStateOp>(operation);
  const PackingInfo &packing = env.packing(op.getPacking());
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  ContinuedStateGradients grads = continueStateVJP(
      cotangents.take(op.getState(), env.tensor(op.getState())), *shard);
  cotangents.add(op.getIncoming(), std::move(grads.dreceived));
  if (op.getInitialState())
    cotangents.add(op.getInitialState(), std::move(grads.dinitialState));
  return llvm::Error::success();
}

llvm::Error propagateStateSummary(Operation *operation, const Environment &env,
                                  CotangentMap &cotangents,
                                  const InterpreterOptions &) {
  auto op = cast<comm::StateSummaryOp>(operation);
  const PackingInfo &packing = env.packing(op.getPacking());
  DeltaRuleInputs inputs = summaryInputsOf(op, env, env.tensor(op.getQ()));
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  std::optional<Tensor> dTransition = cotangents.takeIfAny(op.getTransition());
  std::optional<Tensor> dPartial = cotangents.takeIfAny(op.getPartialState());
  std::optional<DeltaRuleSummaryGradients> grads =
      stateSummaryVJP(inputs, *shard, dTransition ? &*dTransition : nullptr,
                      dPartial ? &*dPartial : nullptr);
  if (!grads)
    return llvm::Error::success();
  cotangents.add(op.getK(), std::move(grads->dk));
  cotangents.add(op.getV(), std::move(grads->dv));
  cotangents.add(op.getG(), std::move(grads->dg));
  cotangents.add(op.getBeta(), std::move(grads->dbeta));
  if (inputs.initialState)
    cotangents.add(op.getInitialState(), std::move(grads->dinitialState));
  return llvm::Error::success();
}

} // namespace

GradientRule mlir::gdn::interp::findChunkwiseRule(Operation *op) {
  return llvm::TypeSwitch<Operation *, GradientRule>(op)
      .Case<comm::ContinueConvStateOp>(
          [](auto) { return &propagateContinueConvState; })
      .Case<comm::ContinueStateOp>([](auto) { return &propagateContinueState; })
      .Case<comm::StateSummaryOp>([](auto) { return &propagateStateSummary; })
      .Default([](Operation *) -> GradientRule { return nullptr; });
}
