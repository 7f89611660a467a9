//===- device_buffers.cuh - host vectors to and from device memory --------===//
//
// The plain copies the kernel drivers make: allocate, upload a host vector,
// download a device array, and compare two downloads byte for byte (the
// determinism and packed-versus-alone checks want the same bits, where
// == on floats would take -0 for 0 and fail on NaN).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_DEVICE_BUFFERS_CUH
#define GDN_TEST_INTEGRATION_HARNESS_DEVICE_BUFFERS_CUH

#include "cuda_check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace harness {

/// `count` elements of device memory (at least one, so that an empty
/// tensor still has a pointer to pass).
template <class T> T *deviceAlloc(size_t count) {
  T *p = nullptr;
  CUDA_OK(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
  return p;
}

/// A device copy of `host`.
template <class T> T *upload(const std::vector<T> &host) {
  T *p = deviceAlloc<T>(host.size());
  if (!host.empty())
    CUDA_OK(cudaMemcpy(p, host.data(), host.size() * sizeof(T),
                       cudaMemcpyHostToDevice));
  return p;
}

/// A host copy of `count` elements at `p`.
template <class T> std::vector<T> download(const T *p, size_t count) {
  std::vector<T> host(count);
  if (count)
    CUDA_OK(
        cudaMemcpy(host.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

/// Byte equality (== on bf16 compares values: NaN != NaN, -0 == 0).
template <class T>
bool sameBytes(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

} // namespace harness

#endif // GDN_TEST_INTEGRATION_HARNESS_DEVICE_BUFFERS_CUH
