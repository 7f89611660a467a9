//===- GradientOpExecution.cpp - running the gradient ops -----------------===//
//
// A backward program made by gdn-generate-backward is explicit IR: gradient
// ops (gdn.*_grad, the inverse copies) and transposed communication
// (gdn_comm.all_reduce, return_halo, ...). The interpreter runs those ops
// by calling the same VJPs its reverse sweep uses (ReferenceGradients.h and
// GradientEngine.h), so a generated backward is checked against the sweep
// with no second copy of any rule: what can differ is the program the pass
// built, not the math.
//
//===----------------------------------------------------------------------===//

#include "GradientEngine.h"

#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Interpreter/Distribution.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

namespace {

/// Binds a float64 cotangent to `value`, stored in `value`'s element type
/// (rounded once, like every stored value).
void bindStored(Environment &env, Value value, Tensor cotangent) {
  auto kind = cantFail(
      getElementKind(cast<RankedTensorType>(value.getType()).getElementType()));
  Tensor stored(kind, std::vector<int64_t>(cotangent.getShape()));
  stored.values() = std::move(cotangent.values());
  stored.roundToStorage();
  env.bind(value, std::move(stored));
}

/// A float64 tensor of zeros with `shape`, for VJPs that read only an
/// operand's shape.
Tensor zerosOfShape(std::vector<int64_t> shape) {
  return Tensor(ElementKind::F64, std::move(shape));
}

/// The run-time shapes of `a` and `b` (a cotangent and the value it belongs
/// to, or two operands that cover the same rows) must agree.
llvm::Error sameShape(Operation *op, const Environment &env, Value a,
                      StringRef aName, Value b, StringRef bName,
                      bool rowsOnly = false) {
  const Tensor &x = env.tensor(a), &y = env.tensor(b);
  const bool agree = rowsOnly ? x.getDimSize(0) == y.getDimSize(0)
                              : x.getShape() == y.getShape();
  if (agree)
    return llvm::Error::success();
  return makeOpError(op, env.getRank(),
                     llvm::formatv("{0} is {1} at run time but {2} is {3}",
                                   aName, x.describe(), bName, y.describe()));
}

using NamedValues = ArrayRef<std::pair<Value, StringRef>>;

/// Token-indexed operands (`tokens`) must cover the packing's buffer rows,
/// and per-sequence ones (`states`: states and their cotangents, where
/// present) hold one row per sequence.
llvm::Error checkPackedRows(Operation *op, const Environment &env,
                            const PackingInfo &packing, NamedValues tokens,
                            NamedValues states) {
  for (auto [value, name] : tokens) {
    const int64_t rows = env.tensor(value).getDimSize(0);
    if (rows != packing.getBufferTokens())
      return makeOpError(op, env.getRank(),
                         llvm::formatv("{0} has {1} tokens at run time but "
                                       "the packing has {2}",
                                       name, rows, packing.getBufferTokens()));
  }
  for (auto [value, name] : states) {
    if (!value)
      continue;
    const int64_t rows = env.tensor(value).getDimSize(0);
    if (rows != packing.getNumSeqs())
      return makeOpError(op, env.getRank(),
                         llvm::formatv("{0} has {1} rows at run time but the "
                                       "packing has {2} sequences (one state "
                                       "per sequence)",
                                       name, rows, packing.getNumSeqs()));
  }
  return llvm::Error::success();
}

llvm::Error executeConvGrad(CausalConv1dGradOp op, Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  if (auto error = checkPackedRows(
          op, env, packing, {{op.getX(), "x"}},
          {{op.getInitialState(), "initial_state"},
           {op.getFinalStateGrad(), "final_state_grad"}}))
    return error;
  if (auto error = sameShape(op, env, op.getYGrad(), "y_grad", op.getX(), "x"))
    return error;
  ConvGradients grads = causalConv1dVJP(
      env.tensor(op.getX()), env.tensor(op.getWeight()),
      env.optionalTensor(op.getBias()), packing,
      env.optionalTensor(op.getInitialState()),
      op.getActivation() == Activation::Silu, env.tensor(op.getYGrad()),
      env.optionalTensor(op.getFinalStateGrad()));
  bindStored(env, op.getXGrad(), std::move(grads.dx));
  bindStored(env, op.getWeightGrad(), std::move(grads.dweight));
  if (op.getBiasGrad())
    bindStored(env, op.getBiasGrad(), std::move(grads.dbias));
  if (op.getInitialStateGrad())
    bindStored(env, op.getInitialStateGrad(), std::move(grads.dinitialState));
  return llvm::Error::success();
}

llvm::Error executeGatesGrad(GatesGradOp op, Environment &env) {
  for (auto [value, name] :
       {std::pair<Value, StringRef>{op.getGGrad(), "g_grad"},
        {op.getBetaGrad(), "beta_grad"},
        {op.getB(), "b"}})
    if (auto error = sameShape(op, env, value, name, op.getA(), "a"))
      return error;
  GatesGradients grads = gatesVJP(
      env.tensor(op.getA()), env.tensor(op.getB()), env.tensor(op.getALog()),
      env.tensor(op.getDtBias()), op.getAllowNegEigval(),
      &env.tensor(op.getGGrad()), &env.tensor(op.getBetaGrad()));
  bindStored(env, op.getAGrad(), std::move(grads.da));
  bindStored(env, op.getBGrad(), std::move(grads.db));
  bindStored(env, op.getALogGrad(), std::move(grads.daLog));
  bindStored(env, op.getDtBiasGrad(), std::move(grads.ddtBias));
  return llvm::Error::success();
}

/// gdn.delta_rule_grad and the kernel op gdn-fuse lowers it to (same
/// operands and results; the kernel op's scale is explicit).
template <class GradOp>
llvm::Error executeDeltaRuleGrad(GradOp op, Environment &env, double scale) {
  const PackingInfo &packing = env.packing(op.getPacking());
  if (auto error = checkPackedRows(
          op, env, packing,
          {{op.getQ(), "q"},
           {op.getK(), "k"},
           {op.getV(), "v"},
           {op.getG(), "g"},
           {op.getBeta(), "beta"}},
          {{op.getInitialState(), "initial_state"},
           {op.getFinalStateGrad(), "final_state_grad"}}))
    return error;
  if (auto error = sameShape(op, env, op.getOGrad(), "o_grad", op.getV(), "v"))
    return error;
  DeltaRuleGradients grads =
      deltaRuleVJP(deltaRuleInputsOf(op, env, scale), env.tensor(op.getOGrad()),
                   env.optionalTensor(op.getFinalStateGrad()));
  bindStored(env, op.getQGrad(), std::move(grads.dq));
  bindStored(env, op.getKGrad(), std::move(grads.dk));
  bindStored(env, op.getVGrad(), std::move(grads.dv));
  bindStored(env, op.getGGrad(), std::move(grads.dg));
  bindStored(env, op.getBetaGrad(), std::move(grads.dbeta));
  if (op.getInitialStateGrad())
    bindStored(env, op.getInitialStateGrad(), std::move(grads.dinitialState));
  return llvm::Error::success();
}

/// gdn.gated_rmsnorm_grad and the kernel op gdn-fuse lowers it to.
template <class GradOp>
llvm::Error executeGatedRMSNormGrad(GradOp op, Environment &env) {
  if (auto error = sameShape(op, env, op.getYGrad(), "y_grad", op.getX(), "x"))
    return error;
  if (auto error = sameShape(op, env, op.getZ(), "z", op.getX(), "x"))
    return error;
  GatedRMSNormGradients grads = gatedRMSNormVJP(
      env.tensor(op.getX()), env.tensor(op.getZ()), env.tensor(op.getWeight()),
      op.getEps().convertToDouble(), env.tensor(op.getYGrad()));
  bindStored(env, op.getXGrad(), std::move(grads.dx));
  bindStored(env, op.getZGrad(), std::move(grads.dz));
  bindStored(env, op.getWeightGrad(), std::move(grads.dweight));
  return llvm::Error::success();
}

/// gdn_kernel.prologue_grad: the VJP of the fused prologue.
llvm::Error executePrologueGrad(kernel::PrologueGradOp op, Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  if (auto error = checkPackedRows(
          op, env, packing,
          {{op.getMixedQkv(), "mixed_qkv"},
           {op.getA(), "a"},
           {op.getB(), "b"},
           {op.getQGrad(), "q_grad"},
           {op.getKGrad(), "k_grad"},
           {op.getVGrad(), "v_grad"},
           {op.getGGrad(), "g_grad"},
           {op.getBetaGrad(), "beta_grad"}},
          {{op.getConvInitialState(), "conv_initial_state"},
           {op.getConvFinalStateGrad(), "conv_final_state_grad"}}))
    return error;
  PrologueGradients grads = prologueVJP(
      prologueInputsOf(op, env), env.tensor(op.getQGrad()),
      env.tensor(op.getKGrad()), env.tensor(op.getVGrad()),
      &env.tensor(op.getGGrad()), &env.tensor(op.getBetaGrad()),
      env.optionalTensor(op.getConvFinalStateGrad()));
  bindStored(env, op.getMixedQkvGrad(), std::move(grads.conv.dx));
  bindStored(env, op.getConvWeightGrad(), std::move(grads.conv.dweight));
  if (op.getConvBias())
    bindStored(env, op.getConvBiasGrad(), std::move(grads.conv.dbias));
  if (op.getConvInitialState())
    bindStored(env, op.getConvInitialStateGrad(),
               std::move(grads.conv.dinitialState));
  bindStored(env, op.getAGrad(), std::move(grads.gates.da));
  bindStored(env, op.getBGrad(), std::move(grads.gates.db));
  bindStored(env, op.getALogGrad(), std::move(grads.gates.daLog));
  bindStored(env, op.getDtBiasGrad(), std::move(grads.gates.ddtBias));
  return llvm::Error::success();
}

llvm::Error executeLinearGrad(LinearGradOp op, Environment &env) {
  if (auto error = sameShape(op, env, op.getYGrad(), "y_grad", op.getX(), "x",
                             /*rowsOnly=*/true))
    return error;
  LinearGradients grads =
      linearVJP(env.tensor(op.getX()), env.tensor(op.getWeight()),
                env.tensor(op.getYGrad()));
  bindStored(env, op.getXGrad(), std::move(grads.dx));
  bindStored(env, op.getWeightGrad(), std::move(grads.dweight));
  return llvm::Error::success();
}

llvm::Error executeMergeQkvz(MergeQkvzOp op, Environment &env) {
  const Tensor &mixed = env.tensor(op.getMixedQkv());
  for (auto [value, name] : {std::pair<Value, StringRef>{op.getZ(), "z"},
                             {op.getB(), "b"},
                             {op.getA(), "a"}})
    if (auto error = sameShape(op, env, value, name, op.getMixedQkv(),
                               "mixed_qkv", /*rowsOnly=*/true))
      return error;
  auto zType = op.getZ().getType();
  const int64_t tokens = mixed.getDimSize(0);
  const int64_t qkvzWidth =
      cast<RankedTensorType>(op.getQkvz().getType()).getDimSize(1);
  const int64_t baWidth =
      cast<RankedTensorType>(op.getBa().getType()).getDimSize(1);
  SplitQkvzGradients merged =
      splitQkvzVJP(&mixed, &env.tensor(op.getZ()), &env.tensor(op.getB()),
                   &env.tensor(op.getA()), zerosOfShape({tokens, qkvzWidth}),
                   zerosOfShape({tokens, baWidth}), op.getKeyHeads(),
                   op.getHeadDimK(), zType.getDimSize(1), zType.getDimSize(2));
  bindStored(env, op.getQkvz(), std::move(merged.dqkvz));
  bindStored(env, op.getBa(), std::move(merged.dba));
  return llvm::Error::success();
}

llvm::Error executeMergeQkv(MergeQkvOp op, Environment &env) {
  for (auto [value, name] :
       {std::pair<Value, StringRef>{op.getK(), "k"}, {op.getV(), "v"}})
    if (auto error =
            sameShape(op, env, value, name, op.getQ(), "q", /*rowsOnly=*/true))
      return error;
  auto qType = op.getQ().getType(), vType = op.getV().getType();
  const int64_t tokens = env.tensor(op.getQ()).getDimSize(0);
  const int64_t width =
      cast<RankedTensorType>(op.getMixedQkv().getType()).getDimSize(1);
  bindStored(env, op.getMixedQkv(),
             splitQkvVJP(&env.tensor(op.getQ()), &env.tensor(op.getK()),
                         &env.tensor(op.getV()), zerosOfShape({tokens, width}),
                         qType.getDimSize(1), qType.getDimSize(2),
                         vType.getDimSize(1), vType.getDimSize(2)));
  return llvm::Error::success();
}

llvm::Error executeReplicatedToPartial(comm::ReplicatedToPartialOp op,
                                       Environment &env) {
  const Tensor &input = env.tensor(op.getInput());
  Tensor share = zerosLike(input);
  if (getRankInGroup(env, op.getGroup()) == 0)
    share.values() = input.values();
  bindStored(env, op.getResult(), std::move(share));
  return llvm::Error::success();
}

llvm::Error executeLocalUnshard(comm::LocalUnshardOp op, Environment &env) {
  const Tensor &block = env.tensor(op.getInput());
  std::vector<int64_t> shape(block.getShape().begin(), block.getShape().end());
  shape[op.getDim()] *= op.getGroup().getRanks();
  bindStored(env, op.getResult(),
             localShardVJP(block, zerosOfShape(shape), op.getDim(),
                           getRankInGroup(env, op.getGroup())));
  return llvm::Error::success();
}

llvm::Error executeStateSummaryGrad(comm::StateSummaryGradOp op,
                                    Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  const Tensor &k = env.tensor(op.getK());
  // No summary reads q (the gradient op does not take it).
  DeltaRuleInputs inputs = summaryInputsOf(op, env, /*q=*/k);
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  std::optional<DeltaRuleSummaryGradients> grads =
      stateSummaryVJP(inputs, *shard, &env.tensor(op.getTransitionGrad()),
                      &env.tensor(op.getPartialStateGrad()));
  if (!grads) {
    grads = DeltaRuleSummaryGradients{zerosLike(k), zerosLike(inputs.v),
                                      zerosLike(inputs.g),
                                      zerosLike(inputs.beta), Tensor()};
    if (inputs.initialState)
      grads->dinitialState = zerosLike(*inputs.initialState);
  }
  bindStored(env, op.getKGrad(), std::move(grads->dk));
  bindStored(env, op.getVGrad(), std::move(grads->dv));
  bindStored(env, op.getGGrad(), std::move(grads->dg));
  bindStored(env, op.getBetaGrad(), std::move(grads->dbeta));
  if (op.getInitialStateGrad())
    bindStored(env, op.getInitialStateGrad(), std::move(grads->dinitialState));
  return llvm::Error::success();
}

/// continue_conv_state_grad and continue_state_grad.
template <class Op>
llvm::Error executeContinuedStateGrad(Op op, Environment &env) {
  const PackingInfo &packing = env.packing(op.getPacking());
  Tensor dState = zerosLike(env.tensor(op.getStateGrad()));
  dState.values() = env.tensor(op.getStateGrad()).values();
  if (dState.getDimSize(0) != packing.getNumSeqs())
    return makeOpError(op, env.getRank(),
                       llvm::formatv("state_grad has {0} entries but the "
                                     "packing {1} sequences",
                                     dState.getDimSize(0),
                                     packing.getNumSeqs()));
  auto shard = shardOf(op, env, packing, op.getGroup());
  if (!shard)
    return shard.takeError();
  const bool hasInitial = static_cast<bool>(op.getInitialStateGrad());
  ContinuedStateGradients grads;
  Value received;
  if constexpr (std::is_same_v<Op, comm::ContinueConvStateGradOp>) {
    grads =
        continueConvStateVJP(std::move(dState), packing, *shard, hasInitial);
    received = op.getHaloGrad();
  } else {
    grads = continueStateVJP(std::move(dState), *shard);
    received = op.getIncomingGrad();
  }
  bindStored(env, received, std::move(grads.dreceived));
  if (hasInitial)
    bindStored(env, op.getInitialStateGrad(), std::move(grads.dinitialState));
  return llvm::Error::success();
}

/// The tensor of `value` on every rank of the group.
std::vector<const Tensor *> onEveryRank(ArrayRef<Operation *> rankOps,
                                        MutableArrayRef<Environment> envs,
                                        unsigned operand) {
  std::vector<const Tensor *> tensors;
  for (size_t rank = 0; rank < rankOps.size(); ++rank)
    tensors.push_back(&envs[rank].tensor(rankOps[rank]->getOperand(operand)));
  return tensors;
}

std::vector<Tensor> copies(ArrayRef<const Tensor *> tensors) {
  std::vector<Tensor> result;
  for (const Tensor *tensor : tensors) {
    result.push_back(zerosLike(*tensor));
    result.back().values() = tensor->values();
  }
  return result;
}

} // namespace

std::optional<llvm::Error>
mlir::gdn::interp::executeGradientOp(Operation *op, Environment &env) {
  if (auto conv = dyn_cast<CausalConv1dGradOp>(op))
    return executeConvGrad(conv, env);
  if (auto norm = dyn_cast<L2NormGradOp>(op)) {
    if (auto error =
            sameShape(op, env, norm.getYGrad(), "y_grad", norm.getX(), "x"))
      return error;
    bindStored(env, norm.getXGrad(),
               l2normVJP(env.tensor(norm.getX()),
                         norm.getEps().convertToDouble(),
                         env.tensor(norm.getYGrad())));
    return llvm::Error::success();
  }
  if (auto gates = dyn_cast<GatesGradOp>(op))
    return executeGatesGrad(gates, env);
  if (auto delta = dyn_cast<DeltaRuleGradOp>(op))
    return executeDeltaRuleGrad(delta, env, delta.getEffectiveScale());
  if (auto delta = dyn_cast<kernel::DeltaRuleGradOp>(op))
    return executeDeltaRuleGrad(delta, env, delta.getScale().convertToDouble());
  if (auto norm = dyn_cast<GatedRMSNormGradOp>(op))
    return executeGatedRMSNormGrad(norm, env);
  if (auto norm = dyn_cast<kernel::GatedRMSNormGradOp>(op))
    return executeGatedRMSNormGrad(norm, env);
  if (auto prologue = dyn_cast<kernel::PrologueGradOp>(op))
    return executePrologueGrad(prologue, env);
  if (auto linear = dyn_cast<LinearGradOp>(op))
    return executeLinearGrad(linear, env);
  if (auto merge = dyn_cast<MergeQkvzOp>(op))
    return executeMergeQkvz(merge, env);
  if (auto merge = dyn_cast<MergeQkvOp>(op))
    return executeMergeQkv(merge, env);
  if (auto partial = dyn_cast<comm::ReplicatedToPartialOp>(op))
    return executeReplicatedToPartial(partial, env);
  if (auto unshard = dyn_cast<comm::LocalUnshardOp>(op))
    return executeLocalUnshard(unshard, env);
  if (auto summary = dyn_cast<comm::StateSummaryGradOp>(op))
    return executeStateSummaryGrad(summary, env);
  if (auto conv = dyn_cast<comm::ContinueConvStateGradOp>(op))
    return executeContinuedStateGrad(conv, env);
  if (auto state = dyn_cast<comm::ContinueStateGradOp>(op))
    return executeContinuedStateGrad(state, env);
  return std::nullopt;
}

std::optional<llvm::Error> mlir::gdn::interp::executeTransposedCollective(
    ArrayRef<Operation *> rankOps, MutableArrayRef<Environment> envs) {
  Operation *op = rankOps[0];
  const size_t ranks = rankOps.size();
  if (isa<comm::AllReduceOp>(op)) {
    std::vector<const Tensor *> inputs = onEveryRank(rankOps, envs, 0);
    if (auto error = checkSameShapeOnRanks(op, inputs))
      return error;
    Tensor sum = zerosLike(*inputs[0]);
    for (const Tensor *input : inputs)
      accumulateInto(sum, *input);
    for (size_t rank = 0; rank < ranks; ++rank)
      bindStored(envs[rank], rankOps[rank]->getResult(0), sum);
    return llvm::Error::success();
  }
  if (isa<comm::ReturnHaloOp>(op)) {
    std::vector<const Tensor *> halos = onEveryRank(rankOps, envs, 0);
    if (auto error = checkSameShapeOnRanks(op, halos))
      return error;
    std::vector<Tensor> dx = copies(onEveryRank(rankOps, envs, 1));
    accumulateHaloExchangeVJP(copies(halos), dx);
    for (size_t rank = 0; rank < ranks; ++rank)
      bindStored(envs[rank], rankOps[rank]->getResult(0), std::move(dx[rank]));
    return llvm::Error::success();
  }
  if (isa<comm::ReverseStateExchangeOp>(op)) {
    std::vector<const Tensor *> transitions = onEveryRank(rankOps, envs, 1);
    std::vector<const Tensor *> partials = onEveryRank(rankOps, envs, 2);
    std::vector<const Tensor *> dIncoming = onEveryRank(rankOps, envs, 0);
    for (ArrayRef<const Tensor *> tensors : {transitions, partials, dIncoming})
      if (auto error = checkSameShapeOnRanks(op, tensors))
        return error;
    if (dIncoming[0]->getShape() != partials[0]->getShape())
      return makeOpError(op, 0,
                         "incoming_state_grad must have the partial state's "
                         "shape " +
                             partials[0]->describe());
    StateExchangeGradients grads =
        stateExchangeVJP(transitions, partials, copies(dIncoming));
    for (size_t rank = 0; rank < ranks; ++rank) {
      bindStored(envs[rank], rankOps[rank]->getResult(0),
                 std::move(grads.dtransitions[rank]));
      bindStored(envs[rank], rankOps[rank]->getResult(1),
                 std::move(grads.dpartials[rank]));
    }
    return llvm::Error::success();
  }
  if (auto reduce = dyn_cast<comm::ReduceSequenceStatesOp>(op)) {
    std::vector<const Tensor *> inputs = onEveryRank(rankOps, envs, 0);
    if (auto error = checkSameShapeOnRanks(op, inputs))
      return error;
    const PackingInfo &packing = envs[0].packing(reduce.getPacking());
    if (auto error = checkSequenceCount(op, *inputs[0], packing))
      return error;
    std::vector<Tensor> dx = gatherSequenceStatesVJP(copies(inputs), packing);
    for (size_t rank = 0; rank < ranks; ++rank)
      bindStored(envs[rank], rankOps[rank]->getResult(0), std::move(dx[rank]));
    return llvm::Error::success();
  }
  return std::nullopt;
}
