//===- ConvGradient.cpp - VJP of the varlen causal conv1d -----------------===//
//
// The conv's gradient follows its forward loop tap by tap: every tap that
// read an input (a token of the same sequence, or the sequence's initial
// conv state) sends its share of the cotangent back there, and the final
// state's cotangent goes back to the raw inputs it copied. Sequences never
// exchange gradient, and padding rows, which no tap reads, get zero.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/ReferenceGradients.h"

#include <cmath>

using namespace mlir::gdn::interp;

ConvGradients mlir::gdn::interp::causalConv1dVJP(
    const Tensor &x, const Tensor &weight, const Tensor *bias,
    const PackingInfo &packing, const Tensor *initialState, bool silu,
    const Tensor &dy, const Tensor *dfinalState) {
  const int64_t channels = x.getDimSize(1);
  const int64_t width = weight.getDimSize(1), history = width - 1;
  ConvGradients grads{zerosLike(x), zerosLike(weight), Tensor(), Tensor()};
  if (bias)
    grads.dbias = zerosLike(*bias);
  if (initialState)
    grads.dinitialState = zerosLike(*initialState);
  const double *xs = x.getData(), *w = weight.getData();

  for (int64_t seq = 0; seq < packing.getNumSeqs(); ++seq) {
    const int64_t begin = packing.getBegin(seq),
                  length = packing.getLength(seq);
    // The forward's input(pos, c), and where its cotangent goes: positions
    // before the sequence start are the initial state's (most recent last),
    // or constant zeros without one.
    auto input = [&](int64_t pos, int64_t c) -> double {
      if (pos >= 0)
        return xs[(begin + pos) * channels + c];
      if (!initialState)
        return 0.0;
      return initialState
          ->getData()[(seq * channels + c) * history + history + pos];
    };
    auto addToInput = [&](int64_t pos, int64_t c, double cotangent) {
      if (pos >= 0)
        grads.dx.getData()[(begin + pos) * channels + c] += cotangent;
      else if (initialState)
        grads.dinitialState
            .getData()[(seq * channels + c) * history + history + pos] +=
            cotangent;
    };
    for (int64_t t = 0; t < length; ++t)
      for (int64_t c = 0; c < channels; ++c) {
        double pre = bias ? bias->getData()[c] : 0.0;
        for (int64_t j = 0; j < width; ++j)
          pre += w[c * width + j] * input(t - width + 1 + j, c);
        double dpre = dy.getData()[(begin + t) * channels + c];
        if (silu) {
          // silu'(x) = s (1 + x (1 - s)) with s = sigmoid(x).
          const double s = 1.0 / (1.0 + std::exp(-pre));
          dpre *= s * (1.0 + pre * (1.0 - s));
        }
        if (bias)
          grads.dbias.getData()[c] += dpre;
        for (int64_t j = 0; j < width; ++j) {
          const int64_t pos = t - width + 1 + j;
          grads.dweight.getData()[c * width + j] += dpre * input(pos, c);
          addToInput(pos, c, dpre * w[c * width + j]);
        }
      }
    if (dfinalState)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t m = 0; m < history; ++m)
          addToInput(
              length - history + m, c,
              dfinalState->getData()[(seq * channels + c) * history + m]);
  }
  return grads;
}
