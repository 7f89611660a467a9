//===- DeltaRuleProblem.h - packs and the float64 recurrence for tests ----===//
//
// The inputs of the delta-rule tests (a pack of sequences with padding,
// bf16-exact q, k, v, fp32 gates and states, and cotangents), the
// token-by-token recurrence of docs/spec.md in float64 and the exact
// reverse sweep over it: shared by the forward and backward emulation tests
// and by the GPU backward driver (test/Integration/harness), which compiles
// this header with nvcc.
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

/// docs/spec.md's recurrence token by token in float64: o [tokens, hv, dv]
/// (padding rows zero) and the final states [n, hv, dk, dv].
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

/// Gradients in the kernels' layouts (dq, dk [T, H, K]; dv [T, HV, V]; dg,
/// dbeta [T, HV]; dstate [N, HV, K, V]).
template <class T> struct Gradients {
  std::vector<T> dq, dk, dv, dg, dbeta, dstate;
};

/// The cotangents: dO [T, HV, V] (bf16-exact) and the final states'.
struct Cotangents {
  std::vector<float> dO, dFinal;
};

inline Cotangents makeCotangents(const Problem &p, bool final, std::mt19937 &random) {
  std::normal_distribution<float> normal;
  Cotangents c;
  c.dO.resize(p.v.size());
  for (float &x : c.dO)
    x = round16(normal(random));
  c.dFinal.assign(p.state0.size(), 0.0f);
  if (final)
    for (float &x : c.dFinal)
      x = 0.5f * normal(random);
  return c;
}

/// The exact gradients by a reverse sweep over the recurrence of
/// docs/spec.md (S' = a S; d = beta (v - S'^T k); S = S' + k d^T;
/// o = scale S^T q), states of every token kept (small problems).
inline Gradients<double> referenceGradients(const Problem &p, const Cotangents &c,
                                     double scale) {
  const int n = static_cast<int>(p.lengths.size());
  const int dk = p.dk, dv = p.dv, group = p.hv / p.h;
  const size_t kv = size_t(dk) * dv;
  Gradients<double> r;
  r.dq.assign(size_t(p.tokens) * p.h * dk, 0.0);
  r.dk.assign(r.dq.size(), 0.0);
  r.dv.assign(size_t(p.tokens) * p.hv * dv, 0.0);
  r.dg.assign(size_t(p.tokens) * p.hv, 0.0);
  r.dbeta.assign(r.dg.size(), 0.0);
  r.dstate.assign(p.state0.size(), 0.0);
  for (int seq = 0; seq < n; ++seq)
    for (int head = 0; head < p.hv; ++head) {
      const int kh = head / group, len = p.lengths[seq];
      const size_t stateAt = (size_t(seq) * p.hv + head) * kv;
      // states[t] = S after token t - 1 (states[0] = the initial state).
      std::vector<std::vector<double>> states(len + 1, std::vector<double>(kv));
      for (size_t i = 0; i < kv; ++i)
        states[0][i] = p.state0[stateAt + i];
      auto row = [&](int t) { return size_t(p.cuPadded[seq] + t); };
      auto key = [&](const std::vector<float> &x, int t, int i) {
        return double(x[(row(t) * p.h + kh) * dk + i]);
      };
      auto value = [&](const std::vector<float> &x, int t, int j) {
        return double(x[(row(t) * p.hv + head) * dv + j]);
      };
      auto gate = [&](const std::vector<float> &x, int t) {
        return double(x[row(t) * p.hv + head]);
      };
      std::vector<double> d(dv), dd(dv);
      for (int t = 0; t < len; ++t) {
        const double alpha = std::exp(gate(p.g, t)), beta = gate(p.beta, t);
        std::vector<double> &s = states[t + 1];
        for (size_t i = 0; i < kv; ++i)
          s[i] = alpha * states[t][i];
        for (int j = 0; j < dv; ++j) {
          double sk = 0;
          for (int i = 0; i < dk; ++i)
            sk += s[size_t(i) * dv + j] * key(p.k, t, i);
          d[j] = beta * (value(p.v, t, j) - sk);
        }
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j)
            s[size_t(i) * dv + j] += key(p.k, t, i) * d[j];
      }
      std::vector<double> ds(kv);
      for (size_t i = 0; i < kv; ++i)
        ds[i] = c.dFinal[stateAt + i];
      for (int t = len - 1; t >= 0; --t) {
        const double alpha = std::exp(gate(p.g, t)), beta = gate(p.beta, t);
        const std::vector<double> &s = states[t + 1], &before = states[t];
        // o = scale S^T q.
        for (int i = 0; i < dk; ++i) {
          double dq = 0;
          for (int j = 0; j < dv; ++j) {
            const double dO = value(c.dO, t, j);
            ds[size_t(i) * dv + j] += scale * key(p.q, t, i) * dO;
            dq += scale * s[size_t(i) * dv + j] * dO;
          }
          r.dq[(row(t) * p.h + kh) * dk + i] += dq;
        }
        // S = S' + k d^T with S' = alpha * before, d = beta (v - S'^T k).
        for (int j = 0; j < dv; ++j) {
          double sk = 0, ddj = 0;
          for (int i = 0; i < dk; ++i) {
            sk += alpha * before[size_t(i) * dv + j] * key(p.k, t, i);
            ddj += ds[size_t(i) * dv + j] * key(p.k, t, i);
          }
          d[j] = beta * (value(p.v, t, j) - sk);
          dd[j] = ddj;
          r.dbeta[row(t) * p.hv + head] += ddj * (value(p.v, t, j) - sk);
          r.dv[(row(t) * p.hv + head) * dv + j] = beta * ddj;
        }
        for (int i = 0; i < dk; ++i) {
          double dki = 0;
          for (int j = 0; j < dv; ++j)
            dki += ds[size_t(i) * dv + j] * d[j] -
                   beta * alpha * before[size_t(i) * dv + j] * dd[j];
          r.dk[(row(t) * p.h + kh) * dk + i] += dki;
        }
        // dS' = dS - beta k dd^T; dg = <dS', S'>; dS_before = alpha dS'.
        double dg = 0;
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j) {
            double &x = ds[size_t(i) * dv + j];
            x -= beta * key(p.k, t, i) * dd[j];
            dg += x * alpha * before[size_t(i) * dv + j];
            x *= alpha;
          }
        r.dg[row(t) * p.hv + head] = dg;
      }
      for (size_t i = 0; i < kv; ++i)
        r.dstate[stateAt + i] = ds[i];
    }
  return r;
}

} // namespace gdn::device::testing

#endif // GDN_UNITTESTS_DELTARULEPROBLEM_H
