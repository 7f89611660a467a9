//===- wgmma_product_error.h - a 64 x N product against float64 -----------===//
//
// The measure both wgmma layout checks use: wgmma_check.cu on the GPU and
// its emulated twin (unittests/DeviceEmulation/WgmmaEmulationTest.cpp).
// Host code; __nv_bfloat16 and __bfloat162float come from cuda_bf16.h or
// the emulator's shim.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_HARNESS_WGMMA_PRODUCT_ERROR_H
#define GDN_HARNESS_WGMMA_PRODUCT_ERROR_H

#include <cmath>
#include <vector>

/// Relative RMS error of d (64 x N, row-major) against the float64 product
/// of A (64 x K, row-major) and B, given as [N][K] or, transposed, [K][N];
/// a value that is not finite counts as a huge error.
inline double wgmmaProductError(const std::vector<float> &d,
                                const std::vector<__nv_bfloat16> &a,
                                const std::vector<__nv_bfloat16> &b, int N, int K,
                                bool transposed) {
  double error = 0, norm = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < N; ++n) {
      double expected = 0;
      for (int k = 0; k < K; ++k)
        expected += double(__bfloat162float(a[m * K + k])) *
                    __bfloat162float(transposed ? b[k * N + n] : b[n * K + k]);
      const double diff = d[m * N + n] - expected;
      error += std::isfinite(diff) ? diff * diff : 1e30;
      norm += expected * expected;
    }
  return std::sqrt(error / norm);
}

#endif // GDN_HARNESS_WGMMA_PRODUCT_ERROR_H
