//===- cuda_check.h - stop a GPU harness at the first failed CUDA call -----===//
//
// Shared by the harnesses of this directory: a failed CUDA call prints the
// call, its place and the error, and exits with status 2 (a broken run, not
// a failed check).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_CUDA_CHECK_H
#define GDN_TEST_INTEGRATION_HARNESS_CUDA_CHECK_H

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CUDA_OK(call)                                                          \
  do {                                                                         \
    cudaError_t status_ = (call);                                              \
    if (status_ != cudaSuccess) {                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,       \
                   cudaGetErrorString(status_));                               \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

#endif // GDN_TEST_INTEGRATION_HARNESS_CUDA_CHECK_H
