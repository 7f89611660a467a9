//===- DeltaRuleProblem.h - packs and the float64 recurrence for tests ----===//
//
// The inputs of the delta-rule emulation tests (a pack of sequences with
// padding, bf16-exact q, k, v, fp32 gates and states), the token-by-token
// recurrence of SEMANTICS.md in float64, and the helpers the forward and
// backward tests share.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_DELTARULEPROBLEM_H
#define GDN_UNITTESTS_DELTARULEPROBLEM_H

#include <cuda_bf16.h>

#include <cmath>
#include <random>
#include <vector>

namespace gdn::device::testing {

inline float round16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

/// One pack: lengths, padding after each sequence, and the model sizes.
struct Problem {
  int h, hv, dk, dv;
  std::vector<int> lengths, padding;
  bool initial;
  std::vector<int32_t> cu, cuPadded;
  int tokens = 0;
  // bf16 values as floats (exactly what the kernel reads), fp32 gates.
  std::vector<float> q, k, v, g, beta, state0;
};

inline Problem makeProblem(int h, int hv, int dk, int dv, std::vector<int> lengths,
                    std::vector<int> padding, bool initial,
                    std::mt19937 &random) {
  Problem p{h, hv, dk, dv, std::move(lengths), std::move(padding), initial};
  const int n = static_cast<int>(p.lengths.size());
  if (p.padding.empty())
    p.padding.assign(n, 0);
  p.cu.assign(n + 1, 0);
  p.cuPadded.assign(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    p.cu[i + 1] = p.cu[i] + p.lengths[i];
    p.cuPadded[i + 1] = p.cuPadded[i] + p.lengths[i] + p.padding[i];
  }
  p.tokens = p.cuPadded[n];
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  auto normalisedRows = [&](int rows, int dim) {
    std::vector<float> x(size_t(rows) * dim);
    for (int r = 0; r < rows; ++r) {
      double sum = 0;
      for (int i = 0; i < dim; ++i)
        sum += double(x[size_t(r) * dim + i] = normal(random)) *
               x[size_t(r) * dim + i];
      for (int i = 0; i < dim; ++i)
        x[size_t(r) * dim + i] =
            round16(float(x[size_t(r) * dim + i] / std::sqrt(sum + 1e-6)));
    }
    return x;
  };
  p.q = normalisedRows(p.tokens * h, dk);
  p.k = normalisedRows(p.tokens * h, dk);
  p.v.resize(size_t(p.tokens) * hv * dv);
  for (float &x : p.v)
    x = round16(normal(random));
  p.g.resize(size_t(p.tokens) * hv);
  p.beta.resize(p.g.size());
  for (size_t i = 0; i < p.g.size(); ++i) {
    p.g[i] = -0.5f * uniform(random);
    p.beta[i] = 0.02f + 0.96f * uniform(random);
  }
  p.state0.resize(size_t(n) * hv * dk * dv);
  for (float &x : p.state0)
    x = initial ? 0.5f * normal(random) : 0.0f;
  return p;
}

/// SEMANTICS.md token by token in float64: o [tokens, hv, dv] (padding rows
/// zero) and the final states [n, hv, dk, dv].
inline void recurrence(const Problem &p, double scale, std::vector<double> &o,
                std::vector<double> &final) {
  const int n = static_cast<int>(p.lengths.size());
  o.assign(size_t(p.tokens) * p.hv * p.dv, 0.0);
  final.assign(size_t(n) * p.hv * p.dk * p.dv, 0.0);
  std::vector<double> s(size_t(p.dk) * p.dv), d(p.dv);
  for (int seq = 0; seq < n; ++seq)
    for (int head = 0; head < p.hv; ++head) {
      const int kh = head / (p.hv / p.h);
      const size_t stateAt = (size_t(seq) * p.hv + head) * p.dk * p.dv;
      for (size_t i = 0; i < s.size(); ++i)
        s[i] = p.state0[stateAt + i];
      for (int t = 0; t < p.lengths[seq]; ++t) {
        const size_t row = size_t(p.cuPadded[seq] + t);
        const float *q = &p.q[(row * p.h + kh) * p.dk];
        const float *k = &p.k[(row * p.h + kh) * p.dk];
        const float *v = &p.v[(row * p.hv + head) * p.dv];
        const double alpha = std::exp(double(p.g[row * p.hv + head]));
        const double beta = p.beta[row * p.hv + head];
        for (double &x : s)
          x *= alpha;
        for (int j = 0; j < p.dv; ++j) {
          double sk = 0;
          for (int i = 0; i < p.dk; ++i)
            sk += s[size_t(i) * p.dv + j] * k[i];
          d[j] = beta * (v[j] - sk);
        }
        for (int i = 0; i < p.dk; ++i)
          for (int j = 0; j < p.dv; ++j)
            s[size_t(i) * p.dv + j] += k[i] * d[j];
        for (int j = 0; j < p.dv; ++j) {
          double sq = 0;
          for (int i = 0; i < p.dk; ++i)
            sq += s[size_t(i) * p.dv + j] * q[i];
          o[(row * p.hv + head) * p.dv + j] = scale * sq;
        }
      }
      for (size_t i = 0; i < s.size(); ++i)
        final[stateAt + i] = s[i];
    }
}

inline double relativeRms(const std::vector<float> &got,
                   const std::vector<double> &want, bool *finite) {
  double err = 0, ref = 0;
  *finite = true;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i]))
      *finite = false;
    err += (got[i] - want[i]) * (got[i] - want[i]);
    ref += want[i] * want[i];
  }
  return ref > 0 ? std::sqrt(err / ref) : std::sqrt(err);
}

/// The sequence `seq` of `p` as a pack of its own (no padding).
inline Problem alone(const Problem &p, int seq) {
  Problem one = p;
  one.lengths = {p.lengths[seq]};
  one.padding = {0};
  one.cu = {0, p.lengths[seq]};
  one.cuPadded = one.cu;
  one.tokens = p.lengths[seq];
  auto rows = [&](const std::vector<float> &x, int width) {
    const size_t from = size_t(p.cuPadded[seq]) * width;
    return std::vector<float>(x.begin() + from,
                              x.begin() + from + size_t(one.tokens) * width);
  };
  one.q = rows(p.q, p.h * p.dk);
  one.k = rows(p.k, p.h * p.dk);
  one.v = rows(p.v, p.hv * p.dv);
  one.g = rows(p.g, p.hv);
  one.beta = rows(p.beta, p.hv);
  const size_t state = size_t(p.hv) * p.dk * p.dv;
  one.state0.assign(p.state0.begin() + seq * state,
                    p.state0.begin() + (seq + 1) * state);
  return one;
}

} // namespace gdn::device::testing

#endif // GDN_UNITTESTS_DELTARULEPROBLEM_H
