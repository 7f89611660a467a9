//===- l2norm.cuh - L2 norms of rows and their cotangents ---*- CUDA -*-===//
//
// gdn.l2norm and gdn.l2norm_grad where no fused kernel takes them: a
// layer's prologue normalises q and k inside its conv kernel, but a program
// of the delta rule alone (FLA's use_qk_l2norm_in_kernel) normalises its
// arguments first. Each row of the last dimension, with r = rsqrt(sum x^2 +
// eps):
//
//   y      = x r
//   x_grad = r (y_grad - r^2 (x . y_grad) x)      (= r (y_grad - y (y . y_grad)))
//
// in fp32, each result rounded once to the tensor's type. One warp a row,
// warps striding over the rows. Rows of up to 512 bf16 (256 fp32) go in
// 8-byte vectors kept in registers, up to four rows a warp at once with
// every load issued before the first sum; longer or misaligned rows element
// by element, x loaded a second time from cache. Memory sees one read of x
// (and y_grad) and one write, where composing the norm from tensor ops
// moves the row about six times.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_L2NORM_CUH
#define GDN_DEVICE_L2NORM_CUH

#include "gdn/device/common.cuh"

#include <stdint.h>

namespace gdn {
namespace device {

template <typename T> struct L2NormArgs {
  const T *x;      ///< [rows][dim]
  const T *yGrad;  ///< [rows][dim], the cotangent of y; null for the norm
  T *out;          ///< y, or with yGrad x's cotangent
  int64_t rows;
  int dim;
  float eps;
};

/// One row's sum of squares and, with yGrad, its projection x . y_grad
/// (this lane's part until `factors` sums them over the warp).
struct L2NormSums {
  float squares = 0.0f, projection = 0.0f;

  /// r = rsqrt(sum x^2 + eps) and, for the cotangent, r^2 (x . y_grad):
  /// every lane of the warp gets both.
  __device__ inline float2 factors(float eps, bool backward) const {
    const float r = rsqrtf(groupSum<32>(squares) + eps);
    return make_float2(r, backward ? r * r * groupSum<32>(projection) : 0.0f);
  }
};

/// One element of the result from its row's factors: y = x r, or
/// x_grad = r (y_grad - r^2 (x . y_grad) x).
__device__ __forceinline__ float l2normElement(float2 factors, bool backward, float x,
                                               float yGrad) {
  return backward ? factors.x * (yGrad - factors.y * x) : x * factors.x;
}

/// Rows of at most 32 x kL2NormMaxVectors 8-byte vectors (512 bf16, 256
/// fp32) whose every row starts 8-byte aligned go in vectors: a lane keeps
/// its kVectors vectors of each of kRows rows in registers, and the warp
/// issues all their loads before the first sum, so a group of rows costs one
/// memory latency rather than one per element a lane reads. kVectors x kRows
/// is 4 whatever the row's length, which keeps the registers (and so the
/// warps an SM holds) the same for short rows as for long ones.
constexpr int kL2NormMaxVectors = 4;

template <typename T> __device__ inline bool l2normFitsVectors(const L2NormArgs<T> &args) {
  using V = PackedVector<T, 8>;
  const auto aligned = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 8 == 0; };
  return args.dim % V::kWidth == 0 && args.dim / V::kWidth <= 32 * kL2NormMaxVectors &&
         aligned(args.x) && aligned(args.out) && (!args.yGrad || aligned(args.yGrad));
}

template <typename T, int kVectors, int kRows>
__device__ inline void l2normVectorRows(const L2NormArgs<T> &args, int64_t warp,
                                        int64_t warps) {
  using V = PackedVector<T, 8>;
  const int lane = threadIdx.x % 32;
  const bool backward = args.yGrad != nullptr;
  for (int64_t row0 = warp * kRows; row0 < args.rows; row0 += warps * kRows) {
    V x[kRows][kVectors], dy[kRows][kVectors];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t offset = (row0 + r) * args.dim;
#pragma unroll
      for (int i = 0; i < kVectors; ++i) {
        const int element = (lane + 32 * i) * V::kWidth;
        const bool mine = row0 + r < args.rows && element < args.dim;
        if (mine)
          x[r][i].load(args.x + offset + element);
        else
          x[r][i].fill(0.0f);
        if (backward && mine)
          dy[r][i].load(args.yGrad + offset + element);
        else
          dy[r][i].fill(0.0f);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      L2NormSums sums;
#pragma unroll
      for (int i = 0; i < kVectors; ++i)
#pragma unroll
        for (int e = 0; e < V::kWidth; ++e) {
          sums.squares += x[r][i].values[e] * x[r][i].values[e];
          sums.projection += x[r][i].values[e] * dy[r][i].values[e];
        }
      const float2 factors = sums.factors(args.eps, backward);
      const int64_t offset = (row0 + r) * args.dim;
#pragma unroll
      for (int i = 0; i < kVectors; ++i) {
        const int element = (lane + 32 * i) * V::kWidth;
        if (row0 + r >= args.rows || element >= args.dim)
          continue;
        V result;
#pragma unroll
        for (int e = 0; e < V::kWidth; ++e)
          result.values[e] =
              l2normElement(factors, backward, x[r][i].values[e], dy[r][i].values[e]);
        result.store(args.out + offset + element);
      }
    }
  }
}

/// Any other row, element by element: x is loaded twice, for the sum and
/// for the result, the second time from cache.
template <typename T>
__device__ inline void l2normScalarRows(const L2NormArgs<T> &args, int64_t firstRow,
                                        int64_t rowStep) {
  const int lane = threadIdx.x % 32;
  for (int64_t row = firstRow; row < args.rows; row += rowStep) {
    const T *x = args.x + row * args.dim;
    const T *yGrad = args.yGrad ? args.yGrad + row * args.dim : nullptr;
    L2NormSums sums;
    for (int j = lane; j < args.dim; j += 32) {
      const float value = Element<T>::load(x[j]);
      sums.squares += value * value;
      if (yGrad)
        sums.projection += value * Element<T>::load(yGrad[j]);
    }
    const float2 factors = sums.factors(args.eps, yGrad != nullptr);
    T *out = args.out + row * args.dim;
    for (int j = lane; j < args.dim; j += 32)
      out[j] = Element<T>::store(l2normElement(factors, yGrad != nullptr,
                                               Element<T>::load(x[j]),
                                               yGrad ? Element<T>::load(yGrad[j]) : 0.0f));
  }
}

/// Every row this warp owns: warps of the grid stride over the rows (in
/// groups of up to four where the rows fit the vectors).
template <typename T> __device__ inline void l2normBody(const L2NormArgs<T> &args) {
  const int64_t warpsPerBlock = blockDim.x / 32;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * warpsPerBlock + threadIdx.x / 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * warpsPerBlock;
  const int vectors = args.dim / PackedVector<T, 8>::kWidth;
  if (!l2normFitsVectors(args))
    l2normScalarRows(args, warp, warps);
  else if (vectors <= 32)
    l2normVectorRows<T, 1, 4>(args, warp, warps);
  else if (vectors <= 64)
    l2normVectorRows<T, 2, 2>(args, warp, warps);
  else
    l2normVectorRows<T, 4, 1>(args, warp, warps);
}

#ifndef GDN_DEVICE_EMULATION // host emulation runs the kernel body itself

constexpr unsigned kL2NormThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kL2NormThreads)
    l2normKernel(const __grid_constant__ L2NormArgs<T> args) {
  l2normBody(args);
}

/// Enqueues the norm (yGrad null) or its cotangent over `count` elements of
/// T in rows of `dim` on `stream`.
template <typename T>
cudaError_t launchL2Norm(const void *x, const void *yGrad, void *out, int64_t count, int dim,
                         float eps, cudaStream_t stream) {
  const int64_t rows = dim > 0 ? count / dim : 0;
  if (rows == 0)
    return cudaSuccess;
  constexpr int64_t kWarps = kL2NormThreads / 32;
  const int64_t blocks = (rows + kWarps - 1) / kWarps; // extra blocks find no rows
  l2normKernel<<<static_cast<unsigned>(blocks < 132 * 16 ? blocks : 132 * 16), kL2NormThreads,
                 0, stream>>>(L2NormArgs<T>{static_cast<const T *>(x),
                                            static_cast<const T *>(yGrad), static_cast<T *>(out),
                                            rows, dim, eps});
  return cudaGetLastError();
}

/// y = x rsqrt(sum x^2 + eps), row by row.
template <typename T>
cudaError_t l2normRows(const void *x, void *y, int64_t count, int dim, float eps,
                       cudaStream_t stream) {
  return launchL2Norm<T>(x, nullptr, y, count, dim, eps, stream);
}

/// x's cotangent from y's, row by row.
template <typename T>
cudaError_t l2normRowsGrad(const void *yGrad, const void *x, void *xGrad, int64_t count, int dim,
                           float eps, cudaStream_t stream) {
  return launchL2Norm<T>(x, yGrad, xGrad, count, dim, eps, stream);
}

#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_L2NORM_CUH
