//===- l2norm.cuh - L2 norms of rows and their cotangents -------*- CUDA
//-*-===//
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
// its lanes striding over the row (consecutive lanes, consecutive
// elements), warps striding over the rows. x is loaded twice, for the sum
// and for the result, but the second load finds the row in cache: memory
// sees one read of x (and y_grad) and one write, where composing the norm
// from tensor ops moves the row about six times.
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

/// Every row this warp owns: warps of the grid stride over the rows.
template <typename T> __device__ inline void l2normBody(const L2NormArgs<T> &args) {
  const int lane = threadIdx.x % 32;
  const int64_t warpsPerBlock = blockDim.x / 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * warpsPerBlock;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * warpsPerBlock + threadIdx.x / 32;
       row < args.rows; row += warps) {
    const T *x = args.x + row * args.dim;
    const T *yGrad = args.yGrad ? args.yGrad + row * args.dim : nullptr;
    float squares = 0.0f, projection = 0.0f;
    for (int j = lane; j < args.dim; j += 32) {
      const float value = Element<T>::load(x[j]);
      squares += value * value;
      if (yGrad)
        projection += value * Element<T>::load(yGrad[j]);
    }
    squares = groupSum<32>(squares);
    const float r = rsqrtf(squares + args.eps);
    T *out = args.out + row * args.dim;
    if (!yGrad) {
      for (int j = lane; j < args.dim; j += 32)
        out[j] = Element<T>::store(Element<T>::load(x[j]) * r);
      continue;
    }
    const float along = r * r * groupSum<32>(projection);
    for (int j = lane; j < args.dim; j += 32)
      out[j] = Element<T>::store(
          r * (Element<T>::load(yGrad[j]) - along * Element<T>::load(x[j])));
  }
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
  const int64_t blocks = (rows + kWarps - 1) / kWarps;
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
