//===- strided_copies.cuh - the data-movement ops' block copies -*- C++ -*-===//
//
// Data-movement ops (gdn.split_qkvz, gdn.regroup_sections and the backward's
// merges) lower to block copies whose strides the emitter knows statically.
// All the copies of one op run as one kernel: the CUDA copy calls they
// replace (cudaMemcpy3DAsync, one per section) moved Qwen3-Next's qkvz
// split at 1.26 TB/s on the H200, where one kernel moves it at 4.2 TB/s
// (docs/performance.md). Each copy moves the widest vector its addresses,
// pitches and width allow.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_STRIDED_COPIES_CUH
#define GDN_DEVICE_STRIDED_COPIES_CUH

#include "gdn/device/common.cuh"

#include <stddef.h>
#include <stdint.h>

namespace gdn {

/// For every slice s < slices and row r < rows: `width` bytes from
/// src + s * srcSlicePitch + r * srcRowPitch to the same place on the dst
/// side. The regions must not overlap.
struct StridedCopy {
  void *dst;
  size_t dstRowPitch, dstSlicePitch;
  const void *src;
  size_t srcRowPitch, srcSlicePitch;
  size_t width, rows, slices;
};

namespace device {

/// Copies per launch; an op with more runs several launches.
constexpr int kStridedCopiesPerLaunch = 8;
constexpr unsigned kStridedCopyThreads = 256;

/// One copy as the kernel walks it: lines (a row of one slice) numbered
/// slice-major, `vectorBytes` at a time.
struct StridedCopyPlan {
  StridedCopy copy;
  unsigned vectorBytes;
};

struct StridedCopyBatch {
  StridedCopyPlan plans[kStridedCopiesPerLaunch];
};

/// The widest vector (16, 8, 4, 2 or 1 bytes) that divides the width, the
/// pitches and both base addresses.
inline unsigned stridedCopyVectorBytes(const StridedCopy &copy) {
  const uintptr_t bits =
      reinterpret_cast<uintptr_t>(copy.dst) |
      reinterpret_cast<uintptr_t>(copy.src) | copy.width | copy.dstRowPitch |
      copy.dstSlicePitch | copy.srcRowPitch | copy.srcSlicePitch;
  unsigned bytes = 16;
  while (bytes > 1 && (bits & (bytes - 1)))
    bytes /= 2;
  return bytes;
}

/// Lines longer than this many vectors are split into segments of it, one
/// block each: the weights' regroups move a few dozen lines of a megabyte,
/// which one block per line leaves to a few dozen SMs (1.5 TB/s measured on
/// the H100 for Qwen3-Next's qkvz weight).
constexpr size_t kStridedCopySegmentVectors = kStridedCopyThreads * 8;

/// Segments of `kStridedCopySegmentVectors` of each line, spread over the
/// grid: unit u is segment u % segments of line u / segments.
template <typename Vector>
__device__ void copySegments(const StridedCopy &copy, size_t vectors) {
  const size_t segments =
      (vectors + kStridedCopySegmentVectors - 1) / kStridedCopySegmentVectors;
  const size_t units = copy.rows * copy.slices * segments;
  const char *src = static_cast<const char *>(copy.src);
  char *dst = static_cast<char *>(copy.dst);
  for (size_t unit = blockIdx.x; unit < units; unit += gridDim.x) {
    const size_t line = unit / segments, segment = unit % segments;
    const size_t slice = line / copy.rows, row = line % copy.rows;
    const Vector *from = reinterpret_cast<const Vector *>(
        src + slice * copy.srcSlicePitch + row * copy.srcRowPitch);
    Vector *to = reinterpret_cast<Vector *>(
        dst + slice * copy.dstSlicePitch + row * copy.dstRowPitch);
    const size_t first = segment * kStridedCopySegmentVectors;
    const size_t end = first + kStridedCopySegmentVectors < vectors
                           ? first + kStridedCopySegmentVectors
                           : vectors;
    for (size_t v = first + threadIdx.x; v < end; v += kStridedCopyThreads)
      to[v] = from[v];
  }
}

/// A block copies `kStridedCopyThreads / lanes` lines at once, `lanes`
/// threads per line (a line of fewer vectors than threads leaves the
/// remainder of the block idle), and steps through the lines with the
/// grid's stride. The (slice, row) of the next line is advanced by the
/// stride's quotient and remainder, so the loop divides nothing.
template <typename Vector>
__device__ void copyLines(const StridedCopy &copy) {
  const size_t vectors = copy.width / sizeof(Vector);
  if (vectors > kStridedCopySegmentVectors) {
    copySegments<Vector>(copy, vectors);
    return;
  }
  const unsigned lanes = vectors < kStridedCopyThreads
                             ? static_cast<unsigned>(vectors)
                             : kStridedCopyThreads;
  const unsigned linesAtOnce = kStridedCopyThreads / lanes;
  const unsigned lane = threadIdx.x % lanes;
  const unsigned sub = threadIdx.x / lanes;
  if (sub >= linesAtOnce)
    return;
  const size_t stride = static_cast<size_t>(gridDim.x) * linesAtOnce;
  const size_t strideSlices = stride / copy.rows;
  const size_t strideRows = stride % copy.rows;
  const size_t first = static_cast<size_t>(blockIdx.x) * linesAtOnce + sub;
  size_t slice = first / copy.rows, row = first % copy.rows;
  const char *src = static_cast<const char *>(copy.src);
  char *dst = static_cast<char *>(copy.dst);
  while (slice < copy.slices) {
    const Vector *from = reinterpret_cast<const Vector *>(
        src + slice * copy.srcSlicePitch + row * copy.srcRowPitch);
    Vector *to = reinterpret_cast<Vector *>(
        dst + slice * copy.dstSlicePitch + row * copy.dstRowPitch);
    for (size_t v = lane; v < vectors; v += lanes)
      to[v] = from[v];
    slice += strideSlices;
    row += strideRows;
    if (row >= copy.rows) {
      row -= copy.rows;
      ++slice;
    }
  }
}

/// blockIdx.y picks the copy.
__device__ __forceinline__ void stridedCopiesBody(const StridedCopyBatch &batch) {
  const StridedCopyPlan &plan = batch.plans[blockIdx.y];
  switch (plan.vectorBytes) {
  case 16:
    copyLines<uint4>(plan.copy);
    break;
  case 8:
    copyLines<uint2>(plan.copy);
    break;
  case 4:
    copyLines<uint32_t>(plan.copy);
    break;
  case 2:
    copyLines<uint16_t>(plan.copy);
    break;
  default:
    copyLines<uint8_t>(plan.copy);
    break;
  }
}

#ifndef GDN_DEVICE_EMULATION // host emulation runs the kernel body itself
// A template, like the other headers' kernels, so that every translation
// unit including this header may define it (the one-definition rule allows
// identical template definitions).
template <class Batch>
__global__ void __launch_bounds__(kStridedCopyThreads)
    stridedCopiesKernel(const __grid_constant__ Batch batch) {
  stridedCopiesBody(batch);
}
#endif // GDN_DEVICE_EMULATION

/// Blocks per copy at most: big copies loop (16 blocks per H200 SM) rather
/// than launch a block per few lines.
constexpr size_t kStridedCopyMaxBlocks = 132 * 16;

/// Groups the non-empty copies into batches and calls `launch(batch, count,
/// blocks)` for each: `blocks` covers the batch's longest copy, at most
/// `maxBlocks`.
template <typename Launch>
int forEachStridedCopyBatch(const StridedCopy *copies, int count,
                            size_t maxBlocks, Launch &&launch) {
  StridedCopyBatch batch = {};
  int filled = 0;
  size_t blocks = 1;
  auto flush = [&]() {
    int status = 0;
    if (filled)
      status = launch(batch, filled, static_cast<unsigned>(blocks));
    filled = 0;
    blocks = 1;
    return status;
  };
  for (int i = 0; i < count; ++i) {
    const StridedCopy &copy = copies[i];
    if (copy.width == 0 || copy.rows == 0 || copy.slices == 0)
      continue;
    const unsigned vectorBytes = stridedCopyVectorBytes(copy);
    const size_t vectors = copy.width / vectorBytes;
    const size_t linesAtOnce =
        vectors < kStridedCopyThreads ? kStridedCopyThreads / vectors : 1;
    const size_t lines = copy.rows * copy.slices;
    // A block per segment of a long line (copySegments).
    const size_t needed =
        vectors > kStridedCopySegmentVectors
            ? lines * ((vectors + kStridedCopySegmentVectors - 1) /
                       kStridedCopySegmentVectors)
            : (lines + linesAtOnce - 1) / linesAtOnce;
    blocks = needed > blocks ? (needed < maxBlocks ? needed : maxBlocks)
                             : blocks;
    batch.plans[filled++] = {copy, vectorBytes};
    if (filled == kStridedCopiesPerLaunch)
      if (int status = flush())
        return status;
  }
  return flush();
}

} // namespace device

#ifndef GDN_DEVICE_EMULATION
/// Enqueues `count` copies on `stream`, one kernel per eight; empty copies
/// (a pack with no tokens) are skipped.
inline cudaError_t stridedCopies(const StridedCopy *copies, int count,
                                 cudaStream_t stream) {
  const int status = device::forEachStridedCopyBatch(
      copies, count, device::kStridedCopyMaxBlocks,
      [&](const device::StridedCopyBatch &batch, int filled, unsigned blocks) {
        device::stridedCopiesKernel<device::StridedCopyBatch>
            <<<dim3(blocks, filled), device::kStridedCopyThreads, 0,
               stream>>>(batch);
        return static_cast<int>(cudaGetLastError());
      });
  return static_cast<cudaError_t>(status);
}
#endif // GDN_DEVICE_EMULATION

} // namespace gdn

#endif // GDN_DEVICE_STRIDED_COPIES_CUH
