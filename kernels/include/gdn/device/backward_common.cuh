//===- backward_common.cuh - shared by the backward ------------*- CUDA -*-===//
//
// The backward kernels (prologue_backward.cuh, epilogue_backward.cuh) sum
// parameter gradients over every token. docs/spec.md (Determinism) asks for
// bit-identical gradients run after run, so no sum may depend on thread timing:
// there are no floating-point atomics. Instead each block writes its partial
// sums to a workspace in a fixed layout, and a second kernel adds the partials
// of every output in block order (sumPartialsKernel). The number of blocks, and
// so the grouping of the sums, is a function of the shape and the Config only
// (never of the device), so the same inputs give the same bits on any GPU.
//
// Also here: the SiLU value with its derivative (one exp2 and one
// reciprocal for both) and the balanced split of rows over blocks.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_BACKWARD_COMMON_CUH
#define GDN_DEVICE_BACKWARD_COMMON_CUH

#include "gdn/device/common.cuh"
#include "gdn/runtime/abi.h"

#include <math.h>
#include <stdint.h>

#include <type_traits>

namespace gdn {
namespace device {

/// An asynchronous global -> shared copy of 8 or 16 bytes (copyAsync16 of
/// common.cuh for 16; cp.async.ca for 8, which has no .cg form).
template <int kBytes>
__device__ __forceinline__ void copyAsync(void *shared, const void *global) {
  if constexpr (kBytes == 16) {
    copyAsync16(shared, global);
  } else {
    static_assert(kBytes == 8, "8- or 16-byte copies");
#if defined(GDN_DEVICE_EMULATION)
    emulation::copyAsync8(shared, global);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned address =
        static_cast<unsigned>(__cvta_generic_to_shared(shared));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(address),
                 "l"(global)
                 : "memory");
#else
    *static_cast<uint2 *>(shared) = *static_cast<const uint2 *>(global);
#endif
  }
}

/// SiLU and its derivative at x: silu = x s and silu' = s (1 + x (1 - s))
/// with s = sigmoid(x), from one approximate exp2 and reciprocal (as the
/// forward's silu, so the recomputed value matches what the forward used).
/// For x < -88, s = 0: value -0 and slope 0, where the exact ones are below
/// 1e-36.
__device__ __forceinline__ void siluWithSlope(float x, float &value,
                                              float &slope) {
  const float s = fastReciprocal(1.0f + fastExp2(x * -1.4426950408889634f));
  value = x * s;
  slope = s * (1.0f + x * (1.0f - s));
}

/// Rows [begin, end) of part `index` of `parts` balanced contiguous parts of
/// `total` rows (the first parts one row longer). Computed in 64-bit so
/// that no intermediate overflows near INT32_MAX rows.
template <typename Row>
__host__ __device__ __forceinline__ void
balancedRange(int64_t total, int64_t parts, int64_t index, Row &begin,
              Row &end) {
  const int64_t base = total / parts, extra = total % parts;
  const int64_t first = index * base + (index < extra ? index : extra);
  begin = static_cast<Row>(first);
  end = static_cast<Row>(first + base + (index < extra ? 1 : 0));
}

/// Blocks of a backward kernel over `rows` rows: one per `rowsPerBlock`
/// rows, at least one and at most `maxBlocks`. A function of the shape
/// only, so that the grouping of the parameter sums is too.
__host__ __device__ constexpr int64_t
backwardBlocks(int64_t rows, int64_t rowsPerBlock, int64_t maxBlocks) {
  return rows <= rowsPerBlock ? 1
         : (rows + rowsPerBlock - 1) / rowsPerBlock > maxBlocks
             ? maxBlocks
             : (rows + rowsPerBlock - 1) / rowsPerBlock;
}

/// The storage of a finished sum (parameter gradients take their
/// parameter's type, as the backward program's gradients do).
enum class SumStorage : int32_t { F32, BF16, F16 };
template <typename T> struct SumStorageOf;
template <> struct SumStorageOf<float> {
  static constexpr SumStorage kValue = SumStorage::F32;
};
template <> struct SumStorageOf<__nv_bfloat16> {
  static constexpr SumStorage kValue = SumStorage::BF16;
};
template <> struct SumStorageOf<__half> {
  static constexpr SumStorage kValue = SumStorage::F16;
};

/// One parameter gradient to finish: out[i] = sum over p < parts, in order,
/// of partials[p * stride + i], for i < count, stored once as `storage`.
struct PartialSum {
  const float *partials;
  void *out;
  SumStorage storage;
  int32_t parts;
  int32_t count;
  int64_t stride;
};

template <typename T>
inline PartialSum partialSum(const float *partials, T *out, int32_t parts,
                             int32_t count, int64_t stride) {
  return {partials, out, SumStorageOf<T>::kValue, parts, count, stride};
}

/// Up to four sums finished by one launch (blockIdx.y picks the sum).
struct PartialSums {
  static constexpr int kMaxSums = 4;
  PartialSum sums[kMaxSums];
  /// The packing status, or null: when it holds a violation every output
  /// is NaN, never a number computed from invalid offsets.
  const gdn_status_t *status;
};

/// Adds the partials of every output in block order: one thread per
/// output, so each total is the same sequence of fp32 additions every run.
__global__ void sumPartialsKernel(PartialSums job) {
  const PartialSum sum = job.sums[blockIdx.y];
  const bool invalid = job.status && job.status->code != GDN_STATUS_OK;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < sum.count; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float total = 0.0f;
    for (int32_t p = 0; p < sum.parts; ++p)
      total += sum.partials[static_cast<int64_t>(p) * sum.stride + i];
    if (invalid)
      total = NAN;
    switch (sum.storage) {
    case SumStorage::F32:
      static_cast<float *>(sum.out)[i] = total;
      break;
    case SumStorage::BF16:
      static_cast<__nv_bfloat16 *>(sum.out)[i] =
          Element<__nv_bfloat16>::store(total);
      break;
    case SumStorage::F16:
      static_cast<__half *>(sum.out)[i] = Element<__half>::store(total);
      break;
    }
  }
}

#ifndef GDN_DEVICE_EMULATION
/// Launches sumPartialsKernel for the first `count` sums of `job`.
inline cudaError_t launchSumPartials(const PartialSums &job, int count,
                                     cudaStream_t stream) {
  if (count <= 0)
    return cudaSuccess;
  int32_t widest = 1;
  for (int i = 0; i < count; ++i)
    widest = job.sums[i].count > widest ? job.sums[i].count : widest;
  constexpr int kThreads = 256;
  const int blocks = static_cast<int>((widest + kThreads - 1) / kThreads < 1024
                                          ? (widest + kThreads - 1) / kThreads
                                          : 1024);
  sumPartialsKernel<<<dim3(blocks, count), kThreads, 0, stream>>>(job);
  return cudaGetLastError();
}
#endif // GDN_DEVICE_EMULATION

/// Bytes rounded up to a multiple of 256 (workspace carving keeps every
/// piece 256-byte aligned).
__host__ __device__ constexpr size_t alignWorkspace(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_BACKWARD_COMMON_CUH
