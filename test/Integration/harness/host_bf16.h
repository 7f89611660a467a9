//===- host_bf16.h - bf16 vectors on the host -----------------------------===//
//
// The kernels read and write bf16; the host references compute in float or
// double. These convert whole vectors, rounding to nearest even as the
// kernels store.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_HOST_BF16_H
#define GDN_TEST_INTEGRATION_HARNESS_HOST_BF16_H

#include <cuda_bf16.h>

#include <vector>

namespace harness {

inline std::vector<float> toFloat(const std::vector<__nv_bfloat16> &x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = __bfloat162float(x[i]);
  return y;
}

inline std::vector<__nv_bfloat16> toBf16(const std::vector<float> &x) {
  std::vector<__nv_bfloat16> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = __float2bfloat16_rn(x[i]);
  return y;
}

} // namespace harness

#endif // GDN_TEST_INTEGRATION_HARNESS_HOST_BF16_H
