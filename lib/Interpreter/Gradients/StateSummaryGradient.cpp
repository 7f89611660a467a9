//===- StateSummaryGradient.cpp - VJP of chunkwise CP's state summary -----===//
//
// A rank's summary of the sequence that leaves its shard is the recurrence
// written as an affine map of the incoming state: per row,
//
//   S <- A S + beta k v^T,   M <- A M,   A m = e^g (m - beta k (k^T m)),
//
// from S = S0 (or 0) and M = I (or M = 0 when the sequence starts in the
// shard). Its VJP walks the rows backwards. For m' = A m and a cotangent
// dm' of m', with p = k^T m and u = k^T dm':
//
//   dm    = e^g (dm' - beta k u)               (A is symmetric)
//   dg   += sum(A m * dm')                     (d(A m)/dg = A m)
//   dbeta -= e^g (u . p)
//   dk   -= e^g beta (dm' p + m u)
//
// and the update beta k v^T adds dbeta += k^T dS v, dk += beta dS v,
// dv += beta dS^T k. The pre-row states come from checkpoints every 64 rows
// recomputed forward, as in the delta rule's VJP.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/ReferenceGradients.h"

#include "llvm/Support/Parallel.h"

#include <cmath>

using namespace mlir::gdn::interp;

namespace {
/// m <- e^g (m - beta k (k^T m)) for a K x `columns` matrix.
void applyDecayedReflection(std::vector<double> &m, int64_t columns,
                            const double *k, int64_t K, double alpha,
                            double beta, std::vector<double> &scratch) {
  std::fill(scratch.begin(), scratch.begin() + columns, 0.0);
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < columns; ++j)
      scratch[j] += k[i] * m[i * columns + j];
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < columns; ++j)
      m[i * columns + j] =
          alpha * (m[i * columns + j] - beta * k[i] * scratch[j]);
}

/// The VJP of m' = A m for one row (see the file comment): updates dm in
/// place to the cotangent of m and accumulates dg, dbeta and dk.
void reflectionVJP(const double *m, std::vector<double> &dm, int64_t columns,
                   const double *k, int64_t K, double alpha, double beta,
                   double &dg, double &dbeta, double *dk,
                   std::vector<double> &p, std::vector<double> &u) {
  std::fill(p.begin(), p.begin() + columns, 0.0);
  std::fill(u.begin(), u.begin() + columns, 0.0);
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < columns; ++j) {
      p[j] += k[i] * m[i * columns + j];
      u[j] += k[i] * dm[i * columns + j];
    }
  double up = 0.0;
  for (int64_t j = 0; j < columns; ++j)
    up += u[j] * p[j];
  dbeta -= alpha * up;
  for (int64_t i = 0; i < K; ++i) {
    double sum = 0.0;
    for (int64_t j = 0; j < columns; ++j) {
      const double out = alpha * (m[i * columns + j] - beta * k[i] * p[j]);
      dg += out * dm[i * columns + j];
      sum += dm[i * columns + j] * p[j] + m[i * columns + j] * u[j];
    }
    dk[i] -= alpha * beta * sum;
  }
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < columns; ++j)
      dm[i * columns + j] = alpha * (dm[i * columns + j] - beta * k[i] * u[j]);
}
} // namespace

DeltaRuleSummaryGradients mlir::gdn::interp::deltaRuleSummaryVJP(
    const DeltaRuleInputs &in, int64_t seq, int64_t firstRow, int64_t endRow,
    bool startsHere, const Tensor *dtransition, const Tensor *dpartial) {
  const int64_t tokens = in.k.getDimSize(0);
  const int64_t keyHeads = in.k.getDimSize(1), K = in.k.getDimSize(2);
  const int64_t valueHeads = in.v.getDimSize(1), V = in.v.getDimSize(2);
  const int64_t ratio = valueHeads / keyHeads;
  const int64_t rows = endRow - firstRow;
  constexpr int64_t segment = 64;
  DeltaRuleSummaryGradients grads{zerosLike(in.k), zerosLike(in.v),
                                  zerosLike(in.g), zerosLike(in.beta),
                                  Tensor()};
  if (in.initialState)
    grads.dinitialState = zerosLike(*in.initialState);
  // k's cotangents per value head, summed over each GQA group at the end.
  Tensor dkPerValueHead(ElementKind::F64, {tokens, valueHeads, K});
  // M = 0 when the sequence starts here: no gradient flows through it.
  const bool tracksTransition = !startsHere;

  llvm::parallelFor(0, valueHeads, [&](size_t head) {
    const int64_t keyHead = head / ratio;
    auto key = [&](int64_t row) {
      return in.k.getData() + (row * keyHeads + keyHead) * K;
    };
    auto value = [&](int64_t row) {
      return in.v.getData() + (row * valueHeads + head) * V;
    };
    auto at = [&](const Tensor &perHead, int64_t row) {
      return perHead.getData()[row * valueHeads + head];
    };
    std::vector<double> state(K * V, 0.0), transition(K * K, 0.0);
    if (startsHere && in.initialState) {
      const double *from =
          in.initialState->getData() + (seq * valueHeads + head) * K * V;
      std::copy(from, from + K * V, state.begin());
    }
    if (tracksTransition)
      for (int64_t i = 0; i < K; ++i)
        transition[i * K + i] = 1.0;
    std::vector<double> scratch(std::max(K, V));
    auto step = [&](int64_t row) {
      const double alpha = std::exp(at(in.g, row)), beta = at(in.beta, row);
      const double *k = key(row), *v = value(row);
      applyDecayedReflection(state, V, k, K, alpha, beta, scratch);
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < V; ++j)
          state[i * V + j] += beta * k[i] * v[j];
      if (tracksTransition)
        applyDecayedReflection(transition, K, k, K, alpha, beta, scratch);
    };
    // Forward: checkpoints before rows 0, 64, ... of the range.
    const int64_t segments = (rows + segment - 1) / segment;
    std::vector<double> stateCheckpoints(segments * K * V),
        transitionCheckpoints(segments * K * K);
    for (int64_t r = 0; r < rows; ++r) {
      if (r % segment == 0) {
        std::copy(state.begin(), state.end(),
                  stateCheckpoints.begin() + (r / segment) * K * V);
        std::copy(transition.begin(), transition.end(),
                  transitionCheckpoints.begin() + (r / segment) * K * K);
      }
      step(firstRow + r);
    }

    std::vector<double> dState(K * V, 0.0), dTransition(K * K, 0.0);
    if (dpartial)
      std::copy_n(dpartial->getData() + head * K * V, K * V, dState.begin());
    if (dtransition && tracksTransition)
      std::copy_n(dtransition->getData() + head * K * K, K * K,
                  dTransition.begin());
    std::vector<double> beforeState(segment * K * V),
        beforeTransition(segment * K * K), p(std::max(K, V)), u(std::max(K, V));
    for (int64_t s = segments - 1; s >= 0; --s) {
      const int64_t first = s * segment, last = std::min(rows, first + segment);
      std::copy_n(stateCheckpoints.begin() + s * K * V, K * V, state.begin());
      std::copy_n(transitionCheckpoints.begin() + s * K * K, K * K,
                  transition.begin());
      for (int64_t r = first; r < last; ++r) {
        std::copy(state.begin(), state.end(),
                  beforeState.begin() + (r - first) * K * V);
        std::copy(transition.begin(), transition.end(),
                  beforeTransition.begin() + (r - first) * K * K);
        step(firstRow + r);
      }
      for (int64_t r = last - 1; r >= first; --r) {
        const int64_t row = firstRow + r;
        const double alpha = std::exp(at(in.g, row)), beta = at(in.beta, row);
        const double *k = key(row), *v = value(row);
        double *dk = dkPerValueHead.getData() + (row * valueHeads + head) * K;
        double *dv = grads.dv.getData() + (row * valueHeads + head) * V;
        double dg = 0.0, dbeta = 0.0;
        // The update beta k v^T.
        for (int64_t i = 0; i < K; ++i) {
          double sum = 0.0;
          for (int64_t j = 0; j < V; ++j) {
            const double d = dState[i * V + j];
            dbeta += k[i] * d * v[j];
            sum += d * v[j];
            dv[j] += beta * d * k[i];
          }
          dk[i] += beta * sum;
        }
        reflectionVJP(beforeState.data() + (r - first) * K * V, dState, V, k, K,
                      alpha, beta, dg, dbeta, dk, p, u);
        if (tracksTransition)
          reflectionVJP(beforeTransition.data() + (r - first) * K * K,
                        dTransition, K, k, K, alpha, beta, dg, dbeta, dk, p, u);
        grads.dg.getData()[row * valueHeads + head] = dg;
        grads.dbeta.getData()[row * valueHeads + head] = dbeta;
      }
    }
    if (startsHere && in.initialState)
      std::copy(dState.begin(), dState.end(),
                grads.dinitialState.getData() +
                    (seq * valueHeads + head) * K * V);
  });

  for (int64_t row = firstRow; row < endRow; ++row)
    for (int64_t head = 0; head < valueHeads; ++head) {
      const double *from =
          dkPerValueHead.getData() + (row * valueHeads + head) * K;
      double *to = grads.dk.getData() + (row * keyHeads + head / ratio) * K;
      for (int64_t i = 0; i < K; ++i)
        to[i] += from[i];
    }
  return grads;
}
