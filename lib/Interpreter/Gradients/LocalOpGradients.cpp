//===- LocalOpGradients.cpp - the reverse rule of every local op ----------===//
//
// Binds each op the interpreter runs on one rank to its VJP (the math lives
// in the other files of this folder), the way LocalOps.cpp binds ops to the
// forward kernels. The forward already checked every shape, so the rules
// read operands as they are. An op without a rule stops the sweep with a
// message naming it, even when its results carry no cotangent, so that a
// missing rule is found by the first program that contains the op.
//
//===----------------------------------------------------------------------===//

#include "GradientEngine.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

//===----------------------------------------------------------------------===//
// CotangentMap
//===----------------------------------------------------------------------===//

void CotangentMap::add(Value value, Tensor cotangent) {
  auto it = cotangents.find(value);
  if (it == cotangents.end()) {
    cotangents.try_emplace(value, std::move(cotangent));
    return;
  }
  if (it->second.getShape() != cotangent.getShape())
    llvm::report_fatal_error("gradient sweep: cotangents of one value with "
                             "shapes " +
                             llvm::Twine(it->second.describe()) + " and " +
                             cotangent.describe());
  accumulateInto(it->second, cotangent);
}

bool CotangentMap::hasAny(ValueRange values) const {
  return llvm::any_of(values,
                      [&](Value value) { return cotangents.count(value); });
}

Tensor CotangentMap::take(Value value, const Tensor &like) {
  if (std::optional<Tensor> cotangent = takeIfAny(value))
    return std::move(*cotangent);
  return zerosLike(like);
}

std::optional<Tensor> CotangentMap::takeIfAny(Value value) {
  auto it = cotangents.find(value);
  if (it == cotangents.end())
    return std::nullopt;
  Tensor cotangent = std::move(it->second);
  cotangents.erase(it);
  return cotangent;
}

llvm::Error mlir::gdn::interp::makeNoRuleError(Operation *op, int64_t rank) {
  return makeOpError(op, rank, "has no gradient rule yet");
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

Tensor
mlir::gdn::interp::scatterAlong(const Tensor &dy, const Tensor &operand,
                                unsigned dim,
                                llvm::function_ref<int64_t(int64_t)> source) {
  Tensor dx = zerosLike(operand);
  int64_t outer = 1, inner = 1;
  for (unsigned d = 0; d < dim; ++d)
    outer *= dy.getDimSize(d);
  for (int64_t d = dim + 1; d < dy.getRank(); ++d)
    inner *= dy.getDimSize(d);
  const int64_t resultExtent = dy.getDimSize(dim);
  const int64_t operandExtent = operand.getDimSize(dim);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < resultExtent; ++i) {
      const double *from = dy.getData() + (o * resultExtent + i) * inner;
      double *to = dx.getData() + (o * operandExtent + source(i)) * inner;
      for (int64_t e = 0; e < inner; ++e)
        to[e] += from[e];
    }
  return dx;
}

Tensor mlir::gdn::interp::localShardVJP(const Tensor &dy, const Tensor &input,
                                        unsigned dim, int64_t rankInGroup) {
  const int64_t first = rankInGroup * dy.getDimSize(dim);
  return scatterAlong(dy, input, dim, [&](int64_t i) { return first + i; });
}

namespace {

void propagateConv(CausalConv1dOp op, const Environment &env,
                   CotangentMap &cotangents) {
  const Tensor &x = env.tensor(op.getX());
  const Tensor *bias = env.optionalTensor(op.getBias());
  const Tensor *initial = env.optionalTensor(op.getInitialState());
  Tensor dy = cotangents.take(op.getY(), env.tensor(op.getY()));
  std::optional<Tensor> dfinal;
  if (op.getFinalState())
    dfinal = cotangents.takeIfAny(op.getFinalState());
  ConvGradients grads = causalConv1dVJP(x, env.tensor(op.getWeight()), bias,
                                        env.packing(op.getPacking()), initial,
                                        op.getActivation() == Activation::Silu,
                                        dy, dfinal ? &*dfinal : nullptr);
  cotangents.add(op.getX(), std::move(grads.dx));
  cotangents.add(op.getWeight(), std::move(grads.dweight));
  if (bias)
    cotangents.add(op.getBias(), std::move(grads.dbias));
  if (initial)
    cotangents.add(op.getInitialState(), std::move(grads.dinitialState));
}

void propagateGates(GatesOp op, const Environment &env,
                    CotangentMap &cotangents) {
  std::optional<Tensor> dg = cotangents.takeIfAny(op.getG());
  std::optional<Tensor> dbeta = cotangents.takeIfAny(op.getBeta());
  GatesGradients grads = gatesVJP(
      env.tensor(op.getA()), env.tensor(op.getB()), env.tensor(op.getALog()),
      env.tensor(op.getDtBias()), op.getAllowNegEigval(), dg ? &*dg : nullptr,
      dbeta ? &*dbeta : nullptr);
  cotangents.add(op.getA(), std::move(grads.da));
  cotangents.add(op.getB(), std::move(grads.db));
  cotangents.add(op.getALog(), std::move(grads.daLog));
  cotangents.add(op.getDtBias(), std::move(grads.ddtBias));
}

/// gdn.delta_rule and gdn_kernel.delta_rule (whose final state is optional).
template <class Op>
void propagateDeltaRule(Op op, const Environment &env, CotangentMap &cotangents,
                        double scale, Value finalState) {
  DeltaRuleInputs inputs = deltaRuleInputsOf(op, env, scale);
  Tensor dout = cotangents.take(op.getO(), env.tensor(op.getO()));
  std::optional<Tensor> dfinal;
  if (finalState)
    dfinal = cotangents.takeIfAny(finalState);
  DeltaRuleGradients grads =
      deltaRuleVJP(inputs, dout, dfinal ? &*dfinal : nullptr);
  cotangents.add(op.getQ(), std::move(grads.dq));
  cotangents.add(op.getK(), std::move(grads.dk));
  cotangents.add(op.getV(), std::move(grads.dv));
  cotangents.add(op.getG(), std::move(grads.dg));
  cotangents.add(op.getBeta(), std::move(grads.dbeta));
  if (inputs.initialState)
    cotangents.add(op.getInitialState(), std::move(grads.dinitialState));
}

/// gdn.gated_rmsnorm and gdn_kernel.gated_rmsnorm.
template <class Op>
void propagateGatedRMSNorm(Op op, const Environment &env,
                           CotangentMap &cotangents) {
  Tensor dy = cotangents.take(op.getY(), env.tensor(op.getY()));
  GatedRMSNormGradients grads = gatedRMSNormVJP(
      env.tensor(op.getX()), env.tensor(op.getZ()), env.tensor(op.getWeight()),
      op.getEps().convertToDouble(), dy);
  cotangents.add(op.getX(), std::move(grads.dx));
  cotangents.add(op.getZ(), std::move(grads.dz));
  cotangents.add(op.getWeight(), std::move(grads.dweight));
}

void propagateLinear(LinearOp op, const Environment &env,
                     CotangentMap &cotangents) {
  Tensor dy = cotangents.take(op.getY(), env.tensor(op.getY()));
  LinearGradients grads =
      linearVJP(env.tensor(op.getX()), env.tensor(op.getWeight()), dy);
  cotangents.add(op.getX(), std::move(grads.dx));
  cotangents.add(op.getWeight(), std::move(grads.dweight));
}

void propagateSplitQkvz(SplitQkvzOp op, const Environment &env,
                        CotangentMap &cotangents) {
  auto zType = op.getZ().getType();
  std::optional<Tensor> dmixed = cotangents.takeIfAny(op.getMixedQkv());
  std::optional<Tensor> dz = cotangents.takeIfAny(op.getZ());
  std::optional<Tensor> db = cotangents.takeIfAny(op.getB());
  std::optional<Tensor> da = cotangents.takeIfAny(op.getA());
  SplitQkvzGradients grads = splitQkvzVJP(
      dmixed ? &*dmixed : nullptr, dz ? &*dz : nullptr, db ? &*db : nullptr,
      da ? &*da : nullptr, env.tensor(op.getQkvz()), env.tensor(op.getBa()),
      op.getKeyHeads(), op.getHeadDimK(), zType.getDimSize(1),
      zType.getDimSize(2));
  cotangents.add(op.getQkvz(), std::move(grads.dqkvz));
  cotangents.add(op.getBa(), std::move(grads.dba));
}

void propagateSplitQkv(SplitQkvOp op, const Environment &env,
                       CotangentMap &cotangents) {
  auto qType = op.getQ().getType(), vType = op.getV().getType();
  std::optional<Tensor> dq = cotangents.takeIfAny(op.getQ());
  std::optional<Tensor> dk = cotangents.takeIfAny(op.getK());
  std::optional<Tensor> dv = cotangents.takeIfAny(op.getV());
  cotangents.add(op.getMixedQkv(),
                 splitQkvVJP(dq ? &*dq : nullptr, dk ? &*dk : nullptr,
                             dv ? &*dv : nullptr, env.tensor(op.getMixedQkv()),
                             qType.getDimSize(1), qType.getDimSize(2),
                             vType.getDimSize(1), vType.getDimSize(2)));
}

/// tensor.collapse_shape / expand_shape keep the row-major data: the
/// cotangent is the result's, read in the operand's shape.
void propagateReshape(Operation *op, const Environment &env,
                      CotangentMap &cotangents) {
  Tensor dy = cotangents.take(op->getResult(0), env.tensor(op->getResult(0)));
  Tensor dx = zerosLike(env.tensor(op->getOperand(0)));
  dx.values() = std::move(dy.values());
  cotangents.add(op->getOperand(0), std::move(dx));
}

void propagateRegroupSections(RegroupSectionsOp op, const Environment &env,
                              CotangentMap &cotangents) {
  Tensor dy = cotangents.take(op.getY(), env.tensor(op.getY()));
  std::vector<int64_t> source =
      getRegroupSources(op.getSectionSizes(), op.getGroups(), op.getInverse());
  cotangents.add(op.getX(), scatterAlong(dy, env.tensor(op.getX()), op.getDim(),
                                         [&](int64_t i) { return source[i]; }));
}

void propagateLocalShard(comm::LocalShardOp op, const Environment &env,
                         CotangentMap &cotangents) {
  Tensor dy = cotangents.take(op.getResult(), env.tensor(op.getResult()));
  cotangents.add(op.getInput(),
                 localShardVJP(dy, env.tensor(op.getInput()), op.getDim(),
                               getRankInGroup(env, op.getGroup())));
}

void propagateL2Norm(L2NormOp op, const Environment &env,
                     CotangentMap &cotangents) {
  Tensor dy = cotangents.take(op.getY(), env.tensor(op.getY()));
  cotangents.add(op.getX(), l2normVJP(env.tensor(op.getX()),
                                      op.getEps().convertToDouble(), dy));
}

void propagateGdnDeltaRule(DeltaRuleOp op, const Environment &env,
                           CotangentMap &cotangents) {
  propagateDeltaRule(op, env, cotangents, op.getEffectiveScale(),
                     op.getFinalState());
}

void propagateKernelDeltaRule(kernel::DeltaRuleOp op, const Environment &env,
                              CotangentMap &cotangents) {
  propagateDeltaRule(op, env, cotangents, op.getScale().convertToDouble(),
                     op.getFinalState());
}

/// Ops whose operands are not differentiable (offsets, packings, ranks) or
/// that have none: nothing to propagate.
void propagateNothing(Operation *, const Environment &, CotangentMap &) {}

} // namespace

GradientRule mlir::gdn::interp::findLocalRule(Operation *op) {
  return llvm::TypeSwitch<Operation *, GradientRule>(op)
      .Case<arith::ConstantOp, PackingOp, comm::RankOp, comm::LocalPackingOp>(
          [](Operation *) { return &adaptRule<Operation *, propagateNothing>; })
      .Case<CausalConv1dOp>(
          [](auto) { return &adaptRule<CausalConv1dOp, propagateConv>; })
      .Case<L2NormOp>(
          [](auto) { return &adaptRule<L2NormOp, propagateL2Norm>; })
      .Case<GatesOp>([](auto) { return &adaptRule<GatesOp, propagateGates>; })
      .Case<DeltaRuleOp>(
          [](auto) { return &adaptRule<DeltaRuleOp, propagateGdnDeltaRule>; })
      .Case<GatedRMSNormOp>([](auto) {
        return &adaptRule<GatedRMSNormOp,
                          propagateGatedRMSNorm<GatedRMSNormOp>>;
      })
      .Case<LinearOp>(
          [](auto) { return &adaptRule<LinearOp, propagateLinear>; })
      .Case<SplitQkvzOp>(
          [](auto) { return &adaptRule<SplitQkvzOp, propagateSplitQkvz>; })
      .Case<SplitQkvOp>(
          [](auto) { return &adaptRule<SplitQkvOp, propagateSplitQkv>; })
      .Case<RegroupSectionsOp>([](auto) {
        return &adaptRule<RegroupSectionsOp, propagateRegroupSections>;
      })
      .Case<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(
          [](Operation *) { return &adaptRule<Operation *, propagateReshape>; })
      .Case<kernel::DeltaRuleOp>([](auto) {
        return &adaptRule<kernel::DeltaRuleOp, propagateKernelDeltaRule>;
      })
      .Case<kernel::GatedRMSNormOp>([](auto) {
        return &adaptRule<kernel::GatedRMSNormOp,
                          propagateGatedRMSNorm<kernel::GatedRMSNormOp>>;
      })
      .Case<comm::LocalShardOp>([](auto) {
        return &adaptRule<comm::LocalShardOp, propagateLocalShard>;
      })
      .Default([](Operation *) -> GradientRule { return nullptr; });
}

llvm::Error
mlir::gdn::interp::propagateLocalOp(Operation *op, const Environment &env,
                                    CotangentMap &cotangents,
                                    const InterpreterOptions &options) {
  GradientRule rule = findLocalRule(op);
  if (!rule)
    rule = findCompositeRule(op);
  if (!rule)
    rule = findChunkwiseRule(op);
  // An op without a rule stops the sweep even when nothing depends on its
  // results, so that the first program containing it finds the gap.
  if (!rule)
    return makeNoRuleError(op, env.getRank());
  // Results nothing downstream depends on send no cotangent back.
  if (!cotangents.hasAny(op->getResults()))
    return llvm::Error::success();
  return rule(op, env, cotangents, options);
}
