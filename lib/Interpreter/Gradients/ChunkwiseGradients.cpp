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

#include "gdn/Dialect/GdnComm/GdnCommDialect.h"
#include "gdn/Interpreter/Distribution.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

namespace {

llvm::Error propagateContinueConvState(Operation *operation,
                                       const Environment &env,
                                       CotangentMap &cotangents,
                                       const InterpreterOptions &) {
  auto op = cast<comm::ContinueConvStateOp>(operation);
  const PackingInfo &packing = env.packing(op.getPacking());
  const Tensor &halo = env.tensor(op.getHalo());
  const Tensor *initial = env.optionalTensor(op.getInitialState());
  const int64_t taps = halo.getDimSize(0), channels = halo.getDimSize(1);
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  Tensor dState = cotangents.take(op.getState(), env.tensor(op.getState()));
  Tensor dHalo = zerosLike(halo);
  // Every sequence but the continuing one copies its initial state.
  Tensor dInitial = dState;
  if (shard->continuing) {
    const int64_t seq = *shard->continuing;
    const int64_t first = packing.getBegin(seq);
    std::fill_n(dInitial.getData() + seq * channels * taps, channels * taps,
                0.0);
    const double *from = dState.getData() + seq * channels * taps;
    for (int64_t j = 0; j < taps; ++j) {
      const int64_t row = shard->begin - taps + j;
      for (int64_t c = 0; c < channels; ++c) {
        if (row >= first)
          dHalo.getData()[j * channels + c] += from[c * taps + j];
        else if (initial)
          dInitial
              .getData()[(seq * channels + c) * taps + taps - (first - row)] +=
              from[c * taps + j];
      }
    }
  }
  cotangents.add(op.getHalo(), std::move(dHalo));
  if (initial)
    cotangents.add(op.getInitialState(), std::move(dInitial));
  return llvm::Error::success();
}

llvm::Error propagateContinueState(Operation *operation, const Environment &env,
                                   CotangentMap &cotangents,
                                   const InterpreterOptions &) {
  auto op = cast<comm::ContinueStateOp>(operation);
  const PackingInfo &packing = env.packing(op.getPacking());
  const Tensor &incoming = env.tensor(op.getIncoming());
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  Tensor dState = cotangents.take(op.getState(), env.tensor(op.getState()));
  Tensor dIncoming = zerosLike(incoming);
  const int64_t perSequence = incoming.getNumElements();
  if (shard->continuing) {
    double *entry = dState.getData() + *shard->continuing * perSequence;
    std::copy_n(entry, perSequence, dIncoming.getData());
    // The continuing sequence ignores its initial state.
    std::fill_n(entry, perSequence, 0.0);
  }
  cotangents.add(op.getIncoming(), std::move(dIncoming));
  if (op.getInitialState())
    cotangents.add(op.getInitialState(), std::move(dState));
  return llvm::Error::success();
}

llvm::Error propagateStateSummary(Operation *operation, const Environment &env,
                                  CotangentMap &cotangents,
                                  const InterpreterOptions &) {
  auto op = cast<comm::StateSummaryOp>(operation);
  const PackingInfo &packing = env.packing(op.getPacking());
  DeltaRuleInputs inputs{env.tensor(op.getQ()),
                         env.tensor(op.getK()),
                         env.tensor(op.getV()),
                         env.tensor(op.getG()),
                         env.tensor(op.getBeta()),
                         packing,
                         env.optionalTensor(op.getInitialState()),
                         /*scale=*/1.0};
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  std::optional<Tensor> dTransition = cotangents.takeIfAny(op.getTransition());
  std::optional<Tensor> dPartial = cotangents.takeIfAny(op.getPartialState());
  // Without a leaving sequence the summary is constant (zero).
  if (!shard->leaving)
    return llvm::Error::success();
  const int64_t seq = *shard->leaving;
  const int64_t first = std::max(packing.getBegin(seq), shard->begin);
  DeltaRuleSummaryGradients grads = deltaRuleSummaryVJP(
      inputs, seq, first - shard->begin, shard->end - shard->begin,
      /*startsHere=*/packing.getBegin(seq) >= shard->begin,
      dTransition ? &*dTransition : nullptr, dPartial ? &*dPartial : nullptr);
  cotangents.add(op.getK(), std::move(grads.dk));
  cotangents.add(op.getV(), std::move(grads.dv));
  cotangents.add(op.getG(), std::move(grads.dg));
  cotangents.add(op.getBeta(), std::move(grads.dbeta));
  if (inputs.initialState)
    cotangents.add(op.getInitialState(), std::move(grads.dinitialState));
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
