//===- common.cuh - vector loads, conversions and reductions ----*- CUDA -*-===//
//
// The small building blocks every generated kernel uses: 16-byte vectors of
// bf16/f16/f32 with fp32 conversion, and shuffle reductions over aligned lane
// groups. Kept free of kernel policy so that the emitter can combine them.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_COMMON_CUH
#define GDN_DEVICE_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace gdn {
namespace device {

/// Converts one storage element to fp32 and back.
template <typename T> struct Element;
template <> struct Element<__nv_bfloat16> {
  static __device__ __forceinline__ float load(__nv_bfloat16 x) {
    return __bfloat162float(x);
  }
  static __device__ __forceinline__ __nv_bfloat16 store(float x) {
    return __float2bfloat16_rn(x);
  }
};
template <> struct Element<__half> {
  static __device__ __forceinline__ float load(__half x) {
    return __half2float(x);
  }
  static __device__ __forceinline__ __half store(float x) {
    return __float2half_rn(x);
  }
};
template <> struct Element<float> {
  static __device__ __forceinline__ float load(float x) { return x; }
  static __device__ __forceinline__ float store(float x) { return x; }
};

/// A 16-byte vector of storage elements, loaded and stored in one access and
/// unpacked to fp32 registers.
template <typename T> struct Vector16 {
  static constexpr int kWidth = 16 / sizeof(T);
  float values[kWidth];

  __device__ __forceinline__ void load(const T *from) {
    unpack(*reinterpret_cast<const uint4 *>(from));
  }
  /// Converts 16 bytes already in registers (loads issued ahead of use).
  __device__ __forceinline__ void unpack(uint4 raw) {
    const T *elements = reinterpret_cast<const T *>(&raw);
#pragma unroll
    for (int i = 0; i < kWidth; ++i)
      values[i] = Element<T>::load(elements[i]);
  }
  __device__ __forceinline__ void store(T *to) const {
    uint4 raw;
    T *elements = reinterpret_cast<T *>(&raw);
#pragma unroll
    for (int i = 0; i < kWidth; ++i)
      elements[i] = Element<T>::store(values[i]);
    *reinterpret_cast<uint4 *>(to) = raw;
  }
  __device__ __forceinline__ void fill(float value) {
#pragma unroll
    for (int i = 0; i < kWidth; ++i)
      values[i] = value;
  }
};

/// Loads one scalar of any storage type as fp32.
template <typename T> __device__ __forceinline__ float loadScalar(const T *p) {
  return Element<T>::load(*p);
}

/// Sum over an aligned group of `kLanes` consecutive lanes (a power of two up
/// to 32); every lane of the group gets the total.
template <int kLanes> __device__ __forceinline__ float groupSum(float value) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__device__ __forceinline__ float silu(float x) { return x / (1.0f + __expf(-x)); }

/// softplus with the threshold of SEMANTICS.md (x itself above 20).
__device__ __forceinline__ float softplus(float x) {
  return x > 20.0f ? x : log1pf(expf(x));
}

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_COMMON_CUH
