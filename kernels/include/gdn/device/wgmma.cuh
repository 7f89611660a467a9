//===- wgmma.cuh - warpgroup-level bf16 tensor-core products -----*- CUDA
//-*-===//
//
// Hopper's wgmma.mma_async (sm_90a only) with the A operand in registers and
// the B operand in shared memory, fp32 accumulation: the building blocks of
// the delta-rule scan's wgmma variant (delta_rule_wgmma.cuh). A warpgroup
// is four consecutive warps (128 threads); every wgmma instruction is
// issued by all of them together and computes a 64 x N tile, warp w of the
// group owning rows 16 w .. 16 w + 15.
//
// Register layouts (PTX ISA, "Register Fragments" of wgmma .m64nNk16), per
// warp, with g = lane / 4 and t = lane % 4:
//   D (16 x N fp32, N / 2 registers): d[4 j + 0..1] = D[g][8 j + 2 t ..+1],
//       d[4 j + 2..3] = D[g + 8][8 j + 2 t ..+1], j = 0 .. N / 8 - 1;
//   A (16 x 16 bf16, four registers of two): as mma.sync m16n8k16's A,
//       a[0] = A[g][2t..], a[1] = A[g+8][2t..], a[2] = A[g][2t+8..],
//       a[3] = A[g+8][2t+8..].
// So columns 16 s .. 16 s + 15 of an accumulator are, converted to bf16,
// the A fragment of k step s of a following product (accumulatorToA):
// intermediate results feed the next product without shared memory.
//
// Shared-memory operands use the layout without swizzling: 8 x 8 "core
// matrices" of 8 rows of 16 contiguous bytes (128 contiguous bytes each).
// CoreMatrixTile places a row-major R x C bf16 tile that way (the 16-byte
// pieces of one row 128 bytes apart, the 8-row groups C * 16 bytes apart),
// so cp.async can stage global rows into it 16 bytes at a time. A tile with
// rows = n and columns = k is a K-major B (descriptor: leading = 128 bytes
// between core matrices along k, stride = C * 16 along n); a tile with
// rows = k and columns = n is an MN-major B read with the transpose bit
// (leading = C * 16 along k, stride = 128 along n).
// Swizzle128Tile is the 128-byte-swizzled layout TMA writes (what the scan
// uses). `test/Integration/harness/wgmma_check.cu` checks every layout,
// K-major and MN-major, against a CPU product on the GPU.
//
// GDN_DEVICE_EMULATION: the products, commits, waits and stmatrix are the
// host emulator's warpgroup collectives (unittests/DeviceEmulation), which
// decode the same descriptors and defer each product to the wait that
// retires it, as the hardware does.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_WGMMA_CUH
#define GDN_DEVICE_WGMMA_CUH

#include "gdn/device/mma.cuh"

#include <stdint.h>

// wgmma exists only in the arch-specific sm_90a target. Elsewhere the
// products and the fence trap and the other helpers do nothing; a kernel
// built on them refuses such a target at compile time (the wgmma scan's
// static_assert), so these bodies only keep other targets compiling.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GDN_WGMMA_AVAILABLE 1
#else
#define GDN_WGMMA_AVAILABLE 0
#endif

namespace gdn {
namespace device {

/// Byte offsets of a row-major kRows x kColumns bf16 tile stored as core
/// matrices (see the file comment).
template <int kRows, int kColumns> struct CoreMatrixTile {
  static_assert(kRows % 8 == 0 && kColumns % 8 == 0,
                "core-matrix tiles are whole 8 x 8 matrices");
  static constexpr int kBytes = kRows * kColumns * 2;
  static constexpr int kRowGroupBytes = kColumns * 16;
  /// Offset of the 16-byte piece holding columns column .. column + 7.
  __device__ __forceinline__ static constexpr int offset(int row, int column) {
    return (row / 8) * kRowGroupBytes + (column / 8) * 128 + (row % 8) * 16 +
           (column % 8) * 2;
  }
  /// Descriptor fields of this tile read as a K-major B (rows = n).
  static constexpr uint32_t kKMajorLeading = 128, kKMajorStride = kRowGroupBytes;
  /// Bytes one k16 step advances the K-major start address.
  static constexpr uint32_t kKMajorStep = 256;
  /// ... and read as an MN-major B (rows = k, transposed).
  static constexpr uint32_t kMNMajorLeading = kRowGroupBytes, kMNMajorStride = 128;
  static constexpr uint32_t kMNMajorStep = 2 * kRowGroupBytes;
};

/// The 64-bit shared-memory matrix descriptor: start address, leading and
/// stride byte offsets (each >> 4, 14 bits), base offset 0, no swizzle.
__device__ __forceinline__ uint64_t matrixDescriptor(const void *shared,
                                                     uint32_t leadingBytes,
                                                     uint32_t strideBytes) {
  const uint32_t address =
      static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  return static_cast<uint64_t>((address & 0x3ffff) >> 4) |
         static_cast<uint64_t>((leadingBytes >> 4) & 0x3fff) << 16 |
         static_cast<uint64_t>((strideBytes >> 4) & 0x3fff) << 32;
}

/// Tiles written by TMA with 128-byte swizzling: rows of 128 bytes (64
/// bf16), the 16-byte piece p of row r stored at piece p ^ (r % 8), blocks
/// of 8 rows (1024 bytes, 1024-byte aligned) repeating the pattern. A tile
/// wider than 64 columns is several such 64-column blocks, kBlockBytes
/// apart. As a K-major B (rows = n) a k16 step is 32 bytes into the row
/// (the hardware applies the XOR to the address it forms); as an MN-major
/// B (rows = k) the 64-column blocks are the leading offset and 8-row
/// groups the stride.
template <int kRows> struct Swizzle128Tile {
  static constexpr int kBlockBytes = kRows * 128;
  /// Byte offset of element (row, column).
  /// (Unsigned arithmetic: signed division and remainder by powers of two
  /// cost sign fix-ups on every call with run-time indices.)
  __device__ __forceinline__ static constexpr int offset(int row, int column) {
    const unsigned r = row, c = column;
    return static_cast<int>((c / 64) * kBlockBytes + r * 128 +
                            ((((c % 64) / 8) ^ (r % 8)) * 16) + (c % 8) * 2);
  }
  /// K-major B: k16 step s starts at block (16 s / 64), + 32 (s % 4) bytes.
  __device__ __forceinline__ static constexpr int kMajorStep(int step) {
    return (step / 4) * kBlockBytes + (step % 4) * 32;
  }
  static constexpr uint32_t kKMajorLeading = 16, kKMajorStride = 1024;
  /// MN-major B: k16 step s (rows 16 s ..) starts 2048 s bytes in.
  static constexpr uint32_t kMNMajorLeading = kBlockBytes, kMNMajorStride = 1024;
  static constexpr uint32_t kMNMajorStep = 2048;
};

/// matrixDescriptor with 128-byte swizzling (layout type 1, bits 62-63).
__device__ __forceinline__ uint64_t swizzledDescriptor(const void *shared,
                                                       uint32_t leadingBytes,
                                                       uint32_t strideBytes) {
  return matrixDescriptor(shared, leadingBytes, strideBytes) |
         (static_cast<uint64_t>(1) << 62);
}

/// Descriptor `d` with its start address moved `bytes` (a multiple of 16)
/// further: one 32-bit add to the address field (bits 0-13, the address >>
/// 4), which cannot carry out of the field while shared addresses stay
/// below 256 KiB. The k steps of a product take their descriptors so:
/// built from the address each time, every wgmma waited behind five
/// dependent uniform instructions (a fifth of the wgmma scan's issued
/// instructions, as ncu counted them).
__device__ __forceinline__ uint64_t advanceDescriptor(uint64_t d,
                                                      uint32_t bytes) {
  const uint32_t low = static_cast<uint32_t>(d) + (bytes >> 4);
  return (d & 0xffffffff00000000ull) | low;
}

/// Dynamic shared memory `raw` rounded up to the next 1024-byte boundary
/// of the shared window, where 128-byte swizzling repeats (TMA's pattern
/// and wgmma's then agree). Done as pointer arithmetic on `raw`, so that
/// the compiler still knows the result is shared memory: rounding through
/// an integer turned every access through it into a generic load or store
/// (LD.E/ST.E in the SASS instead of LDS/STS).
__device__ __forceinline__ char *alignSharedTo1024(void *raw) {
#ifdef GDN_DEVICE_EMULATION
  // The emulator runs a cluster's blocks at once, each with its own copy.
  raw = emulation::thisBlockShared(raw);
#endif
  char *bytes = static_cast<char *>(raw);
  const uint32_t address =
      static_cast<uint32_t>(__cvta_generic_to_shared(bytes));
  return bytes + ((1024 - address % 1024) % 1024);
}

/// Orders this thread's register writes of A fragments and accumulators
/// before the wgmma instructions that read them.
__device__ __forceinline__ void wgmmaFence() {
#if defined(GDN_DEVICE_EMULATION)
  // The emulator's products read registers at issue: nothing to order.
#elif GDN_WGMMA_AVAILABLE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

/// Closes the group of wgmma instructions issued since the last commit.
__device__ __forceinline__ void wgmmaCommit() {
#if defined(GDN_DEVICE_EMULATION)
  emulation::wgmmaCommit();
#elif GDN_WGMMA_AVAILABLE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

/// Waits until at most kPending committed groups are in flight.
template <int kPending> __device__ __forceinline__ void wgmmaWait() {
#if defined(GDN_DEVICE_EMULATION)
  emulation::wgmmaWait(kPending);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending)
               : "memory");
#endif
}

/// Makes this thread's generic-proxy writes of shared memory (stores,
/// cp.async) visible to the async proxy that wgmma reads through; a barrier
/// after it publishes them to the whole block.
__device__ __forceinline__ void fenceSharedForAsyncProxy() {
#if GDN_WGMMA_AVAILABLE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// Pins accumulator registers after a wgmmaWait: the compiler sees them
/// rewritten here, so no read of them moves above the wait.
template <int kCount>
__device__ __forceinline__ void wgmmaSettle(float (&d)[kCount]) {
#ifndef GDN_DEVICE_EMULATION
#pragma unroll
  for (int i = 0; i < kCount; ++i)
    asm volatile("" : "+f"(d[i])::"memory");
#endif
}

/// The bf16 A fragment of k step `step` (columns 16 step .. + 15) of a
/// 64 x N fp32 accumulator (see the file comment for the layouts).
template <int kCount>
__device__ __forceinline__ void accumulatorToA(const float (&d)[kCount],
                                               int step, uint32_t (&a)[4]) {
  a[0] = packBf16(d[8 * step + 0], d[8 * step + 1]);
  a[1] = packBf16(d[8 * step + 2], d[8 * step + 3]);
  a[2] = packBf16(d[8 * step + 4], d[8 * step + 5]);
  a[3] = packBf16(d[8 * step + 6], d[8 * step + 7]);
}

/// stmatrix.m8n8.x4.trans.b16 (sm_90): the inverse of
/// loadMatrices<true>. Lane l supplies `row`, the address of row l % 8 of
/// matrix l / 8; register i of lane l holds the elements that go to rows
/// 2 (l % 4) .. + 1, column l / 4 of matrix i (an accumulator pair of row
/// l / 4 lands transposed).
__device__ __forceinline__ void storeMatricesTransposed(__nv_bfloat16 *row,
                                                        const uint32_t (&r)[4]) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::storeMatricesTransposed(row, r);
#elif GDN_WGMMA_AVAILABLE
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], "
               "{%1, %2, %3, %4};\n" ::"r"(address),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#else
  __trap();
#endif
}

#if defined(GDN_DEVICE_EMULATION)
template <int kTransposeB>
__device__ __forceinline__ void wgmmaM64N64K16(float (&d)[32], const uint32_t (&a)[4],
                                               uint64_t descB, int accumulate) {
  emulation::wgmmaIssue(d, 64, a, 0, descB, kTransposeB, accumulate);
}
template <int kTransposeB>
__device__ __forceinline__ void wgmmaM64N128K16(float (&d)[64], const uint32_t (&a)[4],
                                                uint64_t descB, int accumulate) {
  emulation::wgmmaIssue(d, 128, a, 0, descB, kTransposeB, accumulate);
}
template <int kTransposeA = 0, int kTransposeB = 0>
__device__ __forceinline__ void wgmmaM64N32K16Shared(float (&d)[16], uint64_t descA,
                                                     uint64_t descB, int accumulate) {
  emulation::wgmmaIssue(d, 32, nullptr, descA, descB, kTransposeB, accumulate, kTransposeA);
}
template <int kTransposeA = 0, int kTransposeB = 0>
__device__ __forceinline__ void wgmmaM64N64K16Shared(float (&d)[32], uint64_t descA,
                                                     uint64_t descB, int accumulate) {
  emulation::wgmmaIssue(d, 64, nullptr, descA, descB, kTransposeB, accumulate, kTransposeA);
}
#elif GDN_WGMMA_AVAILABLE
/// d (+)= a * B for one k16 step: A (64 x 16) from registers, B (16 x 64)
/// from shared memory through `descB`; `accumulate` = 0 overwrites d.
template <int kTransposeB>
__device__ __forceinline__ void wgmmaM64N64K16(float (&d)[32],
                                               const uint32_t (&a)[4],
                                               uint64_t descB, int accumulate) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
               "}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n"
               "}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
                 "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                 "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
                 "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
                 "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(descB),
                 "r"(accumulate), "n"(kTransposeB));
}

/// d (+)= a * B for one k16 step: A (64 x 16) from registers, B (16 x 128)
/// from shared memory through `descB`; `accumulate` = 0 overwrites d.
template <int kTransposeB>
__device__ __forceinline__ void wgmmaM64N128K16(float (&d)[64],
                                               const uint32_t (&a)[4],
                                               uint64_t descB, int accumulate) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %69, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
               "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
               "}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n"
               "}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
                 "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                 "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
                 "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
                 "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                 "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                 "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),
                 "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                 "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(descB),
                 "r"(accumulate), "n"(kTransposeB));
}

/// d (+)= A * B for one k16 step with both operands in shared memory: A (64
/// x 16) through `descA`, B (16 x 32) through `descB`, each K-major or, with
/// its transpose bit, MN-major.
template <int kTransposeA = 0, int kTransposeB = 0>
__device__ __forceinline__ void wgmmaM64N32K16Shared(float (&d)[16],
                                                     uint64_t descA,
                                                     uint64_t descB,
                                                     int accumulate) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %18, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, "
               "%14, %15"
               "}, %16, %17, p, 1, 1, %19, %20;\n"
               "}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
                 "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),
                 "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                 "+f"(d[14]), "+f"(d[15])
               : "l"(descA), "l"(descB), "r"(accumulate), "n"(kTransposeA),
                 "n"(kTransposeB));
}

/// As wgmmaM64N32K16Shared with B 16 x 64 (32 accumulators).
template <int kTransposeA = 0, int kTransposeB = 0>
__device__ __forceinline__ void wgmmaM64N64K16Shared(float (&d)[32],
                                                     uint64_t descA,
                                                     uint64_t descB,
                                                     int accumulate) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, "
               "%14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, "
               "%26, %27, %28, %29, %30, %31"
               "}, %32, %33, p, 1, 1, %35, %36;\n"
               "}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
                 "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),
                 "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                 "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                 "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
                 "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
                 "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                 "+f"(d[30]), "+f"(d[31])
               : "l"(descA), "l"(descB), "r"(accumulate), "n"(kTransposeA),
                 "n"(kTransposeB));
}
#else
template <int kTransposeA = 0, int kTransposeB = 0>
__device__ __forceinline__ void wgmmaM64N64K16Shared(float (&)[32], uint64_t,
                                                     uint64_t, int) {
  __trap();
}
template <int kTransposeB>
__device__ __forceinline__ void wgmmaM64N64K16(float (&)[32],
                                               const uint32_t (&)[4], uint64_t,
                                               int) {
  __trap();
}
template <int kTransposeB>
__device__ __forceinline__ void wgmmaM64N128K16(float (&)[64],
                                                const uint32_t (&)[4],
                                                uint64_t, int) {
  __trap();
}
template <int kTransposeA = 0, int kTransposeB = 0>
__device__ __forceinline__ void wgmmaM64N32K16Shared(float (&)[16], uint64_t,
                                                     uint64_t, int) {
  __trap();
}
#endif // GDN_WGMMA_AVAILABLE

/// One k16 step of a 64 x N product, N = 64 or 128 (see above).
template <int N, int kTransposeB>
__device__ __forceinline__ void wgmmaM64NK16(float (&d)[N / 2],
                                             const uint32_t (&a)[4],
                                             uint64_t descB, int accumulate) {
  static_assert(N == 64 || N == 128, "wgmma: N is 64 or 128 here");
  if constexpr (N == 64)
    wgmmaM64N64K16<kTransposeB>(d, a, descB, accumulate);
  else
    wgmmaM64N128K16<kTransposeB>(d, a, descB, accumulate);
}

/// acc (+)= A B over kSteps k16 steps with B in a 128-byte-swizzled tile of
/// 64 rows (Swizzle128Tile<64>): K-major (rows = n, N = 64) or, with
/// kTransposeB, MN-major (rows = k, N = the tile's columns). `accumulate`
/// false overwrites acc with the first step.
template <int N, int kSteps, int kTransposeB>
__device__ __forceinline__ void wgmmaSwizzled(float (&acc)[N / 2],
                                              const uint32_t (&a)[kSteps][4],
                                              const char *tile,
                                              bool accumulate) {
  using Tile = Swizzle128Tile<64>;
  const uint64_t first =
      kTransposeB
          ? swizzledDescriptor(tile, Tile::kMNMajorLeading,
                               Tile::kMNMajorStride)
          : swizzledDescriptor(tile, Tile::kKMajorLeading, Tile::kKMajorStride);
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
    wgmmaM64NK16<N, kTransposeB>(
        acc, a[s],
        advanceDescriptor(first, kTransposeB ? s * Tile::kMNMajorStep
                                             : Tile::kMajorStep(s)),
        accumulate || s > 0);
}

/// acc (+)= A B over kSteps k16 steps, both operands in shared memory in
/// 128-byte-swizzled tiles (Swizzle128Tile's layout; `a` and `b` may start
/// any multiple of 8 rows, or of 8 columns, into one). A has 64 rows of m, B
/// kN rows of n (32 or 64). An operand is K-major (its rows along m or n, k
/// contiguous; blocks of 64 k columns `blockBytes` apart) or, with its
/// transpose bit, MN-major (rows along k, m or n contiguous in one 64-wide
/// block: `blockBytes` is then only the descriptor's leading offset).
template <int kN, int kSteps, int kTransposeA, int kTransposeB>
__device__ __forceinline__ void
wgmmaSwizzledOperands(float (&acc)[kN / 2], const char *a, uint32_t aBlockBytes,
                      const char *b, uint32_t bBlockBytes, bool accumulate) {
  static_assert(kN == 32 || kN == 64, "wgmma: N is 32 or 64 here");
  constexpr uint32_t kMNMajorStep = Swizzle128Tile<64>::kMNMajorStep;
  auto step = [](bool mnMajor, uint32_t blockBytes, int s) -> uint32_t {
    return mnMajor ? kMNMajorStep * s : (s / 4) * blockBytes + (s % 4) * 32;
  };
  const uint64_t firstA = swizzledDescriptor(a, kTransposeA ? aBlockBytes : 16, 1024),
                 firstB = swizzledDescriptor(b, kTransposeB ? bBlockBytes : 16, 1024);
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const uint64_t descA = advanceDescriptor(firstA, step(kTransposeA, aBlockBytes, s)),
                   descB = advanceDescriptor(firstB, step(kTransposeB, bBlockBytes, s));
    if constexpr (kN == 32)
      wgmmaM64N32K16Shared<kTransposeA, kTransposeB>(acc, descA, descB, accumulate || s > 0);
    else
      wgmmaM64N64K16Shared<kTransposeA, kTransposeB>(acc, descA, descB, accumulate || s > 0);
  }
}

/// acc (+)= A B^T over kSteps k16 steps, A and B both 128-byte-swizzled
/// tiles in shared memory read K-major (rows = m and n): A 64 rows, B N =
/// 2 kCount rows (32 or 64) from `b` (a multiple of 8 rows into a
/// Swizzle128Tile<64>). E.g. half of K K^T from one staged K tile (N = 32
/// keeps a warpgroup with few registers at 16 accumulators per product:
/// with too few for its wgmma's operands, ptxas serialises every wgmma of
/// the kernel, warning C7512), or all of it (N = 64: K read once as A and
/// once as B, where two halves read A twice).
template <int kSteps, int kCount>
__device__ __forceinline__ void
wgmmaSwizzledShared(float (&acc)[kCount], const char *a, const char *b,
                    bool accumulate) {
  constexpr uint32_t kBlock = Swizzle128Tile<64>::kBlockBytes;
  wgmmaSwizzledOperands<2 * kCount, kSteps, 0, 0>(acc, a, kBlock, b, kBlock, accumulate);
}

/// This warpgroup's O^T (`out`, times `scale`) into a [token][column] bf16
/// staging tile through stmatrix.trans; `element(token, column)` is the
/// address of one element (column within the V tile, a multiple of 8 for
/// the rows stmatrix writes). Any accumulator of 64 rows x 8 kTiles
/// columns goes the same way: the scans' S^T and dS'^T (kTiles = K / 8)
/// land as S and dS', [key][column].
template <int kTiles = 8, class ElementAt>
__device__ __forceinline__ void
stageOutputTransposed(const float (&out)[4 * kTiles], float scale, int group,
                      int tid, ElementAt element) {
  const int warp = tid / 32, lane = tid % 32;
  const int transposeColumn = 64 * group + 16 * (warp % 4);
#pragma unroll
  for (int j = 0; j < kTiles; j += 2) {
    const int matrix = lane / 8;
    const uint32_t pairs[4] = {
        packBf16(scale * out[4 * j + 0], scale * out[4 * j + 1]),
        packBf16(scale * out[4 * j + 2], scale * out[4 * j + 3]),
        packBf16(scale * out[4 * j + 4], scale * out[4 * j + 5]),
        packBf16(scale * out[4 * j + 6], scale * out[4 * j + 7])};
    storeMatricesTransposed(element(8 * (j + matrix / 2) + lane % 8,
                                    transposeColumn + 8 * (matrix % 2)),
                            pairs);
  }
}

/// The chunk's `rows` real tokens of this warpgroup's 64 staged columns
/// (`element` as above) to rows chunkRow0 .. of `to` (a [token][...] bf16
/// tensor, rows `rowStride` elements apart), from column `column0`, in
/// 16-byte pieces (after a barrier of the warpgroup that follows
/// stageOutputTransposed): the fused forward's o, the wgmma reverse scan's
/// W.
template <class ElementAt>
__device__ __forceinline__ void
storeStagedRows(__nv_bfloat16 *to, int64_t rowStride, int64_t chunkRow0,
                int64_t column0, int rows, int group, int tid,
                ElementAt element) {
#pragma unroll
  for (int round = 0; round < 64 * 8 / 128; ++round) {
    const int i = tid % 128 + 128 * round;
    const int row = i / 8, column = 64 * group + (i % 8) * 8;
    if (row < rows)
      *reinterpret_cast<uint4 *>(to + (chunkRow0 + row) * rowStride + column0 +
                                 column) =
          *reinterpret_cast<const uint4 *>(element(row, column));
  }
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_WGMMA_CUH
