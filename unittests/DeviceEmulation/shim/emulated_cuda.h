//===- emulated_cuda.h - host stand-ins for what device headers use -------===//
//
// Just enough of CUDA for kernels/include/gdn/device to compile on the host
// with GDN_DEVICE_EMULATION: qualifiers, vector types, the thread indices
// (thread_local: one std::thread per CUDA thread), __syncthreads and warp
// shuffles over the emulated block, 16-bit float types, and the hooks behind
// copyAsync16 / commitAsyncCopies / waitAsyncCopies, mma.sync and ldmatrix,
// and sm_90a's wgmma, stmatrix, TMA and bulk copies, mbarriers and named
// barriers. The emulator that runs the threads (DeviceEmulator.cpp)
// implements the functions declared here.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_EMULATED_CUDA_H
#define GDN_EMULATED_CUDA_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__
#define __align__(n) alignas(n)
#define __grid_constant__

/// A tensor map as the emulator's TMA reads it (the driver's is opaque):
/// a row-major bf16 matrix, copied in 64 x 64 boxes with 128-byte
/// swizzling, out-of-range elements zero (gdn/device/tma.cuh's
/// encodeTensorMap2D makes no other kind).
struct CUtensorMap {
  const void *base;
  uint64_t columns, rows, rowStride;
};
inline long long clock64() { return 0; }
/// The runtime's status codes the host helpers that the emulator shares
/// with the launches return.
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };

struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
struct float4 {
  float x, y, z, w;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return {x, y, z, w};
}
struct float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}

extern thread_local dim3 threadIdx, blockIdx;
extern dim3 gridDim, blockDim;

template <class T> inline T min(T a, T b) { return a < b ? a : b; }
template <class T> inline T max(T a, T b) { return a > b ? a : b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

namespace gdn::device::emulation {
void syncThreads();
float shuffleXor(float value, int laneMask);
/// __shfl_up_sync over the full warp: lane l gets lane l - delta's value,
/// or its own when l < delta.
float shuffleUp(float value, unsigned delta);
/// __shfl_sync over the full warp: every lane gets lane `source`'s value.
float shuffle(float value, int source);
/// __syncwarp over the full warp.
void syncWarp();
void copyAsync16(void *shared, const void *global);
/// cp.async of 8 bytes: as copyAsync16, owned by 8-byte word.
void copyAsync8(void *shared, const void *global);
void commitAsyncCopies();
void waitAsyncCopies(int pending);
/// mma.sync.m16n8k16 bf16 -> fp32, warp-collective: d = a * b + d with the
/// PTX ISA fragment layouts (see gdn/device/mma.cuh).
void mmaBf16m16n8k16(float d[4], const uint32_t a[4], const uint32_t b[2]);
/// mma.sync.m16n8k8 tf32 -> fp32, warp-collective: as mmaBf16m16n8k16 with
/// the tf32 layouts of gdn/device/mma.cuh; like the tensor cores it reads
/// the top 19 bits of each operand register.
void mmaTf32m16n8k8(float d[4], const uint32_t a[4], const uint32_t b[2]);
/// cvt.rn.tf32.f32 (sm_90): `x` to 10 mantissa bits, to nearest, ties to
/// even (NaN and infinities as they are).
uint32_t roundToTf32(float x);
/// ldmatrix.m8n8.x4(.trans).b16, warp-collective: lane l gives the address
/// of row l % 8 of matrix l / 8 (in shared memory, 16-byte aligned).
void loadMatrices(uint32_t r[4], const void *row, bool transpose);
/// stmatrix.m8n8.x4.trans.b16 (sm_90), warp-collective: the inverse of
/// loadMatrices with transpose (see gdn/device/wgmma.cuh).
void storeMatricesTransposed(void *row, const uint32_t r[4]);
/// The shared-window address of `p` (its offset into the emulated block's
/// dynamic shared memory, which starts 1024-byte aligned at 0).
uint32_t sharedAddress(const void *p);
/// wgmma.mma_async.m64nNk16 bf16 -> fp32 (sm_90a), warpgroup-collective
/// and deferred as on the GPU: `d` (N / 2 accumulators of this thread) reads
/// NaN from the issue until a wgmmaWait retires the product's group, which
/// computes it then, reading B (and A when `a` is null: from descA,
/// MN-major with `transposeA`) from shared memory through the descriptors
/// at that moment. A comes from the 128 threads' registers otherwise
/// (gdn/device/wgmma.cuh's layouts).
void wgmmaIssue(float *d, int n, const uint32_t *a, uint64_t descA,
                uint64_t descB, bool transposeB, bool accumulate,
                bool transposeA = false);
/// mbarrier.init: a barrier expecting `count` arrivals per phase.
void mbarrierInit(uint64_t *barrier, unsigned count);
/// mbarrier.arrive(.expect_tx): one arrival, first raising the phase's
/// expected transaction bytes by `bytes`. Once every arrival and every
/// expected byte is in, the phase completes as late as the hardware may
/// let it (at a wait for it, or at the next phase's first arrival or
/// copy), and the copies counted on it land then.
void mbarrierArrive(uint64_t *barrier, unsigned bytes);
/// mbarrier.try_wait.parity in a loop: returns once the phase of parity
/// `parity` has completed (a wait that never returns fails the run).
void mbarrierWait(uint64_t *barrier, unsigned parity);
/// cp.async.bulk.tensor.2d (TMA) of the 64 x 64 box at column x, row y of
/// `map` into `shared` (1024-byte aligned), 128-byte swizzled: the
/// destination reads NaN until the barrier's phase completes.
void tmaLoad2D(void *shared, const CUtensorMap *map, int x, int y, uint64_t *barrier);
/// cp.async.bulk.tensor.2d store of the box at `shared` to (x, y) of `map`
/// (elements past the map's bounds not written), in this thread's open
/// bulk group: the box is read, and the store done, only when a bulkWait
/// of this thread retires the group.
void tmaStore2D(const CUtensorMap *map, int x, int y, const void *shared);
/// cp.async.bulk.commit_group: closes this thread's open group of stores.
void bulkCommit();
/// cp.async.bulk.wait_group(.read): does this thread's groups of stores,
/// oldest first, until at most `pending` remain (a thread that exits with
/// any fails the run).
void bulkWait(int pending);
/// cp.async.bulk of `bytes` contiguous bytes, as tmaLoad2D.
void bulkLoad(void *shared, const void *global, unsigned bytes, uint64_t *barrier);
/// bar.sync id, count: a barrier of `count` threads named `id`.
void namedBarrier(int id, int count);
/// %cluster_ctarank and %cluster_nctarank (1 and 0 without clusters).
unsigned clusterRank();
unsigned clusterSize();
/// mapa: the address in cluster peer `rank`'s shared memory of what `p`
/// addresses in this block's.
void *mapSharedRank(const void *p, unsigned rank);
/// mbarrier.arrive.release.cluster.shared::cluster: one arrival on the
/// mbarrier of peer `rank` at the offset `barrier` has in this block.
void mbarrierArriveCluster(uint64_t *barrier, unsigned rank);
/// barrier.cluster.arrive + wait: every thread of the cluster.
void clusterSync();
/// This block's copy of the dynamic shared memory `p` points into (the
/// blocks of a cluster run at once, each with its own).
void *thisBlockShared(void *p);
/// wgmma.commit_group: closes this thread's group of products.
void wgmmaCommit();
/// wgmma.wait_group: retires this warpgroup's groups until at most
/// `pending` are in flight.
void wgmmaWait(int pending);
} // namespace gdn::device::emulation

/// The shared-window address of a pointer into shared memory.
inline size_t __cvta_generic_to_shared(const void *p) {
  return gdn::device::emulation::sharedAddress(p);
}

inline void __syncthreads() { gdn::device::emulation::syncThreads(); }
/// A full warp's barrier (memory ordering comes free on the host).
inline void __syncwarp(unsigned = 0xffffffffu) {
  gdn::device::emulation::syncWarp();
}
/// atomicMin on a word that several emulated threads update.
inline unsigned long long atomicMin(unsigned long long *address,
                                    unsigned long long value) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  const unsigned long long old = *address;
  if (value < old)
    *address = value;
  return old;
}
/// atomicMin on an int several emulated threads update.
inline int atomicMin(int *address, int value) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  const int old = *address;
  if (value < old)
    *address = value;
  return old;
}
inline float __shfl_xor_sync(unsigned, float value, int laneMask) {
  return gdn::device::emulation::shuffleXor(value, laneMask);
}
inline float __shfl_up_sync(unsigned, float value, unsigned delta) {
  return gdn::device::emulation::shuffleUp(value, delta);
}
inline float __shfl_sync(unsigned, float value, int source) {
  return gdn::device::emulation::shuffle(value, source);
}
/// __any_sync over the full warp, as an or-reduction of shuffles.
inline int __any_sync(unsigned, int predicate) {
  float any = predicate ? 1.0f : 0.0f;
  for (int laneMask = 16; laneMask > 0; laneMask /= 2)
    any = max(any, gdn::device::emulation::shuffleXor(any, laneMask));
  return any != 0.0f;
}

/// bf16 and f16 storage with round-to-nearest-even conversions.
struct __nv_bfloat16 {
  uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 x) {
  uint32_t word = static_cast<uint32_t>(x.bits) << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}
inline __nv_bfloat16 __float2bfloat16_rn(float x) {
  uint32_t word;
  std::memcpy(&word, &x, 4);
  if (std::isnan(x))
    return {0x7fc0};
  word += 0x7fff + ((word >> 16) & 1);
  return {static_cast<uint16_t>(word >> 16)};
}
struct __nv_bfloat162 {
  __nv_bfloat16 x, y; // x: the lower half of the 32 bits
};
inline __nv_bfloat162 __floats2bfloat162_rn(float low, float high) {
  return {__float2bfloat16_rn(low), __float2bfloat16_rn(high)};
}
struct __half {
  _Float16 value;
};
inline float __half2float(__half x) { return static_cast<float>(x.value); }
inline __half __float2half_rn(float x) { return {static_cast<_Float16>(x)}; }

#endif // GDN_EMULATED_CUDA_H
