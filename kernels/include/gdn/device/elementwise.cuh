//===- elementwise.cuh - sums of cotangents ---------------------*- CUDA
//-*-===//
//
// A value with several uses gets the sum of its uses' cotangents in a
// backward program (`arith.addf`). Where no GEMM can fold the sum
// (GradientSums.h: the projections' x gradients), it runs here: one pass
// over both operands, the sum in fp32 and rounded once to the result's
// type, 16-byte vectors where the addresses allow.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_ELEMENTWISE_CUH
#define GDN_DEVICE_ELEMENTWISE_CUH

#include "gdn/device/common.cuh"

#include <stdint.h>

namespace gdn {
namespace device {

template <typename T> struct AddArgs {
  const T *a, *b;
  T *out;
  int64_t count;
};

/// out = a + b, elementwise, with the grid's stride: whole 16-byte vectors
/// first (when every pointer is aligned), then the tail element by element.
template <typename T> __device__ inline void addBody(const AddArgs<T> &args) {
  constexpr int kPerVector = 16 / sizeof(T);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool aligned = ((reinterpret_cast<uintptr_t>(args.a) |
                         reinterpret_cast<uintptr_t>(args.b) |
                         reinterpret_cast<uintptr_t>(args.out)) &
                        15) == 0;
  const int64_t vectors = aligned ? args.count / kPerVector : 0;
  for (int64_t v = first; v < vectors; v += stride) {
    uint4 x = reinterpret_cast<const uint4 *>(args.a)[v];
    const uint4 y = reinterpret_cast<const uint4 *>(args.b)[v];
    T *xs = reinterpret_cast<T *>(&x);
    const T *ys = reinterpret_cast<const T *>(&y);
#pragma unroll
    for (int i = 0; i < kPerVector; ++i)
      xs[i] =
          Element<T>::store(Element<T>::load(xs[i]) + Element<T>::load(ys[i]));
    reinterpret_cast<uint4 *>(args.out)[v] = x;
  }
  for (int64_t i = vectors * kPerVector + first; i < args.count; i += stride)
    args.out[i] = Element<T>::store(Element<T>::load(args.a[i]) +
                                    Element<T>::load(args.b[i]));
}

#ifndef GDN_DEVICE_EMULATION // host emulation runs the kernel body itself

constexpr unsigned kAddThreads = 256;

template <class Args>
__global__ void __launch_bounds__(kAddThreads)
    addKernel(const __grid_constant__ Args args) {
  addBody(args);
}

/// Enqueues out = a + b over `count` elements of T on `stream`.
template <typename T>
cudaError_t addTensors(const void *a, const void *b, void *out, int64_t count,
                       cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  const int64_t vectors = (count + 16 / sizeof(T) - 1) / (16 / sizeof(T));
  const int64_t blocks = (vectors + kAddThreads - 1) / kAddThreads;
  addKernel<<<static_cast<unsigned>(blocks < 132 * 16 ? blocks : 132 * 16),
              kAddThreads, 0, stream>>>(
      AddArgs<T>{static_cast<const T *>(a), static_cast<const T *>(b),
                 static_cast<T *>(out), count});
  return cudaGetLastError();
}

#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_ELEMENTWISE_CUH
