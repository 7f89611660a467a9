//===- ProjectionGradients.cpp - VJPs of the projections and splits -------===//
//
// The projection's VJP is two matrix products (the input's cotangent
// dx = W^T dy per token, the weight's dW = sum_t dy_t x_t^T); the splits
// only move elements, so their VJPs move cotangents back along the same
// index maps, written as the forward's loops with the assignments reversed.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/ReferenceGradients.h"

#include "llvm/Support/Parallel.h"

using namespace mlir::gdn::interp;

LinearGradients mlir::gdn::interp::linearVJP(const Tensor &x,
                                             const Tensor &weight,
                                             const Tensor &dy) {
  const int64_t tokens = x.getDimSize(0);
  const int64_t out = weight.getDimSize(0), in = weight.getDimSize(1);
  LinearGradients grads{zerosLike(x), zerosLike(weight)};
  const double *w = weight.getData(), *dys = dy.getData(), *xs = x.getData();
  // Rows of dx and rows of dW are independent, so both loops parallelise
  // without changing any sum's order.
  llvm::parallelFor(0, tokens, [&](size_t t) {
    double *dx = grads.dx.getData() + t * in;
    const double *dyRow = dys + t * out;
    for (int64_t o = 0; o < out; ++o) {
      const double cotangent = dyRow[o];
      const double *row = w + o * in;
      for (int64_t i = 0; i < in; ++i)
        dx[i] += cotangent * row[i];
    }
  });
  llvm::parallelFor(0, out, [&](size_t o) {
    double *dw = grads.dweight.getData() + o * in;
    for (int64_t t = 0; t < tokens; ++t) {
      const double cotangent = dys[t * out + o];
      const double *row = xs + t * in;
      for (int64_t i = 0; i < in; ++i)
        dw[i] += cotangent * row[i];
    }
  });
  return grads;
}

SplitQkvzGradients mlir::gdn::interp::splitQkvzVJP(
    const Tensor *dmixedQkv, const Tensor *dz, const Tensor *db,
    const Tensor *da, const Tensor &qkvz, const Tensor &ba, int64_t keyHeads,
    int64_t headDimK, int64_t valueHeads, int64_t headDimV) {
  const int64_t tokens = qkvz.getDimSize(0);
  const int64_t ratio = valueHeads / keyHeads;
  const int64_t groupWidth = 2 * headDimK + 2 * ratio * headDimV;
  const int64_t keyDim = keyHeads * headDimK, valueDim = valueHeads * headDimV;
  const int64_t channels = 2 * keyDim + valueDim;
  SplitQkvzGradients grads{zerosLike(qkvz), zerosLike(ba)};
  // Reads the cotangent of a result, zero when it has none.
  auto read = [](const Tensor *cotangent, int64_t index) {
    return cotangent ? cotangent->getData()[index] : 0.0;
  };
  for (int64_t t = 0; t < tokens; ++t) {
    double *dIn = grads.dqkvz.getData() + t * qkvz.getDimSize(1);
    for (int64_t group = 0; group < keyHeads; ++group) {
      double *g = dIn + group * groupWidth;
      for (int64_t i = 0; i < headDimK; ++i) {
        g[i] = read(dmixedQkv, t * channels + group * headDimK + i);
        g[headDimK + i] =
            read(dmixedQkv, t * channels + keyDim + group * headDimK + i);
      }
      const int64_t groupValues = ratio * headDimV;
      for (int64_t i = 0; i < groupValues; ++i) {
        g[2 * headDimK + i] = read(dmixedQkv, t * channels + 2 * keyDim +
                                                  group * groupValues + i);
        g[2 * headDimK + groupValues + i] =
            read(dz, t * valueDim + group * groupValues + i);
      }
      double *gates =
          grads.dba.getData() + t * 2 * valueHeads + group * 2 * ratio;
      for (int64_t j = 0; j < ratio; ++j) {
        gates[j] = read(db, t * valueHeads + group * ratio + j);
        gates[ratio + j] = read(da, t * valueHeads + group * ratio + j);
      }
    }
  }
  return grads;
}

Tensor mlir::gdn::interp::splitQkvVJP(const Tensor *dq, const Tensor *dk,
                                      const Tensor *dv, const Tensor &mixed,
                                      int64_t keyHeads, int64_t headDimK,
                                      int64_t valueHeads, int64_t headDimV) {
  const int64_t tokens = mixed.getDimSize(0);
  const int64_t keyDim = keyHeads * headDimK, valueDim = valueHeads * headDimV;
  const int64_t channels = 2 * keyDim + valueDim;
  Tensor dmixed = zerosLike(mixed);
  for (int64_t t = 0; t < tokens; ++t) {
    double *out = dmixed.getData() + t * channels;
    if (dq)
      std::copy_n(dq->getData() + t * keyDim, keyDim, out);
    if (dk)
      std::copy_n(dk->getData() + t * keyDim, keyDim, out + keyDim);
    if (dv)
      std::copy_n(dv->getData() + t * valueDim, valueDim, out + 2 * keyDim);
  }
  return dmixed;
}
