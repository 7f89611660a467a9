//===- WgmmaEmulationTest.cpp - the emulator's wgmma against the GPU's ----===//
//
// The emulator's warpgroup products (wgmma.mma_async through the helpers of
// gdn/device/wgmma.cuh: register A fragments, shared-memory descriptors with
// and without 128-byte swizzling, K-major and MN-major B) on the cases of
// test/Integration/harness/wgmma_check.cu, which checks the same helpers on
// an sm_90a GPU against a float64 product: agreeing with that product here,
// and failing where the GPU check requires the swapped descriptor offsets to
// fail, is what ties the emulation to the hardware. Also: A from a shared
// tile, the deferred semantics (accumulators read NaN until their group is
// waited for, groups retire oldest first), and stmatrix.trans as the inverse
// of ldmatrix.trans.
//
//===----------------------------------------------------------------------===//

#include "DeviceEmulator.h"

#include "gdn/device/tma.cuh"
#include "gdn/device/wgmma.cuh"
#include "wgmma_product_error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace gdn::device {
extern uint4 shared[]; // the emulated block's dynamic shared memory
} // namespace gdn::device

using namespace gdn::device;

namespace {

constexpr size_t kSharedBytes = 96 * 1024;

std::vector<__nv_bfloat16> randomBf16(size_t count, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<__nv_bfloat16> values(count);
  for (auto &x : values)
    x = __float2bfloat16_rn(uniform(random));
  return values;
}

uint32_t pairOf(const __nv_bfloat16 *p) {
  return static_cast<uint32_t>(p[0].bits) | static_cast<uint32_t>(p[1].bits) << 16;
}

/// This thread's A fragment of k step `s` of a row-major 64 x K matrix.
void fragmentOf(const __nv_bfloat16 *a, int K, int s, uint32_t (&f)[4]) {
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const __nv_bfloat16 *row = a + (16 * warp + g) * K + 16 * s + 2 * t;
  f[0] = pairOf(row);
  f[1] = pairOf(row + 8 * K);
  f[2] = pairOf(row + 8);
  f[3] = pairOf(row + 8 * K + 8);
}

/// Stores this thread's accumulators of a 64 x N product into row-major d.
template <int N> void storeAccumulators(const float (&acc)[N / 2], float *d) {
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  for (int j = 0; j < N / 8; ++j)
    for (int e = 0; e < 4; ++e)
      d[(16 * warp + g + 8 * (e / 2)) * N + 8 * j + 2 * t + e % 2] = acc[4 * j + e];
}

/// wgmma_check.cu's product: D (64 x N) = A (64 x K) B with B given
/// row-major as [N][K] (kTranspose = 0) or [K][N] (kTranspose = 1), staged
/// into a core-matrix or swizzled tile and read through a descriptor with
/// the given offsets.
template <int N, int K, int kTranspose, bool kSwizzle>
void productBody(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *d,
                 uint32_t leading, uint32_t stride) {
  constexpr int kRows = kTranspose ? K : N, kColumns = kTranspose ? N : K;
  using Tile = CoreMatrixTile<kRows, kColumns>;
  using Swizzled = Swizzle128Tile<kRows>;
  char *tile = reinterpret_cast<char *>(shared);
  for (size_t i = threadIdx.x; i < kSharedBytes / 16; i += blockDim.x)
    shared[i] = make_uint4(0, 0, 0, 0);
  __syncthreads(); // zeroed everywhere before any tile row lands
  for (int i = threadIdx.x; i < kRows * kColumns / 8; i += blockDim.x) {
    const int row = i / (kColumns / 8), column = (i % (kColumns / 8)) * 8;
    std::memcpy(tile + (kSwizzle ? Swizzled::offset(row, column) : Tile::offset(row, column)),
                b + row * kColumns + column, 16);
  }
  fenceSharedForAsyncProxy();
  __syncthreads();
  float acc[N / 2];
  const uint32_t step = kTranspose ? Tile::kMNMajorStep : Tile::kKMajorStep;
  uint32_t fragments[K / 16][4];
  for (int s = 0; s < K / 16; ++s)
    fragmentOf(a, K, s, fragments[s]);
  wgmmaFence();
  for (int s = 0; s < K / 16; ++s) {
    const uint64_t descriptor =
        kSwizzle ? swizzledDescriptor(tile + (kTranspose ? s * Swizzled::kMNMajorStep
                                                         : Swizzled::kMajorStep(s)),
                                      leading, stride)
                 : matrixDescriptor(tile + s * step, leading, stride);
    wgmmaM64NK16<N, kTranspose>(acc, fragments[s], descriptor, s > 0);
  }
  wgmmaCommit();
  wgmmaWait<0>();
  wgmmaSettle(acc);
  storeAccumulators<N>(acc, d);
}

/// Relative RMS error of the emulated product against float64.
template <int N, int K, int kTranspose, bool kSwizzle>
double emulatedProductError(uint32_t leading, uint32_t stride, uint32_t seed) {
  const std::vector<__nv_bfloat16> a = randomBf16(64 * K, seed),
                                   b = randomBf16(N * K, seed + 100);
  std::vector<float> d(64 * N, NAN);
  emulation::runGrid(dim3{1, 1, 1}, 128,
                     [&] {
                       productBody<N, K, kTranspose, kSwizzle>(a.data(), b.data(), d.data(),
                                                               leading, stride);
                     },
                     kSharedBytes);
  return wgmmaProductError(d, a, b, N, K, kTranspose);
}

/// wgmma_check.cu's `check`: the core-matrix tile's offsets give the
/// product, and swapped they must not.
template <int N, int K, int kTranspose> void checkCoreMatrices() {
  constexpr int kRows = kTranspose ? K : N, kColumns = kTranspose ? N : K;
  using Tile = CoreMatrixTile<kRows, kColumns>;
  const uint32_t leading = kTranspose ? Tile::kMNMajorLeading : Tile::kKMajorLeading;
  const uint32_t stride = kTranspose ? Tile::kMNMajorStride : Tile::kKMajorStride;
  EXPECT_LT((emulatedProductError<N, K, kTranspose, false>(leading, stride, 1)), 1e-5);
  EXPECT_FALSE((emulatedProductError<N, K, kTranspose, false>(stride, leading, 2)) < 1e-2)
      << "swapped descriptor offsets gave the product too";
}

/// wgmma_check.cu's `checkSwizzled` (swapping the offsets of a K-major B
/// within one 64-column block changes nothing, there and here).
template <int N, int K, int kTranspose> void checkSwizzled() {
  constexpr int kRows = kTranspose ? K : N;
  using Tile = Swizzle128Tile<kRows>;
  const uint32_t leading = kTranspose ? Tile::kMNMajorLeading : Tile::kKMajorLeading;
  const uint32_t stride = kTranspose ? Tile::kMNMajorStride : Tile::kKMajorStride;
  EXPECT_LT((emulatedProductError<N, K, kTranspose, true>(leading, stride, 3)), 1e-5);
  if (kTranspose) {
    EXPECT_FALSE((emulatedProductError<N, K, kTranspose, true>(stride, leading, 4)) < 1e-2)
        << "swapped descriptor offsets gave the product too";
  }
}

TEST(WgmmaEmulation, CoreMatrixTilesAsTheGpuReadsThem) {
  checkCoreMatrices<64, 128, 0>();
  checkCoreMatrices<64, 64, 0>();
  checkCoreMatrices<128, 64, 1>();
  checkCoreMatrices<64, 64, 1>();
}

TEST(WgmmaEmulation, SwizzledTilesAsTheGpuReadsThem) {
  checkSwizzled<64, 128, 0>();
  checkSwizzled<64, 64, 0>();
  checkSwizzled<128, 64, 1>();
}

// Both operands in swizzled shared tiles (wgmmaSwizzledShared, the K K^T of
// the fused forward's producer): A's 64 rows of K against 32 or 64 rows of
// another tile.
template <int kCount> void checkSharedOperands() {
  constexpr int K = 128, N = 2 * kCount;
  const std::vector<__nv_bfloat16> a = randomBf16(64 * K, 5), b = randomBf16(64 * K, 6);
  std::vector<float> d(64 * N, NAN);
  using Tile = Swizzle128Tile<64>;
  emulation::runGrid(
      dim3{1, 1, 1}, 128,
      [&] {
        char *base = reinterpret_cast<char *>(shared);
        char *tileA = base, *tileB = base + 2 * Tile::kBlockBytes;
        for (int i = threadIdx.x; i < 64 * K / 8; i += blockDim.x) {
          const int row = i / (K / 8), column = (i % (K / 8)) * 8;
          std::memcpy(tileA + Tile::offset(row, column), a.data() + row * K + column, 16);
          std::memcpy(tileB + Tile::offset(row, column), b.data() + row * K + column, 16);
        }
        __syncthreads();
        float acc[kCount];
        wgmmaSwizzledShared<K / 16, kCount>(acc, tileA, tileB, false);
        wgmmaCommit();
        wgmmaWait<0>();
        storeAccumulators<N>(acc, d.data());
      },
      kSharedBytes);
  EXPECT_LT(wgmmaProductError(d, a, b, N, K, false), 1e-5) << "N = " << N;
}

TEST(WgmmaEmulation, BothOperandsFromSwizzledTiles) {
  checkSharedOperands<16>();
  checkSharedOperands<32>();
}

// wgmmaSwizzledOperands, the chunk-gradient kernel's products: A and B
// each K-major or MN-major (transposed) in swizzled tiles, B also from
// column `firstColumn` of an MN-major tile (a descriptor that starts
// inside the 128-byte swizzle row, as K = 64 does there). Logical A is 64
// x 64 (m, k), B 64 x N (k, n); against a float64 product.
template <int N, int kTransposeA, int kTransposeB>
void checkOperandLayouts(int firstColumn) {
  constexpr int K = 64;
  const std::vector<__nv_bfloat16> a = randomBf16(64 * K, 7), b = randomBf16(K * 64, 8);
  std::vector<float> d(64 * N, NAN);
  using Tile = Swizzle128Tile<64>;
  emulation::runGrid(
      dim3{1, 1, 1}, 128,
      [&] {
        char *base = reinterpret_cast<char *>(shared);
        char *tileA = base, *tileB = base + Tile::kBlockBytes;
        if (threadIdx.x == 0)
          for (int i = 0; i < 64; ++i)
            for (int j = 0; j < 64; ++j) {
              // a is row-major (m, k); b row-major (k, n) over 64 columns.
              *reinterpret_cast<__nv_bfloat16 *>(
                  tileA + (kTransposeA ? Tile::offset(j, i) : Tile::offset(i, j))) = a[i * K + j];
              *reinterpret_cast<__nv_bfloat16 *>(
                  tileB + (kTransposeB ? Tile::offset(i, j) : Tile::offset(j, i))) = b[i * 64 + j];
            }
        __syncthreads();
        // K-major B: rows are n, so column firstColumn of the product is
        // row firstColumn of the tile; MN-major: 2 bytes per column.
        const char *startB = tileB + (kTransposeB ? 2 * firstColumn : 128 * firstColumn);
        float acc[N / 2];
        wgmmaSwizzledOperands<N, K / 16, kTransposeA, kTransposeB>(
            acc, tileA, Tile::kBlockBytes, startB, Tile::kBlockBytes, false);
        wgmmaCommit();
        wgmmaWait<0>();
        storeAccumulators<N>(acc, d.data());
      },
      kSharedBytes);
  double worst = 0.0;
  for (int i = 0; i < 64; ++i)
    for (int n = 0; n < N; ++n) {
      double want = 0.0;
      for (int k = 0; k < K; ++k)
        want += double(__bfloat162float(a[i * K + k])) *
                double(__bfloat162float(b[k * 64 + firstColumn + n]));
      worst = std::max(worst, std::fabs(d[i * N + n] - want));
    }
  EXPECT_LT(worst, 1e-4) << "N = " << N << ", transposed A " << kTransposeA << ", B "
                         << kTransposeB << ", from column " << firstColumn;
}

TEST(WgmmaEmulation, OperandsKMajorOrMNMajorFromSharedTiles) {
  checkOperandLayouts<64, 0, 0>(0);
  checkOperandLayouts<64, 1, 0>(0);
  checkOperandLayouts<64, 0, 1>(0);
  checkOperandLayouts<64, 1, 1>(0);
  checkOperandLayouts<32, 0, 0>(32);
  checkOperandLayouts<32, 1, 1>(32);
}

// A product's accumulators read NaN from its issue to the wait that
// retires its group, and groups retire oldest first: a kernel that reads
// them early, or waits for too few groups, gets NaN, not a plausible value.
TEST(WgmmaEmulation, AccumulatorsReadNaNUntilTheirGroupRetires) {
  const std::vector<__nv_bfloat16> a = randomBf16(64 * 16, 7), b = randomBf16(64 * 16, 8);
  std::vector<int> earlyFinite(128), secondAfterFirstWait(128), allAfterLastWait(128);
  using Tile = CoreMatrixTile<64, 16>;
  emulation::runGrid(
      dim3{1, 1, 1}, 128,
      [&] {
        char *tile = reinterpret_cast<char *>(shared);
        for (int i = threadIdx.x; i < 64 * 16 / 8; i += blockDim.x) {
          const int row = i / 2, column = (i % 2) * 8;
          std::memcpy(tile + Tile::offset(row, column), b.data() + row * 16 + column, 16);
        }
        __syncthreads();
        uint32_t f[4];
        fragmentOf(a.data(), 16, 0, f);
        const uint64_t desc =
            matrixDescriptor(tile, Tile::kKMajorLeading, Tile::kKMajorStride);
        float first[32], second[32];
        for (float &x : first)
          x = 1.0f;
        wgmmaFence();
        wgmmaM64NK16<64, 0>(first, f, desc, 1);
        wgmmaCommit();
        wgmmaM64NK16<64, 0>(second, f, desc, 0);
        wgmmaCommit();
        bool finite = false;
        for (float x : first)
          finite |= std::isfinite(x);
        earlyFinite[threadIdx.x] = finite;
        wgmmaWait<1>();
        bool secondFinite = false;
        for (float x : second)
          secondFinite |= std::isfinite(x);
        secondAfterFirstWait[threadIdx.x] = secondFinite;
        wgmmaWait<0>();
        bool all = true;
        for (int i = 0; i < 32; ++i)
          all &= std::isfinite(first[i]) && std::isfinite(second[i]) &&
                 std::fabs(first[i] - 1.0f - second[i]) < 1e-5f;
        allAfterLastWait[threadIdx.x] = all;
      },
      kSharedBytes);
  for (int t = 0; t < 128; ++t) {
    EXPECT_FALSE(earlyFinite[t]) << "thread " << t;
    EXPECT_FALSE(secondAfterFirstWait[t]) << "thread " << t;
    EXPECT_TRUE(allAfterLastWait[t]) << "thread " << t;
  }
}

// stmatrix.trans writes what ldmatrix.trans reads back: four 8 x 8
// matrices, each lane's registers round-tripped.
TEST(WgmmaEmulation, StoreMatricesTransposedInvertsLoadTransposed) {
  std::vector<int> same(32);
  emulation::runGrid(
      dim3{1, 1, 1}, 32,
      [&] {
        __nv_bfloat16 *base = reinterpret_cast<__nv_bfloat16 *>(shared);
        const int lane = threadIdx.x;
        // Matrix i at rows of 24 elements (48 bytes: 16-byte aligned rows
        // that are not adjacent), 8 rows apart.
        __nv_bfloat16 *row = base + (8 * (lane / 8) + lane % 8) * 24;
        uint32_t r[4], back[4];
        for (int i = 0; i < 4; ++i)
          r[i] = 0x10001u * static_cast<uint32_t>(lane) + (static_cast<uint32_t>(i) << 8) +
                 (1u << 16);
        storeMatricesTransposed(row, r);
        __syncwarp();
        loadMatrices<true>(back, row);
        same[lane] = back[0] == r[0] && back[1] == r[1] && back[2] == r[2] && back[3] == r[3];
      },
      kSharedBytes);
  for (int lane = 0; lane < 32; ++lane)
    EXPECT_TRUE(same[lane]) << "lane " << lane;
}

// A TMA store reads its box only when a wait of the issuing thread
// retires its group, the latest the hardware may: a box rewritten before
// that wait is stored rewritten, groups retire oldest first, each element
// lands where Swizzle128Tile put it, and elements past the map's bounds
// are not written.
TEST(TmaEmulation, StoresReadTheirBoxWhenTheWaitRetiresThem) {
  constexpr int kRows = 100, kColumns = 70;
  std::vector<uint16_t> global(kRows * kColumns, 0), afterFirstWait, afterBoth;
  CUtensorMap map;
  ASSERT_EQ(encodeTensorMap2D(&map, global.data(), kColumns, kRows, kColumns), cudaSuccess);
  // Element (r, c) of box `tag`: distinct within and across boxes.
  auto value = [](int tag, int r, int c) { return uint16_t(4096 * tag + 64 * r + c); };
  emulation::runGrid(
      dim3{1, 1, 1}, 1,
      [&] {
        char *first = reinterpret_cast<char *>(shared), *second = first + 8192;
        auto fill = [&](char *box, int tag) {
          for (int r = 0; r < 64; ++r)
            for (int c = 0; c < 64; ++c) {
              const uint16_t v = value(tag, r, c);
              std::memcpy(box + Swizzle128Tile<64>::offset(r, c), &v, 2);
            }
        };
        fill(first, 1);
        tmaStore2D(&map, 0, 0, first);
        bulkCommit();
        fill(first, 2); // before the wait: what the store reads
        fill(second, 3);
        tmaStore2D(&map, 6, 40, second); // rows 40 .. 99, columns 6 .. 69 in bounds
        bulkCommit();
        fill(second, 4);
        bulkWaitRead<1>(); // retires the first group only
        afterFirstWait = global;
        bulkWaitAll();
        afterBoth = global;
      },
      kSharedBytes);
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kColumns; ++c) {
      const bool inFirst = r < 64 && c < 64, inSecond = r >= 40 && c >= 6;
      const uint16_t first = inFirst ? value(2, r, c) : 0;
      ASSERT_EQ(afterFirstWait[r * kColumns + c], first) << "row " << r << " column " << c;
      ASSERT_EQ(afterBoth[r * kColumns + c], inSecond ? value(4, r - 40, c - 6) : first)
          << "row " << r << " column " << c;
    }
}

// A thread that exits with a TMA store it never waited for breaks the
// rules (its box may be gone before the store reads it).
TEST(TmaEmulationDeathTest, AThreadExitingWithAStoreNotWaitedForFails) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint16_t> global(64 * 64, 0);
  CUtensorMap map;
  ASSERT_EQ(encodeTensorMap2D(&map, global.data(), 64, 64, 64), cudaSuccess);
  EXPECT_DEATH(emulation::runGrid(
                   dim3{1, 1, 1}, 1,
                   [&] {
                     tmaStore2D(&map, 0, 0, shared);
                     bulkCommit();
                   },
                   kSharedBytes),
               "TMA stores it did not wait for");
}

} // namespace
