//===- ChunkwiseOps.cpp - the per-rank ops of chunkwise CP ----------------===//
//
// Executes gdn_comm.local_packing, continue_conv_state, state_summary,
// continue_state and the summary's packing and initial states (and their
// gradient) on one rank, following GdnComm.td: each finds, from the global
// packing and the rank, the sequence that continues into the rank's
// contiguous shard and the one that leaves it (Distribution.h), and builds
// that rank's packing, initial states or summary.
//
//===----------------------------------------------------------------------===//

#include "Engine.h"

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Interpreter/Distribution.h"
#include "gdn/Interpreter/ReferenceKernels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

namespace {

/// `tensor` must have `expected` as its shape at run time.
llvm::Error checkShape(Operation *op, const Environment &env,
                       const Tensor &tensor, StringRef name,
                       ArrayRef<int64_t> expected) {
  if (tensor.getShape() == expected)
    return llvm::Error::success();
  Tensor reference(tensor.getKind(),
                   std::vector<int64_t>(expected.begin(), expected.end()));
  return makeOpError(op, env.getRank(),
                     llvm::formatv("{0} has shape {1} at run time but must be "
                                   "{2}",
                                   name, tensor.describe(),
                                   reference.describe()));
}

/// Per-sequence states: `initial` or zeros of `shape`.
Tensor initialOrZero(const Tensor *initial, ElementKind kind,
                     std::vector<int64_t> shape) {
  return initial ? *initial : Tensor(kind, std::move(shape));
}

ElementKind kindOf(Value value) {
  return cantFail(
      getElementKind(cast<RankedTensorType>(value.getType()).getElementType()));
}

llvm::Error executeLocalPacking(comm::LocalPackingOp op, Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  auto local = getLocalPacking(packing, *shard);
  if (!local)
    return makeOpError(op, env.getRank(), llvm::toString(local.takeError()));
  env.bind(op.getLocal(), std::move(*local));
  return llvm::Error::success();
}

llvm::Error executeContinueConvState(comm::ContinueConvStateOp op,
                                     Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  const Tensor &halo = env.tensor(op.getHalo());
  const Tensor *initial = env.optionalTensor(op.getInitialState());
  const int64_t taps = halo.getDimSize(0), channels = halo.getDimSize(1);
  const std::vector<int64_t> shape = {packing.getNumSeqs(), channels, taps};
  if (initial)
    if (auto error = checkShape(op, env, *initial, "initial_state", shape))
      return error;
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  Tensor state = initialOrZero(initial, kindOf(op.getState()), shape);
  if (shard->continuing) {
    const int64_t seq = *shard->continuing;
    const int64_t first = packing.getBegin(seq);
    double *out = state.getData() + seq * channels * taps;
    // Tap j is buffer row shard.begin - taps + j: the halo's row j when it
    // belongs to the sequence, else the sequence's initial state (most
    // recent last) or zero.
    for (int64_t j = 0; j < taps; ++j) {
      const int64_t row = shard->begin - taps + j;
      for (int64_t c = 0; c < channels; ++c) {
        double value = 0.0;
        if (row >= first)
          value = halo.getData()[j * channels + c];
        else if (initial)
          value = initial->getData()[(seq * channels + c) * taps + taps -
                                     (first - row)];
        out[c * taps + j] = value;
      }
    }
  }
  env.bind(op.getState(), std::move(state));
  return llvm::Error::success();
}

llvm::Error executeStateSummary(comm::StateSummaryOp op, Environment &env) {
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
  const int64_t rows = shard->end - shard->begin;
  const int64_t heads = inputs.v.getDimSize(1), keyDim = inputs.k.getDimSize(2);
  for (auto [tensor, name] :
       {std::pair<const Tensor *, StringRef>{&inputs.q, "q"},
        {&inputs.k, "k"},
        {&inputs.v, "v"},
        {&inputs.g, "g"},
        {&inputs.beta, "beta"}})
    if (tensor->getDimSize(0) != rows)
      return makeOpError(op, env.getRank(),
                         llvm::formatv("{0} has {1} rows but the shard has {2}",
                                       name, tensor->getDimSize(0), rows));
  if (inputs.initialState)
    if (auto error = checkShape(
            op, env, *inputs.initialState, "initial_state",
            {packing.getNumSeqs(), heads, keyDim, inputs.v.getDimSize(2)}))
      return error;
  const ElementKind kind = kindOf(op.getPartialState());
  DeltaRuleSummary summary{
      Tensor(kind, {heads, keyDim, keyDim}),
      Tensor(kind, {heads, keyDim, inputs.v.getDimSize(2)})};
  if (shard->leaving) {
    const int64_t seq = *shard->leaving;
    const int64_t first = std::max(packing.getBegin(seq), shard->begin);
    summary = deltaRuleSummary(
        inputs, seq, first - shard->begin, rows,
        /*startsHere=*/packing.getBegin(seq) >= shard->begin, kind);
  }
  env.bind(op.getTransition(), std::move(summary.transition));
  env.bind(op.getPartialState(), std::move(summary.partial));
  return llvm::Error::success();
}

llvm::Error executeContinueState(comm::ContinueStateOp op, Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  const Tensor &incoming = env.tensor(op.getIncoming());
  const Tensor *initial = env.optionalTensor(op.getInitialState());
  std::vector<int64_t> shape = {packing.getNumSeqs()};
  shape.insert(shape.end(), incoming.getShape().begin(),
               incoming.getShape().end());
  if (initial)
    if (auto error = checkShape(op, env, *initial, "initial_state", shape))
      return error;
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  Tensor state = initialOrZero(initial, kindOf(op.getState()), shape);
  if (shard->continuing)
    std::copy(incoming.getData(),
              incoming.getData() + incoming.getNumElements(),
              state.getData() + *shard->continuing * incoming.getNumElements());
  env.bind(op.getState(), std::move(state));
  return llvm::Error::success();
}

/// Where the summary runs start the leaving sequence: its first row in the
/// shard (the shard's end when none leaves), and whether it starts there.
struct LeavingRows {
  int64_t start;
  bool leaves, startsHere;
};
LeavingRows leavingRows(const PackingInfo &packing,
                        const ChunkwiseShard &shard) {
  if (!shard.leaving)
    return {shard.end - shard.begin, false, false};
  const int64_t first = packing.getBegin(*shard.leaving);
  return {std::max(first, shard.begin) - shard.begin, true,
          first >= shard.begin};
}

llvm::Error executeSummaryPacking(comm::SummaryPackingOp op, Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  const int64_t rows = shard->end - shard->begin;
  const LeavingRows leaving = leavingRows(packing, *shard);
  auto summary =
      PackingInfo::create({0, 0, rows - leaving.start},
                          std::vector<int64_t>{0, leaving.start, rows}, rows);
  if (!summary)
    return makeOpError(op, env.getRank(), llvm::toString(summary.takeError()));
  env.bind(op.getSummary(), std::move(*summary));
  return llvm::Error::success();
}

llvm::Error executeSummaryInitialStates(comm::SummaryInitialStatesOp op,
                                        Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  const Tensor *initial = env.optionalTensor(op.getInitialState());
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  auto partialType = cast<RankedTensorType>(op.getPartial().getType());
  const int64_t heads = partialType.getDimSize(1),
                keyDim = partialType.getDimSize(2),
                valueDim = partialType.getDimSize(3);
  if (initial)
    if (auto error =
            checkShape(op, env, *initial, "initial_state",
                       {packing.getNumSeqs(), heads, keyDim, valueDim}))
      return error;
  const ElementKind kind = kindOf(op.getPartial());
  Tensor partial(kind, {2, heads, keyDim, valueDim});
  Tensor transition(kind, {2, heads, keyDim, keyDim});
  const LeavingRows leaving = leavingRows(packing, *shard);
  const int64_t entry = heads * keyDim * valueDim;
  if (leaving.startsHere && initial)
    std::copy_n(initial->getData() + *shard->leaving * entry, entry,
                partial.getData() + entry);
  if (leaving.leaves && !leaving.startsHere)
    if (const Tensor *incoming = env.optionalTensor(op.getIncoming()))
      std::copy_n(incoming->getData(), entry, partial.getData() + entry);
  if (leaving.leaves && !leaving.startsHere)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < keyDim; ++i)
        transition.getData()[((heads + h) * keyDim + i) * keyDim + i] = 1.0;
  env.bind(op.getPartial(), std::move(partial));
  env.bind(op.getTransition(), std::move(transition));
  return llvm::Error::success();
}

llvm::Error executeSummaryInitialStatesGrad(comm::SummaryInitialStatesGradOp op,
                                            Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  const Tensor &partialGrad = env.tensor(op.getPartialGrad());
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  const int64_t entry = partialGrad.getNumElements() / 2;
  std::vector<int64_t> shape(partialGrad.getShape().begin(),
                             partialGrad.getShape().end());
  shape[0] = packing.getNumSeqs();
  Tensor grad(kindOf(op.getInitialStateGrad()), shape);
  if (leavingRows(packing, *shard).startsHere)
    std::copy_n(partialGrad.getData() + entry, entry,
                grad.getData() + *shard->leaving * entry);
  env.bind(op.getInitialStateGrad(), std::move(grad));
  return llvm::Error::success();
}

} // namespace

std::optional<llvm::Error>
mlir::gdn::interp::executeChunkwiseOp(Operation *op, Environment &env) {
  if (auto local = dyn_cast<comm::LocalPackingOp>(op))
    return executeLocalPacking(local, env);
  if (auto conv = dyn_cast<comm::ContinueConvStateOp>(op))
    return executeContinueConvState(conv, env);
  if (auto summary = dyn_cast<comm::StateSummaryOp>(op))
    return executeStateSummary(summary, env);
  if (auto state = dyn_cast<comm::ContinueStateOp>(op))
    return executeContinueState(state, env);
  if (auto summary = dyn_cast<comm::SummaryPackingOp>(op))
    return executeSummaryPacking(summary, env);
  if (auto states = dyn_cast<comm::SummaryInitialStatesOp>(op))
    return executeSummaryInitialStates(states, env);
  if (auto grad = dyn_cast<comm::SummaryInitialStatesGradOp>(op))
    return executeSummaryInitialStatesGrad(grad, env);
  return std::nullopt;
}

llvm::Expected<ChunkwiseShard>
mlir::gdn::interp::shardOf(Operation *op, const Environment &env,
                           const PackingInfo &packing, comm::GroupAttr group) {
  auto shard =
      getChunkwiseShard(packing, group.getRanks(), getRankInGroup(env, group));
  if (!shard)
    return makeOpError(op, env.getRank(), llvm::toString(shard.takeError()));
  return shard;
}
