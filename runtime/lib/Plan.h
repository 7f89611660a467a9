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

/// The buffers a plan addresses. `Input2` and `Input3` are the second and
/// third operands (state_exchange's partial state; reverse_state_exchange's
/// partial state and incoming-state gradient), `Output2` a second result
/// (reverse_state_exchange's partial-state gradient). `Ones` is the
/// context's constant ones (onesOffset), the operand that turns a GEMM into
/// a sum of rows.
enum class Buffer { Input, Input2, Output, Workspace, Input3, Output2, Ones };

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
/// rank's part of an all-gather / sum-reduce-scatter / sum-all-reduce over
/// the group.
struct Message {
  enum Kind { Send, Recv, AllGather, ReduceScatter, AllReduce } kind;
  Address buffer;     ///< Send/Recv: the bytes; collectives: the source
  Address result;     ///< collectives: the destination
  /// Send/Recv: message bytes; AllGather, ReduceScatter: per rank (the
  /// piece each rank contributes to or gets of the result); AllReduce: the
  /// whole tensor.
  size_t bytes = 0;
  int peer = -1;
  /// ReduceScatter and AllReduce sum in this type.
  gdn_dtype_t dtype = GDN_BF16;
};

/// Messages issued together (ncclGroupStart/End). Every rank's plan has the
/// same number of groups, in the same order, possibly empty.
struct Group {
  std::vector<Message> messages;
};

/// D[b] = op(A[b]) * op(B[b]) + (accumulate ? C[b] : 0) for b < batch,
/// row-major matrices: op(A) is m x k, op(B) is k x n, C and D are m x n.
/// A transposed A is stored k x m, a transposed B n x k. f32 or f64 for the
/// state chains; any floating-point type for sums of rows (a ones operand),
/// with fp32 accumulation for 16- and 32-bit types.
struct BatchedGemm {
  Address a, b, c, d;
  int64_t m, n, k, batch;
  size_t strideA, strideB, strideC, strideD; ///< in elements
  bool accumulate;
  gdn_dtype_t dtype;
  bool transposeA = false, transposeB = false;
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

/// The bytes of rank `rank`'s data a group delivers to the other `ranks - 1`
/// ranks, counted the same way on every backend: a send's bytes (not a
/// send to itself, as an all-to-all's own piece); an all-gather's piece
/// once per peer; a reduce-scatter's slices for the other ranks; an
/// all-reduce as a reduce-scatter then an all-gather (2 (P - 1) / P of the
/// tensor). What the cost model of mode=auto prices.
uint64_t bytesSentByGroup(const Group &group, int rank, int ranks);

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

/// The context's constant ones (Buffer::Ones): kOnes elements of 1 in each
/// floating-point type, so that a GEMM of a ones row with P stacked rows
/// sums them with one rounding (fp32 accumulation for 16- and 32-bit types).
constexpr int64_t kOnes = 4096;
/// Where `dtype`'s ones start (blocks of bf16, f16, f32, f64, 256-byte
/// aligned like the allocation).
size_t onesOffset(gdn_dtype_t dtype);
size_t onesBytes();
/// Writes the bytes of the ones buffer (the context uploads them; the
/// simulator reads them) into `image` of onesBytes().
void writeOnes(char *image);

/// Sums `count` rows of `elements` elements stored one after another at
/// `rows` into `out` (one GEMM with the ones; more, accumulating, past kOnes
/// rows). `out` may not overlap the rows.
void sumRows(Plan &plan, Address rows, int64_t count, int64_t elements,
             gdn_dtype_t dtype, Address out);

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
/// The elementwise sum over the group, the same on every rank.
bool planAllReduce(const Shape &input, const Shape &output, int ranks, int rank,
                   gdn_dtype_t dtype, Plan &plan, std::string &error);
/// The transpose of local_shard: the input as block `rank` along `dim` of
/// an output `ranks` times as long, zeros elsewhere.
bool planLocalUnshard(const Shape &input, const Shape &output, int ranks,
                      int rank, int dim, Plan &plan, std::string &error);
/// Rank 0 copies the input, every other rank writes zeros.
bool planReplicatedToPartial(const Shape &input, const Shape &output, int ranks,
                             int rank, Plan &plan, std::string &error);
/// The transpose of planHaloExchange: Input is this rank's halo gradient
/// [tokens, ...], Input2 its shard's gradient so far (`dest`); the output is
/// dest plus the halo rows of later ranks that came from this shard.
bool planReturnHalo(const Shape &haloGrad, const Shape &dest,
                    const Shape &output, int ranks, int rank, gdn_dtype_t dtype,
                    Plan &plan, std::string &error);
/// The VJP of state_exchange: Input is the transition M, Input2 the partial
/// state S, Input3 the incoming state's gradient; Output the transition's
/// gradient, Output2 the partial state's. Both chains gather, then chain
/// locally (`scan` is accepted and computes the same function).
bool planReverseStateExchange(const Shape &incomingGrad,
                              const Shape &transition, const Shape &partial,
                              const Shape &transitionGrad,
                              const Shape &partialGrad, int ranks, int rank,
                              bool scan, gdn_dtype_t dtype, Plan &plan,
                              std::string &error);

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_PLAN_H
