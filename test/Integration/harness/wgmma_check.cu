//===- wgmma_check.cu - wgmma operand layouts against a CPU product -------===//
//
// Checks the helpers of kernels/include/gdn/device/wgmma.cuh on an sm_90a
// GPU: one warpgroup computes D = A B with A (64 x K) in registers and B in
// a core-matrix shared tile, K-major (B stored as n rows of k) and MN-major
// (k rows of n, transposed), for the shapes the delta-rule scan uses, and
// compares with a float64 product of the same bf16 values. It also runs
// each product with the descriptor's leading and stride offsets swapped,
// which must fail: that shows the check can tell the two apart.
//
// Build: nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a
//          -I kernels/include -I runtime/include wgmma_check.cu
//
//===----------------------------------------------------------------------===//

#include "gdn/device/wgmma.cuh"

#include "cuda_check.h"
#include "wgmma_product_error.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace gdn::device;

namespace {

/// D (64 x N, row-major) = A (64 x K, row-major) B, B given row-major as
/// [N][K] (kTranspose = 0) or [K][N] (kTranspose = 1).
template <int N, int K, int kTranspose, bool kSwizzle = false>
__global__ void productKernel(const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                              float *d, uint32_t leading, uint32_t stride) {
  constexpr int kRows = kTranspose ? K : N, kColumns = kTranspose ? N : K;
  using Tile = CoreMatrixTile<kRows, kColumns>;
  using Swizzled = Swizzle128Tile<kRows>;
  extern __shared__ __align__(1024) uint4 shared[];
  char *tile = reinterpret_cast<char *>(shared);
  for (int i = threadIdx.x; i < 96 * 1024 / 16; i += blockDim.x)
    shared[i] = make_uint4(0, 0, 0, 0);
  __syncthreads(); // zeroed everywhere before any tile row lands
  for (int i = threadIdx.x; i < kRows * kColumns / 8; i += blockDim.x) {
    const int row = i / (kColumns / 8), column = (i % (kColumns / 8)) * 8;
    *reinterpret_cast<uint4 *>(
        tile + (kSwizzle ? Swizzled::offset(row, column)
                         : Tile::offset(row, column))) =
        *reinterpret_cast<const uint4 *>(b + row * kColumns + column);
  }
  fenceSharedForAsyncProxy();
  __syncthreads();
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4,
            t = threadIdx.x % 4;
  float acc[N / 2];
  const uint32_t step = kTranspose ? Tile::kMNMajorStep : Tile::kKMajorStep;
  // Every A fragment is in registers before the fence (a register written
  // between wgmmas would make ptxas serialise them).
  uint32_t fragments[K / 16][4];
#pragma unroll
  for (int s = 0; s < K / 16; ++s) {
    const __nv_bfloat16 *row = a + (16 * warp + g) * K + 16 * s + 2 * t;
    fragments[s][0] = loadPair(row);
    fragments[s][1] = loadPair(row + 8 * K);
    fragments[s][2] = loadPair(row + 8);
    fragments[s][3] = loadPair(row + 8 * K + 8);
  }
  wgmmaFence();
#pragma unroll
  for (int s = 0; s < K / 16; ++s) {
    const uint64_t descriptor =
        kSwizzle ? swizzledDescriptor(tile + (kTranspose
                                                  ? s * Swizzled::kMNMajorStep
                                                  : Swizzled::kMajorStep(s)),
                                      leading, stride)
                 : matrixDescriptor(tile + s * step, leading, stride);
    wgmmaM64NK16<N, kTranspose>(acc, fragments[s], descriptor, s > 0);
  }
  wgmmaCommit();
  wgmmaWait<0>();
  wgmmaSettle(acc);
  for (int j = 0; j < N / 8; ++j)
    for (int e = 0; e < 4; ++e)
      d[(16 * warp + g + 8 * (e / 2)) * N + 8 * j + 2 * t + e % 2] =
          acc[4 * j + e];
}

int failures = 0;

/// Relative RMS error of the product with the given descriptor offsets.
template <int N, int K, int kTranspose, bool kSwizzle = false>
double run(uint32_t leading, uint32_t stride, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<__nv_bfloat16> a(64 * K), b(N * K);
  for (auto &x : a)
    x = __float2bfloat16(uniform(random));
  for (auto &x : b)
    x = __float2bfloat16(uniform(random));
  __nv_bfloat16 *da, *db;
  float *dd;
  CUDA_OK(cudaMalloc(&da, a.size() * 2));
  CUDA_OK(cudaMalloc(&db, b.size() * 2));
  CUDA_OK(cudaMalloc(&dd, 64 * N * 4));
  CUDA_OK(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dd, 0xff, 64 * N * 4));
  // Shared memory well past the tile: wrong offsets then read zeros or
  // stale bytes instead of faulting, so both variants report a number.
  constexpr int kShared = 96 * 1024;
  CUDA_OK(cudaFuncSetAttribute(productKernel<N, K, kTranspose, kSwizzle>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               kShared));
  productKernel<N, K, kTranspose, kSwizzle>
      <<<1, 128, kShared>>>(da, db, dd, leading, stride);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> d(64 * N);
  CUDA_OK(cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaFree(dd));
  return wgmmaProductError(d, a, b, N, K, kTranspose);
}

template <int N, int K, int kTranspose> void check(const char *what) {
  constexpr int kRows = kTranspose ? K : N, kColumns = kTranspose ? N : K;
  using Tile = CoreMatrixTile<kRows, kColumns>;
  const uint32_t leading =
      kTranspose ? Tile::kMNMajorLeading : Tile::kKMajorLeading;
  const uint32_t stride =
      kTranspose ? Tile::kMNMajorStride : Tile::kKMajorStride;
  const double good = run<N, K, kTranspose>(leading, stride, 1);
  const double swapped = run<N, K, kTranspose>(stride, leading, 2);
  // fp32 accumulation of exact bf16 products: only the sum's rounding.
  const bool ok = good < 1e-5 && !(swapped < 1e-2);
  std::printf("%s: %s m64n%dk%d: relative RMS %.2e (offsets swapped: "
              "%.2e)\n",
              ok ? "PASS" : "FAIL", what, N, K, good, swapped);
  if (!ok)
    ++failures;
}

/// The same with a 128-byte-swizzled tile (as TMA writes it). Swapping the
/// offsets changes nothing for a K-major B within one 64-column block (the
/// leading offset is unused there), so that case checks the good offsets
/// only.
template <int N, int K, int kTranspose> void checkSwizzled(const char *what) {
  constexpr int kRows = kTranspose ? K : N;
  using Tile = Swizzle128Tile<kRows>;
  const uint32_t leading =
      kTranspose ? Tile::kMNMajorLeading : Tile::kKMajorLeading;
  const uint32_t stride =
      kTranspose ? Tile::kMNMajorStride : Tile::kKMajorStride;
  const double good = run<N, K, kTranspose, true>(leading, stride, 3);
  const double swapped = run<N, K, kTranspose, true>(stride, leading, 4);
  const bool ok = good < 1e-5 && (!kTranspose || !(swapped < 1e-2));
  std::printf("%s: %s m64n%dk%d: relative RMS %.2e (offsets swapped: "
              "%.2e)\n",
              ok ? "PASS" : "FAIL", what, N, K, good, swapped);
  if (!ok)
    ++failures;
}

} // namespace

int main() {
  // The scan's products: S^T Q^T and S^T K^T (K-major, k = 128), R M^T and
  // Vnew P^T (K-major, k = 64), the state update (decayed Vnew) K
  // (MN-major, n = 128).
  check<64, 128, 0>("K-major B, 128 columns");
  check<64, 64, 0>("K-major B, 64 columns");
  check<128, 64, 1>("MN-major B, 128 columns");
  check<64, 64, 1>("MN-major B, 64 columns");
  checkSwizzled<64, 128, 0>("swizzled K-major B, 128 columns");
  checkSwizzled<64, 64, 0>("swizzled K-major B, 64 columns");
  checkSwizzled<128, 64, 1>("swizzled MN-major B, 128 columns");
  std::printf("%s: wgmma check, %d failure(s)\n", failures ? "FAIL" : "PASS",
              failures);
  return failures ? 1 : 0;
}
