//===- CompositeGradients.cpp - VJPs of gdn.layer and the fused prologue --===//
//
// A composite op's gradient is the chain of its parts' VJPs. The rules below
// recompute the inner values exactly as the forward does (LocalOps.cpp: the
// same kernels, storage kinds and delta-rule algorithm, so a bf16 layer's
// intermediates are the rounded values its forward used), then walk the
// parts backwards. Like the forward, they compose the interpreter's own
// kernels rather than running gdn-expand-layer or gdn-fuse, so comparing a
// composite's gradients with those of its expansion checks the pass.
//
//===----------------------------------------------------------------------===//

#include "GradientEngine.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

namespace {

void propagateLayer(LayerOp op, const Environment &env,
                    CotangentMap &cotangents,
                    const InterpreterOptions &options) {
  // Forward, as executeLayer computes it.
  const Tensor &x = env.tensor(op.getX());
  const PackingInfo &packing = env.packing(op.getPacking());
  LayerOp::Weights w = op.getWeightsByRole();
  const int64_t keyHeads = op.getKeyHeads(), valueHeads = op.getValueHeads();
  const int64_t headDimK = op.getHeadDimK(), headDimV = op.getHeadDimV();
  const LayerValues v = computeLayerValues(op, env, options);
  const Tensor &aLog = env.tensor(w.aLog), &dtBias = env.tensor(w.dtBias);
  const Tensor &norm = env.tensor(w.norm);
  const double eps = op.getNormEps().convertToDouble();

  // Backward, part by part. The final states' cotangents (if any) enter
  // the delta rule's and the conv's reverse sweeps.
  std::optional<Tensor> dconvFinal, ddeltaFinal;
  if (op.getConvFinalState()) {
    dconvFinal = cotangents.takeIfAny(op.getConvFinalState());
    ddeltaFinal = cotangents.takeIfAny(op.getDeltaFinalState());
  }
  Tensor dy = cotangents.take(op.getY(), env.tensor(op.getY()));
  LinearGradients out = linearVJP(v.normed, env.tensor(w.outProj), dy);
  cotangents.add(w.outProj, std::move(out.dweight));
  GatedRMSNormGradients rms =
      gatedRMSNormVJP(v.delta.o, v.z, norm, eps, out.dx);
  cotangents.add(w.norm, std::move(rms.dweight));
  DeltaRuleGradients core = deltaRuleVJP(v.deltaRuleInputs(packing), rms.dx,
                                         ddeltaFinal ? &*ddeltaFinal : nullptr);
  if (v.deltaInitialState)
    cotangents.add(op.getDeltaInitialState(), std::move(core.dinitialState));
  GatesGradients gateGrads = gatesVJP(
      v.a, v.b, aLog, dtBias, op.getAllowNegEigval(), &core.dg, &core.dbeta);
  cotangents.add(w.aLog, std::move(gateGrads.daLog));
  cotangents.add(w.dtBias, std::move(gateGrads.ddtBias));
  Tensor dqRaw = l2normVJP(v.qkv.q, 1e-6, core.dq);
  Tensor dkRaw = l2normVJP(v.qkv.k, 1e-6, core.dk);
  Tensor dconvY = splitQkvVJP(&dqRaw, &dkRaw, &core.dv, v.conv.y, keyHeads,
                              headDimK, valueHeads, headDimV);
  ConvGradients convGrads = causalConv1dVJP(
      v.mixed, env.tensor(w.conv), nullptr, packing, v.convInitialState,
      /*silu=*/true, dconvY, dconvFinal ? &*dconvFinal : nullptr);
  cotangents.add(w.conv, std::move(convGrads.dweight));
  if (v.convInitialState)
    cotangents.add(op.getConvInitialState(),
                   std::move(convGrads.dinitialState));

  // The input projections; every one reads x.
  Tensor dx = zerosLike(x);
  auto project = [&](Value weight, const Tensor &dprojected) {
    LinearGradients grads = linearVJP(x, env.tensor(weight), dprojected);
    accumulateInto(dx, grads.dx);
    cotangents.add(weight, std::move(grads.dweight));
  };
  if (op.getProjections() == Projections::Qwen3Next) {
    SplitQkvzGradients split =
        splitQkvzVJP(&convGrads.dx, &rms.dz, &gateGrads.db, &gateGrads.da,
                     v.qkvz, v.ba, keyHeads, headDimK, valueHeads, headDimV);
    project(w.inProjQkvz, split.dqkvz);
    project(w.inProjBa, split.dba);
  } else {
    project(w.inProjQkv, convGrads.dx);
    project(w.inProjZ, rms.dz);
    project(w.inProjB, gateGrads.db);
    project(w.inProjA, gateGrads.da);
  }
  cotangents.add(op.getX(), std::move(dx));
}

void propagatePrologue(kernel::PrologueOp op, const Environment &env,
                       CotangentMap &cotangents, const InterpreterOptions &) {
  std::optional<Tensor> dg = cotangents.takeIfAny(op.getG());
  std::optional<Tensor> dbeta = cotangents.takeIfAny(op.getBeta());
  std::optional<Tensor> dfinal;
  if (op.getConvFinalState())
    dfinal = cotangents.takeIfAny(op.getConvFinalState());
  Tensor dq = cotangents.take(op.getQ(), env.tensor(op.getQ()));
  Tensor dk = cotangents.take(op.getK(), env.tensor(op.getK()));
  Tensor dv = cotangents.take(op.getV(), env.tensor(op.getV()));
  PrologueGradients grads =
      prologueVJP(prologueInputsOf(op, env), dq, dk, dv, dg ? &*dg : nullptr,
                  dbeta ? &*dbeta : nullptr, dfinal ? &*dfinal : nullptr);
  cotangents.add(op.getA(), std::move(grads.gates.da));
  cotangents.add(op.getB(), std::move(grads.gates.db));
  cotangents.add(op.getALog(), std::move(grads.gates.daLog));
  cotangents.add(op.getDtBias(), std::move(grads.gates.ddtBias));
  cotangents.add(op.getMixedQkv(), std::move(grads.conv.dx));
  cotangents.add(op.getConvWeight(), std::move(grads.conv.dweight));
  if (op.getConvBias())
    cotangents.add(op.getConvBias(), std::move(grads.conv.dbias));
  if (op.getConvInitialState())
    cotangents.add(op.getConvInitialState(),
                   std::move(grads.conv.dinitialState));
}

template <class OpTy, void (*Rule)(OpTy, const Environment &, CotangentMap &,
                                   const InterpreterOptions &)>
llvm::Error adaptCompositeRule(Operation *op, const Environment &env,
                               CotangentMap &cotangents,
                               const InterpreterOptions &options) {
  Rule(cast<OpTy>(op), env, cotangents, options);
  return llvm::Error::success();
}

} // namespace

PrologueGradients mlir::gdn::interp::prologueVJP(
    const PrologueInputs &in, const Tensor &dq, const Tensor &dk,
    const Tensor &dv, const Tensor *dg, const Tensor *dbeta,
    const Tensor *dfinalState) {
  // Forward, as executePrologue computes it: the conv output in float64.
  ConvResult conv = causalConv1d(in.mixed, in.convWeight, in.bias, in.packing,
                                 in.initialState, in.silu, ElementKind::F64,
                                 /*wantFinalState=*/false, ElementKind::F32);
  SplitQkvResult split = splitQkv(conv.y, in.keyHeads, in.headDimK,
                                  in.valueHeads, in.headDimV);
  // Backward: the gates, then the L2 norms, the split and the conv.
  PrologueGradients grads;
  grads.gates = gatesVJP(in.a, in.b, in.aLog, in.dtBias, in.allowNegEigval,
                         dg, dbeta);
  Tensor dqRaw = l2normVJP(split.q, in.l2normEps, dq);
  Tensor dkRaw = l2normVJP(split.k, in.l2normEps, dk);
  Tensor dconvY = splitQkvVJP(&dqRaw, &dkRaw, &dv, conv.y, in.keyHeads,
                              in.headDimK, in.valueHeads, in.headDimV);
  grads.conv = causalConv1dVJP(in.mixed, in.convWeight, in.bias, in.packing,
                               in.initialState, in.silu, dconvY, dfinalState);
  return grads;
}

GradientRule mlir::gdn::interp::findCompositeRule(Operation *op) {
  return llvm::TypeSwitch<Operation *, GradientRule>(op)
      .Case<LayerOp>(
          [](auto) { return &adaptCompositeRule<LayerOp, propagateLayer>; })
      .Case<kernel::PrologueOp>([](auto) {
        return &adaptCompositeRule<kernel::PrologueOp, propagatePrologue>;
      })
      .Default([](Operation *) -> GradientRule { return nullptr; });
}
