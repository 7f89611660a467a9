//===- packing.cuh - packed-sequence metadata on the device -----*- CUDA -*-===//
//
// Builds what the kernels need from cu_seqlens (and cu_padded) without a host
// synchronisation: a validation status (the rules of SEMANTICS.md, the first
// violation recorded with its index and value) and the sequence of every
// buffer row (-1 for padding). Kernels that find the status set write NaN
// instead of results, so invalid metadata can never pass for a result; the
// host reads the status when it chooses to (gdnDescribeStatus).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_PACKING_CUH
#define GDN_DEVICE_PACKING_CUH

#include "gdn/runtime/abi.h"

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

/// Workspace: the status record, then one int32 per buffer row.
struct PackingWorkspace {
  gdn_status_t *status;
  int32_t *tokenSeq;

  static constexpr size_t kStatusBytes = 256;
  static size_t bytes(int64_t bufferTokens) {
    return kStatusBytes + sizeof(int32_t) * static_cast<size_t>(bufferTokens);
  }
  static PackingWorkspace carve(void *base) {
    char *bytes = static_cast<char *>(base);
    return {reinterpret_cast<gdn_status_t *>(bytes),
            reinterpret_cast<int32_t *>(bytes + kStatusBytes)};
  }
};

#ifndef GDN_DEVICE_EMULATION // host emulation: the metadata comes from the test

/// One violation as a sortable key: lower index first, cu_seqlens before
/// cu_padded, so the reported violation does not depend on thread timing.
__device__ __forceinline__ long long violationKey(int32_t index, int32_t padded,
                                                  int32_t code) {
  return (static_cast<long long>(index) << 8) | (padded << 4) | code;
}

/// Builds the metadata in one launch: on the H200 a launch costs the host
/// more time (5-6 us, docs/performance.md, 2026-11-30) than validation and
/// the row table take on the GPU, and the prologue waits for both. Every
/// block checks all offsets, so that no block writes a table row unless they
/// are valid (hostile offsets could otherwise make the writes go anywhere);
/// block 0 records the first violation, or OK. Then each block writes the
/// rows of its sequences: tokenSeq[row] = the sequence whose real tokens
/// include `row`, or -1 for padding.
__global__ void buildPackingKernel(PackingView p, gdn_status_t *status,
                                   int32_t *tokenSeq) {
  __shared__ unsigned long long firstKey;
  if (threadIdx.x == 0)
    firstKey = ~0ull;
  __syncthreads();
  const int32_t n = p.numSeqs;
  if (n < 0) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      gdn_status_t empty = {};
      empty.code = GDN_STATUS_NO_OFFSETS;
      *status = empty;
    }
    return;
  }
  for (int32_t i = threadIdx.x; i <= n; i += blockDim.x) {
    for (int32_t padded = 0; padded < 2; ++padded) {
      const int32_t *cu = padded ? p.cuPadded : p.cuSeqlens;
      if (!cu)
        continue;
      int32_t code = GDN_STATUS_OK;
      if (i == 0 && cu[0] != 0)
        code = GDN_STATUS_FIRST_NOT_ZERO;
      else if (i > 0 && cu[i] < cu[i - 1])
        code = GDN_STATUS_DECREASING;
      else if (i == n && (padded || !p.cuPadded) && cu[n] != p.bufferTokens)
        code = GDN_STATUS_WRONG_TOTAL;
      if (code != GDN_STATUS_OK)
        atomicMin(&firstKey, static_cast<unsigned long long>(
                                 violationKey(i, padded, code)));
    }
    // In int64: differences of hostile int32 offsets can overflow.
    if (p.cuPadded && i < n &&
        static_cast<int64_t>(p.cuSeqlens[i + 1]) - p.cuSeqlens[i] >
            static_cast<int64_t>(p.cuPadded[i + 1]) - p.cuPadded[i])
      atomicMin(&firstKey, static_cast<unsigned long long>(
                               violationKey(i, 0, GDN_STATUS_SLOT_TOO_SMALL)));
  }
  __syncthreads();
  const unsigned long long first = firstKey;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    gdn_status_t result = {};
    if (first != ~0ull) {
      result.code = static_cast<int32_t>(first & 0xf);
      result.padded = static_cast<int32_t>((first >> 4) & 0xf);
      result.index = static_cast<int32_t>(first >> 8);
      const int32_t *cu = result.padded ? p.cuPadded : p.cuSeqlens;
      const int32_t i = result.index;
      switch (result.code) {
      case GDN_STATUS_FIRST_NOT_ZERO:
        result.value = cu[0];
        result.bound = 0;
        break;
      case GDN_STATUS_DECREASING:
        result.value = cu[i];
        result.bound = cu[i - 1];
        break;
      case GDN_STATUS_WRONG_TOTAL:
        result.value = cu[i];
        result.bound = p.bufferTokens;
        break;
      case GDN_STATUS_SLOT_TOO_SMALL:
        result.value =
            static_cast<int64_t>(p.cuSeqlens[i + 1]) - p.cuSeqlens[i];
        result.bound = static_cast<int64_t>(p.cuPadded[i + 1]) - p.cuPadded[i];
        break;
      }
    }
    *status = result;
  }
  if (first != ~0ull)
    return;
  for (int32_t seq = blockIdx.x; seq < n; seq += gridDim.x) {
    const int32_t begin = p.begin(seq), length = p.length(seq);
    const int32_t slot = p.slot(seq);
    for (int32_t i = threadIdx.x; i < slot; i += blockDim.x)
      tokenSeq[begin + i] = i < length ? seq : -1;
  }
}

/// Launches validation and the row table on `stream`. Host code. Each block
/// checks all N + 1 offsets, so the blocks are capped at 128 (a sequence
/// each, then strided).
inline cudaError_t buildPackingMetadata(PackingView p, PackingWorkspace w,
                                        cudaStream_t stream) {
  const int blocks = p.numSeqs < 128 ? (p.numSeqs > 0 ? p.numSeqs : 1) : 128;
  buildPackingKernel<<<blocks, 256, 0, stream>>>(p, w.status, w.tokenSeq);
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
  if (!message || !size)
    return GDN_ERROR_INVALID_PACKING;
  const char *name = status.padded ? "cu_padded" : "cu_seqlens";
  switch (status.code) {
  case GDN_STATUS_FIRST_NOT_ZERO:
    snprintf(message, size, "%s[0] must be 0, found %lld", name,
             (long long)status.value);
    break;
  case GDN_STATUS_DECREASING:
    snprintf(message, size,
             "%s must be non-decreasing, but %s[%d] = %lld < %s[%d] = %lld",
             name, name, status.index, (long long)status.value, name,
             status.index - 1, (long long)status.bound);
    break;
  case GDN_STATUS_WRONG_TOTAL:
    // Fewer real tokens than buffer rows is what alignment padding looks
    // like when cu_padded was not passed.
    snprintf(message, size, "%s[%d] = %lld must equal the token count %lld%s",
             name, status.index, (long long)status.value,
             (long long)status.bound,
             !status.padded && status.value < status.bound
                 ? "; if the buffer holds alignment padding, pass cu_padded"
                 : "");
    break;
  case GDN_STATUS_NO_OFFSETS:
    snprintf(message, size,
             "cu_seqlens must have at least one entry (N + 1 for N sequences)");
    break;
  case GDN_STATUS_SLOT_TOO_SMALL:
    snprintf(message, size,
             "sequence %d has %lld real tokens but its padded slot holds only "
             "%lld",
             status.index, (long long)status.value, (long long)status.bound);
    break;
  default:
    snprintf(message, size, "unknown packing status %d", status.code);
  }
  return GDN_ERROR_INVALID_PACKING;
}

#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_PACKING_CUH
