//===- BackwardOracle.cpp - the interpreter's VJPs on plain vectors -------===//

#include "BackwardOracle.h"

#include "gdn/Interpreter/Packing.h"
#include "gdn/Interpreter/ReferenceGradients.h"
#include "gdn/Interpreter/ReferenceKernels.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir::gdn::interp;

namespace gdn::test {
namespace {

Tensor tensor(const std::vector<double> &values, std::vector<int64_t> shape) {
  Tensor t(ElementKind::F64, std::move(shape));
  t.values() = values;
  return t;
}

} // namespace

PrologueGradients prologueGradients(const PrologueProblem &p) {
  const int64_t n = static_cast<int64_t>(p.cuSeqlens.size()) - 1;
  const int64_t tokens =
      p.cuPadded.empty() ? p.cuSeqlens.back() : p.cuPadded.back();
  const int64_t keyDim = int64_t(p.keyHeads) * p.headDimK;
  const int64_t channels = 2 * keyDim + int64_t(p.valueHeads) * p.headDimV;
  const int64_t history = p.width - 1;
  llvm::Expected<PackingInfo> packing = PackingInfo::create(
      p.cuSeqlens,
      p.cuPadded.empty() ? std::nullopt
                         : std::optional<std::vector<int64_t>>(p.cuPadded),
      tokens);
  if (!packing) {
    std::fprintf(stderr, "oracle: %s\n",
                 llvm::toString(packing.takeError()).c_str());
    std::abort();
  }
  Tensor mixed = tensor(p.mixed, {tokens, channels});
  Tensor weight = tensor(p.weight, {channels, p.width});
  Tensor bias = tensor(p.bias, {channels});
  Tensor initial = tensor(p.initialState, {n, channels, history});
  const Tensor *biasPtr = p.bias.empty() ? nullptr : &bias;
  const Tensor *initialPtr = p.initialState.empty() ? nullptr : &initial;
  ConvResult conv = causalConv1d(mixed, weight, biasPtr, *packing, initialPtr,
                                 p.silu, ElementKind::F64,
                                 /*wantFinalState=*/false, ElementKind::F32);
  SplitQkvResult split =
      splitQkv(conv.y, p.keyHeads, p.headDimK, p.valueHeads, p.headDimV);
  Tensor dq = tensor(p.dq, {tokens, p.keyHeads, p.headDimK});
  Tensor dk = tensor(p.dk, {tokens, p.keyHeads, p.headDimK});
  Tensor dv = tensor(p.dv, {tokens, p.valueHeads, p.headDimV});
  Tensor dqRaw = l2normVJP(split.q, p.normEps, dq);
  Tensor dkRaw = l2normVJP(split.k, p.normEps, dk);
  Tensor dconvY = splitQkvVJP(&dqRaw, &dkRaw, &dv, conv.y, p.keyHeads,
                              p.headDimK, p.valueHeads, p.headDimV);
  Tensor dfinal = tensor(p.dfinalState, {n, channels, history});
  ConvGradients convGrads =
      causalConv1dVJP(mixed, weight, biasPtr, *packing, initialPtr, p.silu,
                      dconvY, p.dfinalState.empty() ? nullptr : &dfinal);
  Tensor a = tensor(p.a, {tokens, p.valueHeads});
  Tensor b = tensor(p.b, {tokens, p.valueHeads});
  Tensor aLog = tensor(p.aLog, {p.valueHeads});
  Tensor dtBias = tensor(p.dtBias, {p.valueHeads});
  Tensor dg = tensor(p.dg, {tokens, p.valueHeads});
  Tensor dbeta = tensor(p.dbeta, {tokens, p.valueHeads});
  GatesGradients gateGrads =
      gatesVJP(a, b, aLog, dtBias, p.negEigval, &dg, &dbeta);
  PrologueGradients grads;
  grads.dmixed = convGrads.dx.values();
  grads.dweight = convGrads.dweight.values();
  if (biasPtr)
    grads.dbias = convGrads.dbias.values();
  if (initialPtr)
    grads.dinitialState = convGrads.dinitialState.values();
  grads.da = gateGrads.da.values();
  grads.db = gateGrads.db.values();
  grads.daLog = gateGrads.daLog.values();
  grads.ddtBias = gateGrads.ddtBias.values();
  return grads;
}

EpilogueGradients epilogueGradients(const std::vector<double> &x,
                                    const std::vector<double> &z,
                                    const std::vector<double> &weight,
                                    const std::vector<double> &dy, int headDim,
                                    double eps) {
  const int64_t rows = static_cast<int64_t>(x.size()) / headDim;
  GatedRMSNormGradients grads = gatedRMSNormVJP(
      tensor(x, {rows, headDim}), tensor(z, {rows, headDim}),
      tensor(weight, {headDim}), eps, tensor(dy, {rows, headDim}));
  return {grads.dx.values(), grads.dz.values(), grads.dweight.values()};
}

std::vector<double> l2normRows(const std::vector<double> &x, int dim, double eps) {
  const int64_t rows = static_cast<int64_t>(x.size()) / dim;
  return l2norm(tensor(x, {rows, dim}), eps).values();
}

std::vector<double> l2normRowsGradient(const std::vector<double> &x,
                                       const std::vector<double> &dy, int dim,
                                       double eps) {
  const int64_t rows = static_cast<int64_t>(x.size()) / dim;
  return l2normVJP(tensor(x, {rows, dim}), eps, tensor(dy, {rows, dim})).values();
}

} // namespace gdn::test
