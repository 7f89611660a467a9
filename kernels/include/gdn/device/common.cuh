//===- common.cuh - vector loads, conversions and reductions ----*- CUDA -*-===//
//
// The small building blocks every generated kernel uses: 16-byte vectors of
// bf16/f16/f32 with fp32 conversion, and shuffle reductions over aligned lane
// groups. Kept free of kernel policy so that the emitter can combine them.
//
// GDN_DEVICE_EMULATION: unittests/DeviceEmulation compiles these headers on
// the host (with stand-ins for the CUDA headers) and runs kernel bodies one
// thread per std::thread, so the kernels' control flow is tested in CI
// without a GPU. The few instructions a host cannot run have host forms
// here; launches are left out.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_COMMON_CUH
#define GDN_DEVICE_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

/// Declares the trait Trait<C>: Trait<C>::value is C::member when the
/// kernel Config C declares it, else `fallback` (an expression that may use
/// C). The kernels' optional Config knobs are read through such traits.
#define GDN_OPTIONAL_CONFIG_MEMBER(Trait, member, fallback)                  \
  template <class C, class = void> struct Trait {                              \
    static constexpr auto value = fallback;                                    \
  };                                                                           \
  template <class C> struct Trait<C, std::void_t<decltype(C::member)>> {       \
    static constexpr auto value = C::member;                                   \
  };

/// The same for a member type: Trait<Config>::type is Config::member, or
/// Config::fallback when the Config does not name it.
#define GDN_OPTIONAL_CONFIG_TYPE(Trait, member, fallback)                     \
  template <class C, class = void> struct Trait {                              \
    using type = typename C::fallback;                                         \
  };                                                                           \
  template <class C> struct Trait<C, std::void_t<typename C::member>> {        \
    using type = typename C::member;                                           \
  };

namespace gdn {
namespace device {

/// The conv input's element type of a prologue Config (prologue.cuh,
/// prologue_backward.cuh): ConvInput, or Activation (q, k, v) when the
/// Config names none. An f32 projection output is read as ConvInput beside
/// bf16 q, k and v.
GDN_OPTIONAL_CONFIG_TYPE(ConvInputOf, ConvInput, Activation)

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

/// Two 16-byte words: the raw storage of a 32-byte vector (8 fp32 values
/// beside 8 bf16 ones), loaded and stored as two 16-byte accesses.
struct alignas(16) Words32 {
  uint4 low, high;
};

/// kBytes (8, 16 or 32) of storage elements, loaded and stored in one
/// access (two for 32 bytes) and unpacked to fp32 registers (`unpack`
/// converts bytes already in registers, for loads issued ahead of use). 8
/// bytes halve the registers a thread spends on its channels (the prologue
/// backward, and the prologue on f32 input); 32 bytes carry fp32 values
/// beside 16-byte bf16 vectors of the same element count (an f32 projection
/// output read with bf16 results).
template <typename T, int kBytes> struct PackedVector {
  static_assert(kBytes == 8 || kBytes == 16 || kBytes == 32,
                "8-, 16- or 32-byte vectors");
  static constexpr int kWidth = kBytes / static_cast<int>(sizeof(T));
  using Raw = std::conditional_t<kBytes == 32, Words32,
                                 std::conditional_t<kBytes == 16, uint4, uint2>>;
  float values[kWidth];

  __device__ __forceinline__ void unpack(Raw raw) {
    const T *elements = reinterpret_cast<const T *>(&raw);
#pragma unroll
    for (int i = 0; i < kWidth; ++i)
      values[i] = Element<T>::load(elements[i]);
  }
  __device__ __forceinline__ void load(const T *from) {
    unpack(*reinterpret_cast<const Raw *>(from));
  }
  __device__ __forceinline__ void store(T *to) const {
    Raw raw;
    T *elements = reinterpret_cast<T *>(&raw);
#pragma unroll
    for (int i = 0; i < kWidth; ++i)
      elements[i] = Element<T>::store(values[i]);
    *reinterpret_cast<Raw *>(to) = raw;
  }
  __device__ __forceinline__ void fill(float value) {
#pragma unroll
    for (int i = 0; i < kWidth; ++i)
      values[i] = value;
  }
};

/// The 16-byte vector most kernels move their rows in.
template <typename T> using Vector16 = PackedVector<T, 16>;

/// The vector of `kWidth` elements of T: what a kernel that moves another
/// type in 16-byte vectors reads of T beside it.
template <typename T, int kWidth>
using VectorOf = PackedVector<T, kWidth * static_cast<int>(sizeof(T))>;

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

/// Calls f(std::integral_constant<int, i>) for i = 0 .. kCount-1, so that
/// the body can use i as a constant (register indices, rotations).
template <int kCount, int kFirst = 0, class F>
__device__ __forceinline__ void staticFor(F &&f) {
  if constexpr (kFirst < kCount) {
    f(std::integral_constant<int, kFirst>());
    staticFor<kCount, kFirst + 1>(f);
  }
}

/// exp2 and the reciprocal on the special function unit, flushing
/// subnormals: without .ftz the compiler wraps every exp2 in three
/// instructions of range fix-up, which the prologue's issue rate cannot
/// afford. Inputs and outputs that matter here are far from subnormal.
__device__ __forceinline__ float fastExp2(float x) {
#ifdef GDN_DEVICE_EMULATION
  return exp2f(x);
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}
__device__ __forceinline__ float fastReciprocal(float x) {
#ifdef GDN_DEVICE_EMULATION
  return 1.0f / x;
#else
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}

/// SiLU as x / (1 + 2^(-x log2 e)) with approximate exp2 and reciprocal
/// (relative error near 2^-22, far below the 16-bit storage of the
/// outputs). For x < -88 the exponential is inf and the result -0, where
/// the exact value is below 1e-36.
__device__ __forceinline__ float silu(float x) {
  return x * fastReciprocal(1.0f + fastExp2(x * -1.4426950408889634f));
}

/// softplus with the threshold docs/spec.md fixes for gdn.gates: x itself
/// above 20.
__device__ __forceinline__ float softplus(float x) {
  return x > 20.0f ? x : log1pf(expf(x));
}

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/// Asynchronous 16-byte global -> shared copies (cp.async, sm_80 and later),
/// so that a thread can keep many rows in flight without holding them in
/// registers. Each thread waits for its own copies only: a thread that reads
/// back exactly the slots it filled needs no barrier. Older targets copy
/// synchronously.
__device__ __forceinline__ void copyAsync16(void *shared, const void *global) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::copyAsync16(shared, global);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned address =
      static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address),
               "l"(global)
               : "memory");
#else
  *static_cast<uint4 *>(shared) = *static_cast<const uint4 *>(global);
#endif
}

/// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void commitAsyncCopies() {
#if defined(GDN_DEVICE_EMULATION)
  emulation::commitAsyncCopies();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most `kPending` of this thread's groups are in flight.
template <int kPending> __device__ __forceinline__ void waitAsyncCopies() {
#if defined(GDN_DEVICE_EMULATION)
  emulation::waitAsyncCopies(kPending);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_COMMON_CUH
