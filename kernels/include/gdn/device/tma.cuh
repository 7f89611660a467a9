//===- tma.cuh - Hopper bulk copies into shared memory -----------*- CUDA
//-*-===//
//
// The tensor memory accelerator (sm_90a): one thread issues a copy of a
// whole tile (cp.async.bulk.tensor, described by a CUtensorMap made on the
// host) or of contiguous bytes (cp.async.bulk) into shared memory, and the
// copy reports its bytes to an mbarrier that the consumers wait on. Unlike
// per-thread cp.async, no thread spends issue slots or registers on
// addresses: the delta-rule scan's per-thread copies were its bottleneck
// (docs/delta-rule.md). Host side: encodeTensorMap2D gets the driver's
// encoder through the runtime, so nothing links against libcuda.
//
// GDN_DEVICE_EMULATION: the barriers and copies are the host emulator's
// (unittests/DeviceEmulation): a copy's destination reads NaN until the
// barrier phase it counts on completes.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_TMA_CUH
#define GDN_DEVICE_TMA_CUH

#include "gdn/device/wgmma.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace gdn {
namespace device {

__device__ __forceinline__ uint32_t sharedAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Initialises an mbarrier expecting `count` arrivals per phase; a
/// __syncthreads must follow before other threads use it.
__device__ __forceinline__ void mbarrierInit(uint64_t *barrier,
                                             unsigned count) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::mbarrierInit(barrier, count);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(
                   sharedAddress(barrier)),
               "r"(count)
               : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  __trap();
#endif
}

/// This thread's arrival, announcing `bytes` of copies that complete the
/// phase when they land.
__device__ __forceinline__ void mbarrierExpectBytes(uint64_t *barrier,
                                                    unsigned bytes) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::mbarrierArrive(barrier, bytes);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::
                   "r"(sharedAddress(barrier)),
               "r"(bytes)
               : "memory");
#endif
}

/// This thread's plain arrival (release: its earlier memory accesses are
/// ordered before a waiter's later ones).
__device__ __forceinline__ void mbarrierArrive(uint64_t *barrier) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::mbarrierArrive(barrier, 0);
#elif GDN_WGMMA_AVAILABLE
  asm volatile(
      "mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(sharedAddress(barrier))
      : "memory");
#endif
}

/// Waits until the phase with parity `parity` of the barrier completed.
__device__ __forceinline__ void mbarrierWait(uint64_t *barrier,
                                             unsigned parity) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::mbarrierWait(barrier, parity);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("{\n"
               ".reg .pred done;\n"
               "wait_%=:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra wait_%=;\n"
               "}\n" ::"r"(sharedAddress(barrier)),
               "r"(parity)
               : "memory");
#endif
}

/// Brings `map` into the descriptor cache ahead of the copies that use it
/// (otherwise the first copy through it waits for the fetch).
__device__ __forceinline__ void tmaPrefetchDescriptor(const CUtensorMap *map) {
#if GDN_WGMMA_AVAILABLE
  asm volatile(
      "prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map))
      : "memory");
#endif
}

/// `value` as lane 0 of the (converged) warp holds it. The copies below take
/// their coordinates from uniform registers; ptxas puts a value there only
/// when it can prove it the same in every lane, and otherwise wraps each
/// copy in a loop over the warp's distinct values (in the fused forward's
/// producer: about 100 cycles a copy, H200).
__device__ __forceinline__ int warpUniform(int value) {
  return __shfl_sync(0xffffffffu, value, 0);
}

/// True in one lane of the warp (every lane must reach it): the lane that
/// issues a warp's copies.
__device__ __forceinline__ bool electOneLane() {
#if GDN_WGMMA_AVAILABLE
  uint32_t elected;
  asm volatile("{\n.reg .pred p;\nelect.sync _|p, 0xffffffff;\n"
               "selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(elected));
  return elected != 0;
#else
  return threadIdx.x % 32 == 0;
#endif
}

/// Copies the box of `map` at (x, y) (innermost coordinate first) to
/// `shared`, completing bytes on `barrier`. Out-of-range elements are zero.
__device__ __forceinline__ void tmaLoad2D(void *shared, const CUtensorMap *map,
                                          int x, int y, uint64_t *barrier) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::tmaLoad2D(shared, map, x, y, barrier);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
               "complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
                   sharedAddress(shared)),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y),
               "r"(sharedAddress(barrier))
               : "memory");
#endif
}

/// Copies the box at `shared` to (x, y) of `map` as part of this thread's
/// next bulk group (bulkCommit); elements past the map's bounds are not
/// written. The box's writers must have fenced their writes
/// (fenceSharedForAsyncProxy) before a barrier that precedes this.
__device__ __forceinline__ void tmaStore2D(const CUtensorMap *map, int x, int y,
                                           const void *shared) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::tmaStore2D(map, x, y, shared);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, "
               "{%1, %2}], [%3];\n" ::"l"(reinterpret_cast<uint64_t>(map)),
               "r"(x), "r"(y), "r"(sharedAddress(shared))
               : "memory");
#endif
}

/// Closes this thread's bulk group of stores (tmaStore2D).
__device__ __forceinline__ void bulkCommit() {
#if defined(GDN_DEVICE_EMULATION)
  emulation::bulkCommit();
#elif GDN_WGMMA_AVAILABLE
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}

/// Waits until this thread's bulk groups are complete (their writes done).
__device__ __forceinline__ void bulkWaitAll() {
#if defined(GDN_DEVICE_EMULATION)
  emulation::bulkWait(0);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

/// Waits until at most `kPending` of this thread's bulk groups still read
/// their shared-memory sources (which may then be overwritten).
template <int kPending> __device__ __forceinline__ void bulkWaitRead() {
#if defined(GDN_DEVICE_EMULATION)
  emulation::bulkWait(kPending);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending)
               : "memory");
#endif
}

/// Copies `bytes` contiguous bytes (a multiple of 16, both ends 16-byte
/// aligned) to `shared`, completing them on `barrier`.
__device__ __forceinline__ void bulkLoad(void *shared, const void *global,
                                         unsigned bytes, uint64_t *barrier) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::bulkLoad(shared, global, bytes, barrier);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
               "bytes [%0], [%1], %2, [%3];\n" ::"r"(sharedAddress(shared)),
               "l"(global), "r"(bytes), "r"(sharedAddress(barrier))
               : "memory");
#endif
}

/// Zeroes rows `from` .. 63 of a staged 64-row tile of kColumns columns
/// (Swizzle128Tile, kColumns / 64 boxes; the rows of a partial last chunk
/// past the sequence end, which TMA read from whatever follows), with the
/// `count` threads numbered `index`.
template <int kColumns>
__device__ __forceinline__ void zeroTileRowsFrom(char *tile, int from,
                                                 int index, int count) {
  for (int i = index; i < (64 - from) * kColumns / 8; i += count) {
    const int row = from + i / (kColumns / 8);
    const int column = (i % (kColumns / 8)) * 8;
    *reinterpret_cast<uint4 *>(tile + Swizzle128Tile<64>::offset(row, column)) =
        make_uint4(0, 0, 0, 0);
  }
}

#ifndef GDN_DEVICE_EMULATION
/// A 2-D bf16 tensor map of a row-major [rows][columns] matrix with row
/// stride `rowStride` elements, boxes of 64 x 64 with 128-byte swizzling
/// (Swizzle128Tile), out-of-range rows read as zero.
inline cudaError_t encodeTensorMap2D(CUtensorMap *map, const void *base,
                                     uint64_t columns, uint64_t rows,
                                     uint64_t rowStride) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void *function = nullptr;
    cudaDriverEntryPointQueryResult found;
#if CUDART_VERSION >= 12050
    const cudaError_t error = cudaGetDriverEntryPointByVersion(
        "cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t error = cudaGetDriverEntryPoint(
        "cuTensorMapEncodeTiled", &function, cudaEnableDefault, &found);
#endif
    if (error != cudaSuccess || found != cudaDriverEntryPointSuccess)
      function = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  if (!encode)
    return cudaErrorNotSupported;
  const cuuint64_t dims[2] = {columns, rows > 0 ? rows : 1};
  const cuuint64_t strides[1] = {rowStride * 2};
  const cuuint32_t box[2] = {64, 64}, elementStrides[2] = {1, 1};
  const CUresult result = encode(
      map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims,
      strides, box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return result == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
#else
/// The emulator's tensor map of the same matrix (its TMA reads this).
inline cudaError_t encodeTensorMap2D(CUtensorMap *map, const void *base, uint64_t columns,
                                     uint64_t rows, uint64_t rowStride) {
  *map = CUtensorMap{base, columns, rows, rowStride};
  return cudaSuccess;
}
#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_TMA_CUH
