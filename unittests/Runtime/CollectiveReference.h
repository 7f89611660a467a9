//===- CollectiveReference.h - the gdn_comm ops on whole tensors -*- C++ -*-===//
//
// The definitions the runtime's collectives are checked against, written on
// whole f64 tensors with no notion of plans or buffers: concatenation and
// slicing along a dimension, sums over ranks, the halo and its transpose,
// and the chunkwise-CP state chain and its reverse (after the interpreter's
// lib/Interpreter/Gradients/CollectiveGradients.cpp). Shared by the host
// tests (PlanTest.cpp, ThreadsTest.cpp) and the GPU tests (GpuTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_RUNTIME_COLLECTIVEREFERENCE_H
#define GDN_UNITTESTS_RUNTIME_COLLECTIVEREFERENCE_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <utility>
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
    if (!raw.empty()) // memcpy may not be given an empty vector's null data
      std::memcpy(raw.data(), data.data(), raw.size());
    return raw;
  }
  static Tensor fromBytes(std::vector<int64_t> dims, const std::vector<char> &raw) {
    Tensor t(std::move(dims));
    const size_t bytes = std::min(raw.size(), t.data.size() * sizeof(double));
    if (bytes > 0)
      std::memcpy(t.data.data(), raw.data(), bytes);
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

/// The elementwise sum of every rank's tensor, in rank order (all_reduce).
inline Tensor sum(const std::vector<Tensor> &parts) {
  Tensor total(parts[0].shape);
  for (const Tensor &p : parts)
    for (size_t i = 0; i < total.data.size(); ++i)
      total.data[i] += p.data[i];
  return total;
}

/// `block` as piece `i` of `P` along `dim` of a zero tensor (local_unshard).
inline Tensor unshard(const Tensor &block, size_t dim, int P, int i) {
  std::vector<int64_t> shape = block.shape;
  shape[dim] *= P;
  Tensor result(shape);
  const int64_t outer = block.outer(dim), width = block.inner(dim);
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(block.data.begin() + o * width, width,
                result.data.begin() + (o * P + i) * width);
  return result;
}

/// The `rows` buffer rows before rank r's shard, every rank's shard holding
/// shards[r].shape[0] rows (zeros before the buffer; halo_exchange).
inline Tensor halo(const std::vector<Tensor> &shards, int r, int64_t rows) {
  Tensor whole = concat(shards, 0);
  std::vector<int64_t> shape = shards[0].shape;
  shape[0] = rows;
  Tensor result(shape);
  const int64_t width = rows > 0 ? result.inner(1) : 0,
                first = r * shards[0].shape[0];
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t row = first - rows + i;
    for (int64_t c = 0; c < width && row >= 0; ++c)
      result.data[i * width + c] = whole.data[row * width + c];
  }
  return result;
}

/// return_halo: each rank's dest plus, for every row of its shard, the
/// cotangents of that row in the halos of later ranks (the transpose of
/// halo(); rows before the buffer are dropped).
inline std::vector<Tensor> returnHalo(const std::vector<Tensor> &halos,
                                      const std::vector<Tensor> &dests) {
  std::vector<Tensor> result = dests;
  const int64_t shard = dests[0].shape[0], rows = halos[0].shape[0];
  const int64_t width = shard > 0 ? dests[0].inner(1) : 0;
  for (size_t t = 0; t < halos.size(); ++t)
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t row = static_cast<int64_t>(t) * shard - rows + i;
      if (row < 0 || shard == 0)
        continue;
      const int64_t q = row / shard, local = row - q * shard;
      for (int64_t c = 0; c < width; ++c)
        result[q].data[local * width + c] += halos[t].data[i * width + c];
    }
  return result;
}

/// The VJP of chain() at M and S given each rank's dS_in: G(P) = 0,
/// G(r) = dS_in(r) + M_r^T G(r + 1); dS_r = G(r + 1) and
/// dM_r = G(r + 1) S_in(r)^T (reverse_state_exchange).
inline std::pair<std::vector<Tensor>, std::vector<Tensor>>
reverseChain(const std::vector<Tensor> &M, const std::vector<Tensor> &S,
             const std::vector<Tensor> &dIncoming) {
  const int64_t heads = S[0].shape[0], K = S[0].shape[1], V = S[0].shape[2];
  const std::vector<Tensor> incoming = chain(M, S);
  std::vector<Tensor> dM, dS;
  Tensor later({heads, K, V}); // G(r + 1)
  for (size_t r = M.size(); r-- > 0;) {
    Tensor dm({heads, K, K});
    Tensor total = dIncoming[r];
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < V; ++j) {
          const double g = later.data[(h * K + i) * V + j];
          for (int64_t l = 0; l < K; ++l) {
            dm.data[(h * K + i) * K + l] +=
                g * incoming[r].data[(h * K + l) * V + j];
            total.data[(h * K + l) * V + j] +=
                M[r].data[(h * K + i) * K + l] * g;
          }
        }
    dM.insert(dM.begin(), dm);
    dS.insert(dS.begin(), later);
    later = total;
  }
  return {dM, dS};
}

} // namespace gdnrt::reference

#endif
