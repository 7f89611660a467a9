//===- CollectiveReference.h - the gdn_comm ops on whole tensors -*- C++ -*-===//
//
// The definitions the runtime's collectives are checked against, written on
// whole f64 tensors with no notion of plans or buffers: concatenation and
// slicing along a dimension, and the chunkwise-CP state chain. Shared by the
// host tests (PlanTest.cpp) and the GPU tests (gdnrt_gpu_test.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_RUNTIME_COLLECTIVEREFERENCE_H
#define GDN_UNITTESTS_RUNTIME_COLLECTIVEREFERENCE_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

namespace gdnrt::reference {

/// A dense row-major f64 tensor.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  explicit Tensor(std::vector<int64_t> dims) : shape(std::move(dims)) {
    data.assign(count(), 0.0);
  }
  int64_t count() const {
    return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                           std::multiplies<int64_t>());
  }
  int64_t outer(size_t dim) const {
    int64_t n = 1;
    for (size_t d = 0; d < dim; ++d)
      n *= shape[d];
    return n;
  }
  int64_t inner(size_t dim) const { return count() / std::max<int64_t>(outer(dim), 1); }
  std::vector<char> bytes() const {
    std::vector<char> raw(data.size() * sizeof(double));
    std::memcpy(raw.data(), data.data(), raw.size());
    return raw;
  }
  static Tensor fromBytes(std::vector<int64_t> dims, const std::vector<char> &raw) {
    Tensor t(std::move(dims));
    std::memcpy(t.data.data(), raw.data(),
                std::min(raw.size(), t.data.size() * sizeof(double)));
    return t;
  }
};

/// Concatenation along `dim` (the definition of all_gather).
inline Tensor concat(const std::vector<Tensor> &parts, size_t dim) {
  std::vector<int64_t> shape = parts[0].shape;
  shape[dim] = 0;
  for (const Tensor &p : parts)
    shape[dim] += p.shape[dim];
  Tensor result(shape);
  const int64_t outer = parts[0].outer(dim);
  int64_t offset = 0;
  const int64_t row = result.inner(dim);
  for (const Tensor &p : parts) {
    const int64_t width = p.inner(dim);
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(p.data.begin() + o * width, width,
                  result.data.begin() + o * row + offset);
    offset += width;
  }
  return result;
}

/// Piece `i` of `P` along `dim`.
inline Tensor slice(const Tensor &t, size_t dim, int P, int i) {
  std::vector<int64_t> shape = t.shape;
  shape[dim] /= P;
  Tensor result(shape);
  const int64_t outer = t.outer(dim), width = result.inner(dim),
                row = t.inner(dim);
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(t.data.begin() + o * row + i * width, width,
                result.data.begin() + o * width);
  return result;
}

/// S_in(0) = 0, S_in(r + 1) = M_r S_in(r) + S_r per head, in f64.
inline std::vector<Tensor> chain(const std::vector<Tensor> &M,
                          const std::vector<Tensor> &S) {
  const int64_t heads = S[0].shape[0], K = S[0].shape[1], V = S[0].shape[2];
  std::vector<Tensor> incoming;
  Tensor state({heads, K, V});
  for (size_t r = 0; r < M.size(); ++r) {
    incoming.push_back(state);
    Tensor next = S[r];
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < V; ++j)
          for (int64_t l = 0; l < K; ++l)
            next.data[(h * K + i) * V + j] += M[r].data[(h * K + i) * K + l] *
                                              state.data[(h * K + l) * V + j];
    state = next;
  }
  return incoming;
}

} // namespace gdnrt::reference

#endif
