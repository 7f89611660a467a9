//===- ReferenceKernels.cpp - float64 reference of the per-token ops ------===//
//
// The conv, norms, gates, projections and splits of docs/spec.md. They are
// written for clarity first; only the projection is arranged for speed (a
// transposed weight and a row-parallel loop), because it dominates a layer.
// The delta rule lives in DeltaRule.cpp.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/ReferenceKernels.h"

#include "llvm/Support/Parallel.h"

#include <cmath>

using namespace mlir::gdn::interp;

static double silu(double x) { return x / (1.0 + std::exp(-x)); }

ConvResult mlir::gdn::interp::causalConv1d(
    const Tensor &x, const Tensor &weight, const Tensor *bias,
    const PackingInfo &packing, const Tensor *initialState, bool applySilu,
    ElementKind yKind, bool wantFinalState, ElementKind stateKind) {
  const int64_t tokens = x.getDimSize(0), channels = x.getDimSize(1);
  const int64_t width = weight.getDimSize(1), history = width - 1;
  const int64_t seqs = packing.getNumSeqs();
  ConvResult result{Tensor(yKind, {tokens, channels}), Tensor()};
  if (wantFinalState)
    result.finalState = Tensor(stateKind, {seqs, channels, history});
  const double *xs = x.getData(), *w = weight.getData();
  double *y = result.y.getData();

  for (int64_t seq = 0; seq < seqs; ++seq) {
    const int64_t begin = packing.getBegin(seq),
                  length = packing.getLength(seq);
    // Input at position `pos` (relative to the sequence start) of channel c:
    // before the start it comes from the initial state (most recent last).
    auto input = [&](int64_t pos, int64_t c) -> double {
      if (pos >= 0)
        return xs[(begin + pos) * channels + c];
      if (!initialState)
        return 0.0;
      return initialState
          ->getData()[(seq * channels + c) * history + history + pos];
    };
    for (int64_t t = 0; t < length; ++t)
      for (int64_t c = 0; c < channels; ++c) {
        double sum = bias ? bias->getData()[c] : 0.0;
        for (int64_t j = 0; j < width; ++j)
          sum += w[c * width + j] * input(t - width + 1 + j, c);
        y[(begin + t) * channels + c] = applySilu ? silu(sum) : sum;
      }
    if (wantFinalState)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t m = 0; m < history; ++m)
          result.finalState.getData()[(seq * channels + c) * history + m] =
              input(length - history + m, c);
  }
  result.y.roundToStorage();
  result.finalState.roundToStorage();
  return result;
}

Tensor mlir::gdn::interp::l2norm(const Tensor &x, double eps) {
  Tensor y(x.getKind(), std::vector<int64_t>(x.getShape()));
  const int64_t dim = x.getShape().back();
  const int64_t rows = dim == 0 ? 0 : x.getNumElements() / dim;
  for (int64_t row = 0; row < rows; ++row) {
    const double *in = x.getData() + row * dim;
    double sumSquares = 0.0;
    for (int64_t i = 0; i < dim; ++i)
      sumSquares += in[i] * in[i];
    double inverse = 1.0 / std::sqrt(sumSquares + eps);
    for (int64_t i = 0; i < dim; ++i)
      y.getData()[row * dim + i] = in[i] * inverse;
  }
  y.roundToStorage();
  return y;
}

/// softplus with the threshold docs/spec.md fixes: x itself above 20.
static double softplus(double x) {
  return x > 20.0 ? x : std::log1p(std::exp(x));
}

GatesResult mlir::gdn::interp::gates(const Tensor &a, const Tensor &b,
                                     const Tensor &aLog, const Tensor &dtBias,
                                     bool allowNegEigval,
                                     ElementKind resultKind) {
  const int64_t tokens = a.getDimSize(0), heads = a.getDimSize(1);
  GatesResult result{Tensor(resultKind, {tokens, heads}),
                     Tensor(resultKind, {tokens, heads})};
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t i = t * heads + h;
      result.g.getData()[i] = -std::exp(aLog.getData()[h]) *
                              softplus(a.getData()[i] + dtBias.getData()[h]);
      double sigmoid = 1.0 / (1.0 + std::exp(-b.getData()[i]));
      result.beta.getData()[i] = allowNegEigval ? 2.0 * sigmoid : sigmoid;
    }
  result.g.roundToStorage();
  result.beta.roundToStorage();
  return result;
}

Tensor mlir::gdn::interp::gatedRMSNorm(const Tensor &x, const Tensor &z,
                                       const Tensor &weight, double eps,
                                       ElementKind yKind) {
  Tensor y(yKind, std::vector<int64_t>(x.getShape()));
  const int64_t dim = x.getShape().back();
  const int64_t rows = dim == 0 ? 0 : x.getNumElements() / dim;
  for (int64_t row = 0; row < rows; ++row) {
    const double *in = x.getData() + row * dim;
    const double *gate = z.getData() + row * dim;
    double sumSquares = 0.0;
    for (int64_t i = 0; i < dim; ++i)
      sumSquares += in[i] * in[i];
    double inverse = 1.0 / std::sqrt(sumSquares / dim + eps);
    for (int64_t i = 0; i < dim; ++i)
      y.getData()[row * dim + i] =
          weight.getData()[i] * (in[i] * inverse) * silu(gate[i]);
  }
  y.roundToStorage();
  return y;
}

Tensor mlir::gdn::interp::linear(const Tensor &x, const Tensor &weight,
                                 std::vector<int64_t> yShape,
                                 ElementKind yKind) {
  const int64_t tokens = x.getDimSize(0);
  const int64_t out = weight.getDimSize(0), in = weight.getDimSize(1);
  Tensor y(yKind, std::move(yShape));
  // W^T, so that the inner loop runs along contiguous rows of both operands.
  std::vector<double> transposed(static_cast<size_t>(in * out));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      transposed[i * out + o] = weight.getData()[o * in + i];
  llvm::parallelFor(0, tokens, [&](size_t t) {
    const double *row = x.getData() + t * in;
    double *result = y.getData() + t * out;
    for (int64_t i = 0; i < in; ++i) {
      const double scale = row[i];
      const double *column = transposed.data() + i * out;
      for (int64_t o = 0; o < out; ++o)
        result[o] += scale * column[o];
    }
  });
  y.roundToStorage();
  return y;
}

SplitQkvzResult mlir::gdn::interp::splitQkvz(const Tensor &qkvz,
                                             const Tensor &ba, int64_t keyHeads,
                                             int64_t headDimK,
                                             int64_t valueHeads,
                                             int64_t headDimV) {
  const int64_t tokens = qkvz.getDimSize(0);
  const int64_t ratio = valueHeads / keyHeads;
  const int64_t groupWidth = 2 * headDimK + 2 * ratio * headDimV;
  const int64_t keyDim = keyHeads * headDimK, valueDim = valueHeads * headDimV;
  const int64_t channels = 2 * keyDim + valueDim;
  ElementKind kind = qkvz.getKind();
  SplitQkvzResult result{Tensor(kind, {tokens, channels}),
                         Tensor(kind, {tokens, valueHeads, headDimV}),
                         Tensor(ba.getKind(), {tokens, valueHeads}),
                         Tensor(ba.getKind(), {tokens, valueHeads})};
  for (int64_t t = 0; t < tokens; ++t) {
    const double *in = qkvz.getData() + t * qkvz.getDimSize(1);
    double *mixed = result.mixedQkv.getData() + t * channels;
    double *z = result.z.getData() + t * valueDim;
    for (int64_t group = 0; group < keyHeads; ++group) {
      const double *g = in + group * groupWidth;
      for (int64_t i = 0; i < headDimK; ++i) {
        mixed[group * headDimK + i] = g[i];
        mixed[keyDim + group * headDimK + i] = g[headDimK + i];
      }
      const int64_t groupValues = ratio * headDimV;
      for (int64_t i = 0; i < groupValues; ++i) {
        mixed[2 * keyDim + group * groupValues + i] = g[2 * headDimK + i];
        z[group * groupValues + i] = g[2 * headDimK + groupValues + i];
      }
      const double *gates =
          ba.getData() + t * 2 * valueHeads + group * 2 * ratio;
      for (int64_t j = 0; j < ratio; ++j) {
        result.b.getData()[t * valueHeads + group * ratio + j] = gates[j];
        result.a.getData()[t * valueHeads + group * ratio + j] =
            gates[ratio + j];
      }
    }
  }
  return result;
}

SplitQkvResult mlir::gdn::interp::splitQkv(const Tensor &mixed,
                                           int64_t keyHeads, int64_t headDimK,
                                           int64_t valueHeads,
                                           int64_t headDimV) {
  const int64_t tokens = mixed.getDimSize(0);
  const int64_t keyDim = keyHeads * headDimK, valueDim = valueHeads * headDimV;
  const int64_t channels = 2 * keyDim + valueDim;
  ElementKind kind = mixed.getKind();
  SplitQkvResult result{Tensor(kind, {tokens, keyHeads, headDimK}),
                        Tensor(kind, {tokens, keyHeads, headDimK}),
                        Tensor(kind, {tokens, valueHeads, headDimV})};
  for (int64_t t = 0; t < tokens; ++t) {
    const double *in = mixed.getData() + t * channels;
    std::copy(in, in + keyDim, result.q.getData() + t * keyDim);
    std::copy(in + keyDim, in + 2 * keyDim, result.k.getData() + t * keyDim);
    std::copy(in + 2 * keyDim, in + channels,
              result.v.getData() + t * valueDim);
  }
  return result;
}
