//===- Plan.h - collectives as plans of copies, messages and GEMMs -*- C++ -*-===//
//
// Every gdn_comm collective is planned on the host first: a list of strided
// copies, memsets, batched GEMMs and groups of NCCL operations over byte
// ranges of four buffers (the op's inputs, its output and its workspace).
// The executor (Executor.cpp) turns a plan into CUDA, NCCL and cuBLASLt
// calls; the unit tests run the plans of P simulated ranks on the host and
// compare with the op's definition. So the index arithmetic that decides
// where every byte goes is tested without a GPU or a second process.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_LIB_PLAN_H
#define GDN_RUNTIME_LIB_PLAN_H

#include "gdn/runtime/abi.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gdnrt {

/// The buffers a plan addresses. `Input2` is the second operand of
/// state_exchange (the partial state).
enum class Buffer { Input, Input2, Output, Workspace };

/// A byte address inside one of the plan's buffers.
struct Address {
  Buffer buffer;
  size_t offset = 0;
};

/// `height` rows of `width` bytes, rows `srcPitch` / `dstPitch` apart.
struct Copy2D {
  Address dst;
  size_t dstPitch;
  Address src;
  size_t srcPitch;
  size_t width;
  size_t height;
};

struct Memset {
  Address dst;
  size_t bytes;
};

/// One message of a group: a send to or a receive from `peer`, or this
/// rank's part of an all-gather / sum-reduce-scatter over the group.
struct Message {
  enum Kind { Send, Recv, AllGather, ReduceScatter } kind;
  Address buffer;     ///< Send/Recv: the bytes; collectives: the source
  Address result;     ///< collectives: the destination
  size_t bytes = 0;   ///< Send/Recv: message bytes; collectives: per rank
  int peer = -1;
  gdn_dtype_t dtype = GDN_BF16; ///< ReduceScatter sums in this type
};

/// Messages issued together (ncclGroupStart/End). Every rank's plan has the
/// same number of groups, in the same order, possibly empty.
struct Group {
  std::vector<Message> messages;
};

/// D[b] = A[b] * B[b] + (accumulate ? C[b] : 0) for b < batch, row-major
/// matrices: A is m x k, B is k x n, C and D are m x n. f32 or f64.
struct BatchedGemm {
  Address a, b, c, d;
  int64_t m, n, k, batch;
  size_t strideA, strideB, strideC, strideD; ///< in elements
  bool accumulate;
  gdn_dtype_t dtype;
};

struct Step {
  enum Kind { Copy, Zero, Communicate, Gemm } kind;
  Copy2D copy{};
  Memset zero{};
  Group group;
  BatchedGemm gemm{};
};

/// A plan and the workspace it needs.
struct Plan {
  std::vector<Step> steps;
  size_t workspaceBytes = 0;

  void copy(Address dst, size_t dstPitch, Address src, size_t srcPitch,
            size_t width, size_t height);
  void zero(Address dst, size_t bytes);
  Group &communicate();
  void gemm(const BatchedGemm &gemm);
};

/// A tensor's shape as the planners see it.
struct Shape {
  std::vector<int64_t> dims;
  size_t elementBytes = 0;

  static Shape of(const gdn_tensor_t &tensor);
  /// Elements of dimensions [from, to).
  int64_t product(size_t from, size_t to) const;
  size_t bytes() const { return elementBytes * product(0, dims.size()); }
};

/// Bytes of one element of `dtype`; 0 for an unknown dtype.
size_t elementBytes(gdn_dtype_t dtype);

/// Planners. Each checks that the shapes are the op's (returning false with
/// a message naming the offending value and what it should be) and fills
/// `plan` for rank `rank` of `ranks`.
bool planAllGather(const Shape &input, const Shape &output, int ranks,
                   int rank, int dim, Plan &plan, std::string &error);
bool planReduceScatter(const Shape &input, const Shape &output, int ranks,
                       int rank, int dim, gdn_dtype_t dtype, Plan &plan,
                       std::string &error);
bool planAllToAll(const Shape &input, const Shape &output, int ranks,
                  int rank, int splitDim, int concatDim, Plan &plan,
                  std::string &error);
bool planHaloExchange(const Shape &input, const Shape &output, int ranks,
                      int rank, Plan &plan, std::string &error);
bool planLocalShard(const Shape &input, const Shape &output, int ranks,
                    int rank, int dim, Plan &plan, std::string &error);
/// `scan` selects the log-depth chain; otherwise all-gather and chain.
bool planStateExchange(const Shape &transition, const Shape &partial,
                       const Shape &incoming, int ranks, int rank, bool scan,
                       gdn_dtype_t dtype, Plan &plan, std::string &error);

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_PLAN_H
