//===- DeltaRule.cpp - the gated delta rule in float64 --------------------===//
//
// Two implementations of one function. The recurrence is the definition in
// docs/spec.md; the chunked (WY) form is the algorithm the GPU kernels follow,
// kept here so that each of its steps can be checked against the definition
// in float64 (they agree to ~1e-13) before it is written in CUDA.
//
// Each (sequence, value head) pair is independent and handled by one task;
// value head `hv` reads key head `hv / (HV / H)` (GQA).
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/ReferenceKernels.h"

#include "llvm/Support/Parallel.h"

#include <cmath>

using namespace mlir::gdn::interp;

namespace {
/// Dimensions and pointers shared by both implementations.
struct DeltaRuleProblem {
  explicit DeltaRuleProblem(const DeltaRuleInputs &in)
      : in(in), keyHeads(in.q.getDimSize(1)), headDimK(in.q.getDimSize(2)),
        valueHeads(in.v.getDimSize(1)), headDimV(in.v.getDimSize(2)),
        seqs(in.packing.getNumSeqs()) {}

  const double *key(int64_t row, int64_t valueHead) const {
    return in.k.getData() + (row * keyHeads + keyHeadOf(valueHead)) * headDimK;
  }
  const double *query(int64_t row, int64_t valueHead) const {
    return in.q.getData() + (row * keyHeads + keyHeadOf(valueHead)) * headDimK;
  }
  const double *value(int64_t row, int64_t valueHead) const {
    return in.v.getData() + (row * valueHeads + valueHead) * headDimV;
  }
  double decay(int64_t row, int64_t valueHead) const {
    return in.g.getData()[row * valueHeads + valueHead];
  }
  double beta(int64_t row, int64_t valueHead) const {
    return in.beta.getData()[row * valueHeads + valueHead];
  }
  int64_t keyHeadOf(int64_t valueHead) const {
    return valueHead / (valueHeads / keyHeads);
  }
  /// The starting state of (seq, head): the initial state or zero.
  std::vector<double> initialState(int64_t seq, int64_t valueHead) const {
    std::vector<double> state(static_cast<size_t>(headDimK * headDimV), 0.0);
    if (in.initialState) {
      const double *from = in.initialState->getData() +
                           (seq * valueHeads + valueHead) * headDimK * headDimV;
      std::copy(from, from + headDimK * headDimV, state.begin());
    }
    return state;
  }

  DeltaRuleResult allocate(ElementKind oKind, ElementKind stateKind) const {
    return {Tensor(oKind, {in.q.getDimSize(0), valueHeads, headDimV}),
            Tensor(stateKind, {seqs, valueHeads, headDimK, headDimV})};
  }
  void storeFinalState(DeltaRuleResult &result, int64_t seq, int64_t valueHead,
                       const std::vector<double> &state) const {
    std::copy(state.begin(), state.end(),
              result.finalState.getData() +
                  (seq * valueHeads + valueHead) * headDimK * headDimV);
  }
  double *output(DeltaRuleResult &result, int64_t row,
                 int64_t valueHead) const {
    return result.o.getData() + (row * valueHeads + valueHead) * headDimV;
  }

  const DeltaRuleInputs &in;
  const int64_t keyHeads, headDimK, valueHeads, headDimV, seqs;
};
} // namespace

DeltaRuleResult mlir::gdn::interp::deltaRuleRecurrent(const DeltaRuleInputs &in,
                                                      ElementKind oKind,
                                                      ElementKind stateKind) {
  DeltaRuleProblem p(in);
  DeltaRuleResult result = p.allocate(oKind, stateKind);
  const int64_t K = p.headDimK, V = p.headDimV;
  llvm::parallelFor(0, p.seqs * p.valueHeads, [&](size_t pair) {
    const int64_t seq = pair / p.valueHeads, head = pair % p.valueHeads;
    std::vector<double> state = p.initialState(seq, head);
    std::vector<double> predicted(V), delta(V), out(V);
    const int64_t begin = in.packing.getBegin(seq);
    for (int64_t t = 0; t < in.packing.getLength(seq); ++t) {
      const int64_t row = begin + t;
      const double alpha = std::exp(p.decay(row, head));
      const double *k = p.key(row, head), *q = p.query(row, head);
      const double *v = p.value(row, head);
      // S' = alpha S, predicted = S'^T k.
      std::fill(predicted.begin(), predicted.end(), 0.0);
      for (int64_t i = 0; i < K; ++i) {
        double *s = state.data() + i * V;
        for (int64_t j = 0; j < V; ++j) {
          s[j] *= alpha;
          predicted[j] += k[i] * s[j];
        }
      }
      const double beta = p.beta(row, head);
      for (int64_t j = 0; j < V; ++j)
        delta[j] = beta * (v[j] - predicted[j]);
      // S = S' + k delta^T, o = scale S^T q.
      std::fill(out.begin(), out.end(), 0.0);
      for (int64_t i = 0; i < K; ++i) {
        double *s = state.data() + i * V;
        for (int64_t j = 0; j < V; ++j) {
          s[j] += k[i] * delta[j];
          out[j] += q[i] * s[j];
        }
      }
      double *o = p.output(result, row, head);
      for (int64_t j = 0; j < V; ++j)
        o[j] = in.scale * out[j];
    }
    p.storeFinalState(result, seq, head, state);
  });
  result.o.roundToStorage();
  result.finalState.roundToStorage();
  return result;
}

static double dot(const double *a, const double *b, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += a[i] * b[i];
  return sum;
}

DeltaRuleResult mlir::gdn::interp::deltaRuleChunked(const DeltaRuleInputs &in,
                                                    int64_t chunkSize,
                                                    ElementKind oKind,
                                                    ElementKind stateKind) {
  DeltaRuleProblem p(in);
  DeltaRuleResult result = p.allocate(oKind, stateKind);
  const int64_t K = p.headDimK, V = p.headDimV;
  llvm::parallelFor(0, p.seqs * p.valueHeads, [&](size_t pair) {
    const int64_t seq = pair / p.valueHeads, head = pair % p.valueHeads;
    // A chunk never holds more than the sequence: size the work buffers by
    // both, so a huge chunk_size does not allocate C x C for a short sequence.
    const int64_t C =
        std::max<int64_t>(1, std::min(chunkSize, in.packing.getLength(seq)));
    std::vector<double> state = p.initialState(seq, head);
    std::vector<double> gamma(C), inverse(C * C), w(C * K), u(C * V),
        delta(C * V);
    const int64_t begin = in.packing.getBegin(seq);
    const int64_t length = in.packing.getLength(seq);
    for (int64_t start = 0; start < length; start += C) {
      const int64_t L = std::min(C, length - start), row0 = begin + start;
      // gamma_i: cumulative log decay from the chunk start through token i.
      double cumulative = 0.0;
      for (int64_t i = 0; i < L; ++i)
        gamma[i] = cumulative += p.decay(row0 + i, head);
      // T = (I + A)^-1 with A[i][j] = beta_i e^{gamma_i - gamma_j} k_i.k_j
      // (j < i), by forward substitution on the unit lower triangle.
      std::fill(inverse.begin(), inverse.end(), 0.0);
      for (int64_t i = 0; i < L; ++i) {
        inverse[i * C + i] = 1.0;
        const double beta = p.beta(row0 + i, head);
        for (int64_t m = 0; m < i; ++m) {
          const double a = beta * std::exp(gamma[i] - gamma[m]) *
                           dot(p.key(row0 + i, head), p.key(row0 + m, head), K);
          for (int64_t j = 0; j <= m; ++j)
            inverse[i * C + j] -= a * inverse[m * C + j];
        }
      }
      // W = T diag(beta e^gamma) K and U = T diag(beta) V.
      std::fill(w.begin(), w.end(), 0.0);
      std::fill(u.begin(), u.end(), 0.0);
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j <= i; ++j) {
          const double t = inverse[i * C + j] * p.beta(row0 + j, head);
          const double decayed = t * std::exp(gamma[j]);
          const double *k = p.key(row0 + j, head), *v = p.value(row0 + j, head);
          for (int64_t x = 0; x < K; ++x)
            w[i * K + x] += decayed * k[x];
          for (int64_t y = 0; y < V; ++y)
            u[i * V + y] += t * v[y];
        }
      // D = U - W S: the corrected values (the recurrence's delta_t).
      for (int64_t i = 0; i < L; ++i) {
        double *d = delta.data() + i * V;
        std::copy(u.begin() + i * V, u.begin() + (i + 1) * V, d);
        for (int64_t x = 0; x < K; ++x) {
          const double coefficient = w[i * K + x];
          const double *s = state.data() + x * V;
          for (int64_t y = 0; y < V; ++y)
            d[y] -= coefficient * s[y];
        }
      }
      // o_i = scale (e^{gamma_i} S^T q_i + sum_{j<=i} e^{gamma_i-gamma_j}
      // (q_i.k_j) D_j), from the chunk's incoming state S.
      for (int64_t i = 0; i < L; ++i) {
        const double *q = p.query(row0 + i, head);
        double *o = p.output(result, row0 + i, head);
        const double carried = std::exp(gamma[i]);
        for (int64_t x = 0; x < K; ++x) {
          const double coefficient = carried * q[x];
          const double *s = state.data() + x * V;
          for (int64_t y = 0; y < V; ++y)
            o[y] += coefficient * s[y];
        }
        for (int64_t j = 0; j <= i; ++j) {
          const double coefficient =
              std::exp(gamma[i] - gamma[j]) * dot(q, p.key(row0 + j, head), K);
          const double *d = delta.data() + j * V;
          for (int64_t y = 0; y < V; ++y)
            o[y] += coefficient * d[y];
        }
        for (int64_t y = 0; y < V; ++y)
          o[y] *= in.scale;
      }
      // S = e^{gamma_last} S + sum_j e^{gamma_last - gamma_j} k_j D_j^T.
      const double last = gamma[L - 1];
      const double carried = std::exp(last);
      for (double &s : state)
        s *= carried;
      for (int64_t j = 0; j < L; ++j) {
        const double factor = std::exp(last - gamma[j]);
        const double *k = p.key(row0 + j, head);
        const double *d = delta.data() + j * V;
        for (int64_t x = 0; x < K; ++x) {
          const double coefficient = factor * k[x];
          double *s = state.data() + x * V;
          for (int64_t y = 0; y < V; ++y)
            s[y] += coefficient * d[y];
        }
      }
    }
    p.storeFinalState(result, seq, head, state);
  });
  result.o.roundToStorage();
  result.finalState.roundToStorage();
  return result;
}

DeltaRuleSummary mlir::gdn::interp::deltaRuleSummary(const DeltaRuleInputs &in,
                                                     int64_t seq,
                                                     int64_t firstRow,
                                                     int64_t endRow,
                                                     bool startsHere,
                                                     ElementKind stateKind) {
  DeltaRuleProblem p(in);
  const int64_t K = p.headDimK, V = p.headDimV;
  DeltaRuleSummary result{Tensor(stateKind, {p.valueHeads, K, K}),
                          Tensor(stateKind, {p.valueHeads, K, V})};
  llvm::parallelFor(0, p.valueHeads, [&](size_t head) {
    // S_t = A_t S_{t-1} + beta_t k_t v_t^T and M_t = A_t M_{t-1}, with
    // A_t = exp(g_t) (I - beta_t k_t k_t^T): the recurrence of docs/spec.md
    // rewritten as an affine map of the incoming state.
    std::vector<double> state = startsHere ? p.initialState(seq, head)
                                           : std::vector<double>(K * V, 0.0);
    std::vector<double> transition(K * K, 0.0), projected(std::max(K, V));
    if (!startsHere)
      for (int64_t i = 0; i < K; ++i)
        transition[i * K + i] = 1.0;
    // m <- alpha (m - beta k (k^T m)) for an m of `columns` columns.
    auto apply = [&](std::vector<double> &m, int64_t columns, const double *k,
                     double alpha, double beta) {
      std::fill(projected.begin(), projected.begin() + columns, 0.0);
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < columns; ++j)
          projected[j] += k[i] * m[i * columns + j];
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < columns; ++j)
          m[i * columns + j] =
              alpha * (m[i * columns + j] - beta * k[i] * projected[j]);
    };
    for (int64_t row = firstRow; row < endRow; ++row) {
      const double alpha = std::exp(p.decay(row, head));
      const double beta = p.beta(row, head);
      const double *k = p.key(row, head), *v = p.value(row, head);
      apply(state, V, k, alpha, beta);
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < V; ++j)
          state[i * V + j] += beta * k[i] * v[j];
      if (!startsHere)
        apply(transition, K, k, alpha, beta);
    }
    std::copy(transition.begin(), transition.end(),
              result.transition.getData() + head * K * K);
    std::copy(state.begin(), state.end(),
              result.partial.getData() + head * K * V);
  });
  result.transition.roundToStorage();
  result.partial.roundToStorage();
  return result;
}
