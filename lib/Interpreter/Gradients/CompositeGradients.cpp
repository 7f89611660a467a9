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

#include "gdn/Dialect/Gdn/GdnOps.h"
#include "gdn/Dialect/GdnKernel/GdnKernelDialect.h"

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

  // Backward, part by part.
  Tensor dy = cotangents.take(op.getY(), env.tensor(op.getY()));
  LinearGradients out = linearVJP(v.normed, env.tensor(w.outProj), dy);
  cotangents.add(w.outProj, std::move(out.dweight));
  GatedRMSNormGradients rms =
      gatedRMSNormVJP(v.delta.o, v.z, norm, eps, out.dx);
  cotangents.add(w.norm, std::move(rms.dweight));
  DeltaRuleGradients core =
      deltaRuleVJP(v.deltaRuleInputs(packing), rms.dx, nullptr);
  GatesGradients gateGrads = gatesVJP(
      v.a, v.b, aLog, dtBias, op.getAllowNegEigval(), &core.dg, &core.dbeta);
  cotangents.add(w.aLog, std::move(gateGrads.daLog));
  cotangents.add(w.dtBias, std::move(gateGrads.ddtBias));
  Tensor dqRaw = l2normVJP(v.qkv.q, 1e-6, core.dq);
  Tensor dkRaw = l2normVJP(v.qkv.k, 1e-6, core.dk);
  Tensor dconvY = splitQkvVJP(&dqRaw, &dkRaw, &core.dv, v.conv.y, keyHeads,
                              headDimK, valueHeads, headDimV);
  ConvGradients convGrads =
      causalConv1dVJP(v.mixed, env.tensor(w.conv), nullptr, packing, nullptr,
                      /*silu=*/true, dconvY, nullptr);
  cotangents.add(w.conv, std::move(convGrads.dweight));

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
  // Forward, as executePrologue computes it: the conv output in float64.
  const Tensor &mixed = env.tensor(op.getMixedQkv());
  const Tensor &convWeight = env.tensor(op.getConvWeight());
  const Tensor *bias = env.optionalTensor(op.getConvBias());
  const Tensor *initial = env.optionalTensor(op.getConvInitialState());
  const PackingInfo &packing = env.packing(op.getPacking());
  const bool silu = op.getActivation() == Activation::Silu;
  ConvResult conv = causalConv1d(mixed, convWeight, bias, packing, initial,
                                 silu, ElementKind::F64,
                                 /*wantFinalState=*/false, ElementKind::F32);
  SplitQkvResult split = splitQkv(conv.y, op.getKeyHeads(), op.getHeadDimK(),
                                  op.getValueHeads(), op.getHeadDimV());
  const double eps = op.getL2normEps().convertToDouble();

  // Backward: the gates, then the L2 norms, the split and the conv.
  std::optional<Tensor> dg = cotangents.takeIfAny(op.getG());
  std::optional<Tensor> dbeta = cotangents.takeIfAny(op.getBeta());
  GatesGradients gateGrads = gatesVJP(
      env.tensor(op.getA()), env.tensor(op.getB()), env.tensor(op.getALog()),
      env.tensor(op.getDtBias()), op.getAllowNegEigval(), dg ? &*dg : nullptr,
      dbeta ? &*dbeta : nullptr);
  cotangents.add(op.getA(), std::move(gateGrads.da));
  cotangents.add(op.getB(), std::move(gateGrads.db));
  cotangents.add(op.getALog(), std::move(gateGrads.daLog));
  cotangents.add(op.getDtBias(), std::move(gateGrads.ddtBias));

  Tensor dq = l2normVJP(split.q, eps,
                        cotangents.take(op.getQ(), env.tensor(op.getQ())));
  Tensor dk = l2normVJP(split.k, eps,
                        cotangents.take(op.getK(), env.tensor(op.getK())));
  Tensor dv = cotangents.take(op.getV(), env.tensor(op.getV()));
  Tensor dconvY =
      splitQkvVJP(&dq, &dk, &dv, conv.y, op.getKeyHeads(), op.getHeadDimK(),
                  op.getValueHeads(), op.getHeadDimV());
  std::optional<Tensor> dfinal;
  if (op.getConvFinalState())
    dfinal = cotangents.takeIfAny(op.getConvFinalState());
  ConvGradients convGrads =
      causalConv1dVJP(mixed, convWeight, bias, packing, initial, silu, dconvY,
                      dfinal ? &*dfinal : nullptr);
  cotangents.add(op.getMixedQkv(), std::move(convGrads.dx));
  cotangents.add(op.getConvWeight(), std::move(convGrads.dweight));
  if (bias)
    cotangents.add(op.getConvBias(), std::move(convGrads.dbias));
  if (initial)
    cotangents.add(op.getConvInitialState(),
                   std::move(convGrads.dinitialState));
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

GradientRule mlir::gdn::interp::findCompositeRule(Operation *op) {
  return llvm::TypeSwitch<Operation *, GradientRule>(op)
      .Case<LayerOp>(
          [](auto) { return &adaptCompositeRule<LayerOp, propagateLayer>; })
      .Case<kernel::PrologueOp>([](auto) {
        return &adaptCompositeRule<kernel::PrologueOp, propagatePrologue>;
      })
      .Default([](Operation *) -> GradientRule { return nullptr; });
}
