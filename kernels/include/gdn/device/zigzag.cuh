//===- zigzag.cuh - rows between zigzag and contiguous shards ---*- CUDA
//-*-===//
//
// gdn.convert_layout between a zigzag token shard (rank r holds pieces r
// and 2P - 1 - r of every sequence's slot, cut into 2P pieces) and a
// contiguous one runs as an all-gather of the source shards (gdnrt) and a
// row selection from the gathered rows, here. Which global row a local row
// is depends on the sequences' offsets, which live on the device, so no
// host synchronisation is needed: each block finds its rows' sequences by
// bisection. The all-gather moves every rank's shard to every rank, P times
// the rows a variable-size exchange would move (docs/parallel.md).
//
// A slot that does not divide into 2P pieces is a packing error: a check
// kernel records it in the packing's status record, and the selection then
// writes NaN, like every kernel given invalid offsets.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_ZIGZAG_CUH
#define GDN_DEVICE_ZIGZAG_CUH

#include "gdn/device/chunkwise.cuh"

#include <stdint.h>

namespace gdn {
namespace device {

/// The last sequence whose slot starts at or before `row` (so a row's own
/// sequence, passing over empty ones), for valid offsets and rows inside
/// the buffer.
__device__ __forceinline__ int32_t sequenceOfRow(const PackingView &p,
                                                 int32_t row) {
  return lastStartingBefore(p, row + 1);
}

/// The global buffer row of local row `i` of `rank`'s zigzag shard.
__device__ inline int32_t zigzagGlobalRow(const PackingView &p, int32_t rank,
                                          int32_t ranks, int32_t i) {
  // Every slot is a multiple of 2P, so sequence s's rows start at
  // begin(s) / P in each rank's shard.
  const int32_t seq = sequenceOfRow(p, i * ranks);
  const int32_t begin = p.begin(seq);
  const int32_t piece = p.slot(seq) / (2 * ranks);
  const int32_t k = i - begin / ranks;
  return k < piece ? begin + rank * piece + k
                   : begin + (2 * ranks - 1 - rank) * piece + (k - piece);
}

/// Where global row `row` sits among the gathered zigzag shards
/// ([P][L rows], rank-major).
__device__ inline int64_t zigzagGatheredRow(const PackingView &p, int32_t ranks,
                                            int32_t rows, int32_t row) {
  const int32_t seq = sequenceOfRow(p, row);
  const int32_t begin = p.begin(seq);
  const int32_t piece = p.slot(seq) / (2 * ranks);
  const int32_t within = row - begin;
  const int32_t chunk = within / piece, offset = within % piece;
  const int32_t owner = chunk < ranks ? chunk : 2 * ranks - 1 - chunk;
  const int32_t local = begin / ranks + (chunk < ranks ? 0 : piece) + offset;
  return static_cast<int64_t>(owner) * rows + local;
}

struct ZigzagCheckArgs {
  PackingView global;
  gdn_status_t *status; ///< the packing's record, already written
  int32_t ranks;
};

/// Records the first sequence whose slot is no multiple of 2P (one block),
/// unless the record already holds a violation.
__device__ inline void zigzagCheckBody(const ZigzagCheckArgs &a) {
  extern __shared__ uint4 shared[];
  auto *first = reinterpret_cast<int32_t *>(shared);
  if (threadIdx.x == 0)
    *first = INT32_MAX;
  __syncthreads();
  const bool invalid = statusInvalid(a.status);
  if (!invalid)
    for (int32_t seq = threadIdx.x; seq < a.global.numSeqs; seq += blockDim.x)
      if (a.global.slot(seq) % (2 * a.ranks) != 0)
        atomicMin(first, seq);
  __syncthreads();
  if (threadIdx.x == 0 && !invalid && *first != INT32_MAX) {
    gdn_status_t record = {};
    record.code = GDN_STATUS_ZIGZAG_SLOT;
    record.index = *first;
    record.value = a.global.slot(*first);
    record.bound = 2 * a.ranks;
    *a.status = record;
    trapIfInvalid(record);
  }
}

/// Rows of a convert_layout: `out` [rows, rowBytes] of this rank's target
/// shard from `gathered`, the all-gathered source shards: with `toZigzag`
/// the natural buffer (all rows in order), else the zigzag shards of every
/// rank ([P][rows], rank-major).
struct ZigzagRowsArgs {
  PackingView global;
  const gdn_status_t *status;
  int32_t rank, ranks, rows;
  bool toZigzag;
  const void *gathered;
  void *out;
  int64_t rowBytes;
};

/// Each block copies rows with the grid's stride, `Vector` at a time.
template <typename Vector>
__device__ inline void zigzagRowsBody(const ZigzagRowsArgs &a) {
  const bool invalid = statusInvalid(a.status);
  const int64_t vectors = a.rowBytes / static_cast<int64_t>(sizeof(Vector));
  for (int32_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    Vector *to = reinterpret_cast<Vector *>(static_cast<char *>(a.out) +
                                            row * a.rowBytes);
    if (invalid) {
      // NaN in every element: all-ones bytes are a NaN of every float type.
      Vector nan;
      auto *bytes = reinterpret_cast<unsigned char *>(&nan);
      for (unsigned b = 0; b < sizeof(nan); ++b)
        bytes[b] = 0xff;
      for (int64_t v = threadIdx.x; v < vectors; v += blockDim.x)
        to[v] = nan;
      continue;
    }
    const int64_t source = a.toZigzag
                               ? zigzagGlobalRow(a.global, a.rank, a.ranks, row)
                               : zigzagGatheredRow(a.global, a.ranks, a.rows,
                                                   a.rank * a.rows + row);
    const Vector *from = reinterpret_cast<const Vector *>(
        static_cast<const char *>(a.gathered) + source * a.rowBytes);
    for (int64_t v = threadIdx.x; v < vectors; v += blockDim.x)
      to[v] = from[v];
  }
}

#ifndef GDN_DEVICE_EMULATION // host emulation runs the kernel bodies itself

constexpr unsigned kZigzagThreads = 128;

template <class Args>
__global__ void __launch_bounds__(kDerivedPackingThreads)
    zigzagCheckKernel(const __grid_constant__ Args args) {
  zigzagCheckBody(args);
}

template <typename Vector, class Args>
__global__ void __launch_bounds__(kZigzagThreads)
    zigzagRowsKernel(const __grid_constant__ Args args) {
  zigzagRowsBody<Vector>(args);
}

/// Checks the slots (recording a violation in the packing's status), then
/// selects the rows; the widest vector that divides the row and both
/// buffers' addresses moves them.
inline cudaError_t selectZigzagRows(const ZigzagRowsArgs &args,
                                    gdn_status_t *status, cudaStream_t stream) {
  zigzagCheckKernel<<<1, kDerivedPackingThreads, 16, stream>>>(
      ZigzagCheckArgs{args.global, status, args.ranks});
  if (cudaError_t error = cudaGetLastError())
    return error;
  if (args.rows == 0 || args.rowBytes == 0)
    return cudaSuccess;
  const uintptr_t bits = reinterpret_cast<uintptr_t>(args.gathered) |
                         reinterpret_cast<uintptr_t>(args.out) |
                         static_cast<uintptr_t>(args.rowBytes);
  const unsigned blocks =
      static_cast<unsigned>(args.rows < 65535 ? args.rows : 65535);
  if (bits % 16 == 0)
    zigzagRowsKernel<uint4><<<blocks, kZigzagThreads, 0, stream>>>(args);
  else if (bits % 4 == 0)
    zigzagRowsKernel<uint32_t><<<blocks, kZigzagThreads, 0, stream>>>(args);
  else
    zigzagRowsKernel<uint16_t><<<blocks, kZigzagThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_ZIGZAG_CUH
