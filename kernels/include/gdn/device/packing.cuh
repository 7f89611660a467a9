//===- packing.cuh - packed-sequence metadata on the device -----*- CUDA -*-===//
//
// Validates cu_seqlens (and cu_padded) without a host synchronisation: the
// rules of docs/spec.md (Validation rules and messages), the first violation
// recorded with its index and value in a status record. Kernels that find the
// status set write NaN instead of results, so invalid metadata can never pass
// for a result; the host reads the status when it chooses to
// (gdnDescribeStatus). The record is written by the function's first consumer
// of the packing: the prologue kernel, which checks the offsets in every block
// itself, or else a one-block validation launch (buildPackingMetadata) in front
// of the first kernel.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_PACKING_CUH
#define GDN_DEVICE_PACKING_CUH

#include "gdn/runtime/abi.h"
#include "gdn/runtime/packing_rules.h"

#include <assert.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

namespace gdn {
namespace device {

/// Offsets of one packing, in device memory.
struct PackingView {
  const int32_t *cuSeqlens; ///< [numSeqs + 1]
  const int32_t *cuPadded;  ///< [numSeqs + 1], or null when not padded
  int32_t numSeqs;
  int32_t bufferTokens;     ///< rows of the activation buffer

  __device__ __forceinline__ int32_t begin(int32_t seq) const {
    return cuPadded ? cuPadded[seq] : cuSeqlens[seq];
  }
  __device__ __forceinline__ int32_t length(int32_t seq) const {
    return cuSeqlens[seq + 1] - cuSeqlens[seq];
  }
  __device__ __forceinline__ int32_t slot(int32_t seq) const {
    return cuPadded ? cuPadded[seq + 1] - cuPadded[seq] : length(seq);
  }
};

/// Workspace of one packing: the status record. (The prologue finds each
/// row's sequence in the offsets itself: no per-row table.)
struct PackingWorkspace {
  gdn_status_t *status;

  static constexpr size_t kStatusBytes = 256;
  static constexpr size_t bytes() { return kStatusBytes; }
  static PackingWorkspace carve(void *base) {
    return {reinterpret_cast<gdn_status_t *>(base)};
  }
};

/// What a violation is about, in the order the host checks them
/// (lib/Support/PackingValidation.cpp): cu_seqlens' entries, then
/// cu_padded's, then each sequence against its slot.
enum ViolationKind : int32_t { kInCuSeqlens = 0, kInCuPadded = 1, kInSlot = 2 };

/// One violation as a sortable key: kind first, then the lower index, so
/// the reported violation is the one the host's walk finds first and does
/// not depend on thread timing. Bits: kind at 40, index (below 2^31) at 8,
/// code below.
__device__ __forceinline__ unsigned long long
violationKey(int32_t kind, int32_t index, int32_t code) {
  return (static_cast<unsigned long long>(kind) << 40) |
         (static_cast<unsigned long long>(index) << 8) |
         static_cast<unsigned long long>(code);
}

/// Key of "no violation".
constexpr unsigned long long kNoViolation = ~0ull;

/// Checks every offset of `p` (the rules of docs/spec.md) with all threads
/// of the block and returns the key of the first violation, or kNoViolation,
/// the same in every thread. `blockKey` is one word of shared memory. Every
/// thread of the block must call it (it has two barriers). A block that
/// needs the offsets to be valid before it touches memory through them
/// (hostile offsets could make writes go anywhere) calls this first.
__device__ inline unsigned long long
findFirstViolation(const PackingView &p, unsigned long long *blockKey) {
  const int32_t n = p.numSeqs;
  if (n < 0) // uniform: no offsets to read at all
    return violationKey(kInCuSeqlens, 0, GDN_STATUS_NO_OFFSETS);
  if (threadIdx.x == 0)
    *blockKey = kNoViolation;
  __syncthreads();
  unsigned long long mine = kNoViolation;
  for (int32_t i = threadIdx.x; i <= n; i += blockDim.x) {
    for (int32_t padded = 0; padded < 2; ++padded) {
      const int32_t *cu = padded ? p.cuPadded : p.cuSeqlens;
      if (!cu)
        continue;
      // cu_seqlens ends at the buffer's rows unless cu_padded does.
      const int64_t total = padded || !p.cuPadded ? p.bufferTokens : -1;
      const int32_t code = packing::entryViolation(
          i, cu[i], i > 0 ? cu[i - 1] : 0, n, total);
      if (code != GDN_STATUS_OK)
        mine = min(mine, violationKey(padded ? kInCuPadded : kInCuSeqlens, i,
                                      code));
    }
    // In int64: differences of hostile int32 offsets can overflow.
    if (p.cuPadded && i < n &&
        static_cast<int64_t>(p.cuSeqlens[i + 1]) - p.cuSeqlens[i] >
            static_cast<int64_t>(p.cuPadded[i + 1]) - p.cuPadded[i])
      mine = min(mine, violationKey(kInSlot, i, GDN_STATUS_SLOT_TOO_SMALL));
  }
  if (mine != kNoViolation)
    atomicMin(blockKey, mine);
  __syncthreads();
  const unsigned long long first = *blockKey;
  return first;
}

/// With GDN_TRAP_INVALID_PACKING defined (gdn_torch's libraries), a
/// violation stops the kernel with a device-side assertion after printing
/// the record, instead of leaving NaN results for a later _check: the
/// caller that never reads the status (a training loop with its offsets on
/// the device) still fails loudly, at the next synchronisation, at no cost
/// when the offsets are valid (the first consumer validates them anyway).
__device__ inline void trapIfInvalid(const gdn_status_t &record) {
#if defined(GDN_TRAP_INVALID_PACKING) && !defined(GDN_DEVICE_EMULATION)
  if (record.code != GDN_STATUS_OK) {
    printf("gdn: invalid packing offsets: status %d (gdn_status_code_t) at %s "
           "index %d, value %lld, bound %lld; docs/spec.md lists the rules\n",
           static_cast<int>(record.code),
           record.padded ? "cu_padded" : "cu_seqlens",
           static_cast<int>(record.index),
           static_cast<long long>(record.value),
           static_cast<long long>(record.bound));
    assert(!"gdn: invalid packing offsets");
  }
#else
  (void)record;
#endif
}

/// The status record of violation key `first` (kNoViolation: OK), with the
/// offending value and its bound. One thread writes it.
__device__ inline void writeStatus(const PackingView &p,
                                   unsigned long long first,
                                   gdn_status_t *status) {
  gdn_status_t result = {};
  if (first != kNoViolation) {
    const int32_t code = static_cast<int32_t>(first & 0xff);
    const bool padded = (first >> 40) == kInCuPadded;
    const int32_t i = static_cast<int32_t>((first >> 8) & 0xffffffffull);
    if (code == GDN_STATUS_SLOT_TOO_SMALL) {
      result.code = code;
      result.index = i;
      result.value = static_cast<int64_t>(p.cuSeqlens[i + 1]) - p.cuSeqlens[i];
      result.bound = static_cast<int64_t>(p.cuPadded[i + 1]) - p.cuPadded[i];
    } else if (code == GDN_STATUS_NO_OFFSETS) {
      result.code = code;
    } else {
      result = packing::entryStatus(code, i, padded ? p.cuPadded : p.cuSeqlens,
                                    p.bufferTokens, padded);
    }
  }
  *status = result;
  trapIfInvalid(result);
}

#ifndef GDN_DEVICE_EMULATION // host emulation: the kernels are run directly

/// Validates the offsets and writes the status record, for functions whose
/// first consumer of the packing is not the prologue (which validates the
/// offsets itself, in every block, and writes the record from its first
/// block: docs/codegen.md). One block: it reads N + 1 offsets (twice with
/// cu_padded).
__global__ void __launch_bounds__(256)
    buildPackingKernel(PackingView p, gdn_status_t *status) {
  __shared__ unsigned long long blockKey;
  const unsigned long long first = findFirstViolation(p, &blockKey);
  if (threadIdx.x == 0)
    writeStatus(p, first, status);
}

/// Launches the validation on `stream`. Host code.
inline cudaError_t buildPackingMetadata(PackingView p, PackingWorkspace w,
                                        cudaStream_t stream) {
  buildPackingKernel<<<1, 256, 0, stream>>>(p, w.status);
  return cudaGetLastError();
}

/// Waits for `stream`, reads the status and describes a violation in
/// `message`. Returns GDN_SUCCESS or GDN_ERROR_INVALID_PACKING. This is the
/// only call that synchronises; layers need not make it.
inline int describePackingStatus(const gdn_status_t *deviceStatus,
                                 cudaStream_t stream, char *message,
                                 size_t size) {
  gdn_status_t status;
  if (cudaStreamSynchronize(stream) != cudaSuccess ||
      cudaMemcpy(&status, deviceStatus, sizeof(status),
                 cudaMemcpyDeviceToHost) != cudaSuccess) {
    if (message && size)
      snprintf(message, size, "could not read the packing status: %s",
               cudaGetErrorString(cudaGetLastError()));
    return GDN_ERROR_CUDA;
  }
  if (status.code == GDN_STATUS_OK) {
    if (message && size)
      snprintf(message, size, "ok");
    return GDN_SUCCESS;
  }
  packing::describe(status, message, size);
  return GDN_ERROR_INVALID_PACKING;
}

#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_PACKING_CUH
