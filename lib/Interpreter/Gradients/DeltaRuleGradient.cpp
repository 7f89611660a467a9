//===- DeltaRuleGradient.cpp - VJP of the gated delta rule ----------------===//
//
// The exact reverse sweep over the recurrence of docs/spec.md, token by
// token from each sequence's last token to its first, for each (sequence,
// value head): the definition differentiated step by step, in float64. The
// chunked forward computes the same function (to rounding), so this is its
// gradient too.
//
// The sweep needs the state before every token. Storing all of them costs
// K x V per token; instead the forward pass keeps the state at the start of
// every segment of 64 tokens, and the backward pass recomputes one segment's
// states from its checkpoint before walking it backwards. The recomputation
// repeats the forward's arithmetic exactly, so the states are the same.
//
// GQA: several value heads read one key head. Their q and k cotangents are
// kept per value head and summed over the group at the end, in head order,
// so that parallel tasks never write the same memory and the result is
// deterministic (as FLA does in its backward).
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/ReferenceGradients.h"

#include "llvm/Support/Parallel.h"

#include <cmath>

using namespace mlir::gdn::interp;

namespace {
/// One token of the recurrence, on a K x V state in place:
/// S' = alpha S, p = S'^T k, d = beta (v - p), S = S' + k d^T.
void stepState(std::vector<double> &state, const double *k, const double *v,
               double alpha, double beta, int64_t K, int64_t V,
               std::vector<double> &scratch) {
  std::fill(scratch.begin(), scratch.end(), 0.0);
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < V; ++j) {
      state[i * V + j] *= alpha;
      scratch[j] += k[i] * state[i * V + j];
    }
  for (int64_t j = 0; j < V; ++j)
    scratch[j] = beta * (v[j] - scratch[j]);
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < V; ++j)
      state[i * V + j] += k[i] * scratch[j];
}
} // namespace

DeltaRuleGradients mlir::gdn::interp::deltaRuleVJP(const DeltaRuleInputs &in,
                                                   const Tensor &dout,
                                                   const Tensor *dfinalState) {
  const int64_t tokens = in.q.getDimSize(0);
  const int64_t keyHeads = in.q.getDimSize(1), K = in.q.getDimSize(2);
  const int64_t valueHeads = in.v.getDimSize(1), V = in.v.getDimSize(2);
  const int64_t ratio = valueHeads / keyHeads;
  const int64_t seqs = in.packing.getNumSeqs();
  constexpr int64_t segment = 64;

  DeltaRuleGradients grads{zerosLike(in.q), zerosLike(in.k),    zerosLike(in.v),
                           zerosLike(in.g), zerosLike(in.beta), Tensor()};
  if (in.initialState)
    grads.dinitialState = zerosLike(*in.initialState);
  Tensor dqPerValueHead(ElementKind::F64, {tokens, valueHeads, K});
  Tensor dkPerValueHead(ElementKind::F64, {tokens, valueHeads, K});

  llvm::parallelFor(0, seqs * valueHeads, [&](size_t pair) {
    const int64_t seq = pair / valueHeads, head = pair % valueHeads;
    const int64_t keyHead = head / ratio;
    const int64_t begin = in.packing.getBegin(seq);
    const int64_t length = in.packing.getLength(seq);
    auto key = [&](int64_t row) {
      return in.k.getData() + (row * keyHeads + keyHead) * K;
    };
    auto query = [&](int64_t row) {
      return in.q.getData() + (row * keyHeads + keyHead) * K;
    };
    auto value = [&](int64_t row) {
      return in.v.getData() + (row * valueHeads + head) * V;
    };
    auto at = [&](const Tensor &perHead, int64_t row) {
      return perHead.getData()[row * valueHeads + head];
    };

    std::vector<double> state(K * V, 0.0), scratch(V);
    if (in.initialState) {
      const double *from =
          in.initialState->getData() + (seq * valueHeads + head) * K * V;
      std::copy(from, from + K * V, state.begin());
    }
    // Forward: the state before tokens 0, 64, 128, ...
    const int64_t segments = (length + segment - 1) / segment;
    std::vector<double> checkpoints(segments * K * V);
    for (int64_t t = 0; t < length; ++t) {
      if (t % segment == 0)
        std::copy(state.begin(), state.end(),
                  checkpoints.begin() + (t / segment) * K * V);
      const int64_t row = begin + t;
      stepState(state, key(row), value(row), std::exp(at(in.g, row)),
                at(in.beta, row), K, V, scratch);
    }

    // dS: the cotangent of the state after the token being walked.
    std::vector<double> dS(K * V, 0.0);
    if (dfinalState) {
      const double *from =
          dfinalState->getData() + (seq * valueHeads + head) * K * V;
      std::copy(from, from + K * V, dS.begin());
    }
    std::vector<double> before(segment * K * V), decayed(K * V), p(V), d(V),
        dd(V), dp(V);
    for (int64_t s = segments - 1; s >= 0; --s) {
      const int64_t first = s * segment;
      const int64_t last = std::min(length, first + segment);
      // before[t - first] = S_{t-1}, recomputed from the checkpoint.
      std::copy(checkpoints.begin() + s * K * V,
                checkpoints.begin() + (s + 1) * K * V, state.begin());
      for (int64_t t = first; t < last; ++t) {
        std::copy(state.begin(), state.end(),
                  before.begin() + (t - first) * K * V);
        const int64_t row = begin + t;
        stepState(state, key(row), value(row), std::exp(at(in.g, row)),
                  at(in.beta, row), K, V, scratch);
      }
      for (int64_t t = last - 1; t >= first; --t) {
        const int64_t row = begin + t;
        const double *previous = before.data() + (t - first) * K * V;
        const double *k = key(row), *q = query(row), *v = value(row);
        const double *dOut = dout.getData() + (row * valueHeads + head) * V;
        const double alpha = std::exp(at(in.g, row)), beta = at(in.beta, row);
        double *dq = dqPerValueHead.getData() + (row * valueHeads + head) * K;
        double *dk = dkPerValueHead.getData() + (row * valueHeads + head) * K;
        double *dv = grads.dv.getData() + (row * valueHeads + head) * V;

        // Recompute the token: S' = alpha S_{t-1}, p = S'^T k,
        // d = beta (v - p); S_t = S' + k d^T.
        std::fill(p.begin(), p.end(), 0.0);
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) {
            decayed[i * V + j] = alpha * previous[i * V + j];
            p[j] += k[i] * decayed[i * V + j];
          }
        for (int64_t j = 0; j < V; ++j)
          d[j] = beta * (v[j] - p[j]);

        // o = scale S_t^T q: dq = scale S_t do, dS_t += scale q do^T.
        for (int64_t i = 0; i < K; ++i) {
          double sum = 0.0;
          for (int64_t j = 0; j < V; ++j) {
            sum += (decayed[i * V + j] + k[i] * d[j]) * dOut[j];
            dS[i * V + j] += in.scale * q[i] * dOut[j];
          }
          dq[i] = in.scale * sum;
        }
        // S_t = S' + k d^T: dd = dS^T k, dk = dS d, dS' = dS.
        std::fill(dd.begin(), dd.end(), 0.0);
        for (int64_t i = 0; i < K; ++i) {
          double sum = 0.0;
          for (int64_t j = 0; j < V; ++j) {
            dd[j] += dS[i * V + j] * k[i];
            sum += dS[i * V + j] * d[j];
          }
          dk[i] = sum;
        }
        // d = beta (v - p): dbeta = dd . (v - p), dv = beta dd,
        // dp = -beta dd.
        double dbeta = 0.0;
        for (int64_t j = 0; j < V; ++j) {
          dbeta += dd[j] * (v[j] - p[j]);
          dv[j] = beta * dd[j];
          dp[j] = -beta * dd[j];
        }
        grads.dbeta.getData()[row * valueHeads + head] = dbeta;
        // p = S'^T k: dS' += k dp^T, dk += S' dp.
        for (int64_t i = 0; i < K; ++i) {
          double sum = 0.0;
          for (int64_t j = 0; j < V; ++j) {
            dS[i * V + j] += k[i] * dp[j];
            sum += decayed[i * V + j] * dp[j];
          }
          dk[i] += sum;
        }
        // S' = e^g S_{t-1}: dg = sum(S' * dS'), dS_{t-1} = e^g dS'.
        double dg = 0.0;
        for (int64_t i = 0; i < K * V; ++i) {
          dg += decayed[i] * dS[i];
          dS[i] *= alpha;
        }
        grads.dg.getData()[row * valueHeads + head] = dg;
      }
    }
    if (in.initialState)
      std::copy(dS.begin(), dS.end(),
                grads.dinitialState.getData() +
                    (seq * valueHeads + head) * K * V);
  });

  // Sum the per-value-head cotangents of q and k over each GQA group.
  for (int64_t row = 0; row < tokens; ++row)
    for (int64_t head = 0; head < valueHeads; ++head) {
      const int64_t keyHead = head / ratio;
      const double *dq =
          dqPerValueHead.getData() + (row * valueHeads + head) * K;
      const double *dk =
          dkPerValueHead.getData() + (row * valueHeads + head) * K;
      double *toQ = grads.dq.getData() + (row * keyHeads + keyHead) * K;
      double *toK = grads.dk.getData() + (row * keyHeads + keyHead) * K;
      for (int64_t i = 0; i < K; ++i) {
        toQ[i] += dq[i];
        toK[i] += dk[i];
      }
    }
  return grads;
}
