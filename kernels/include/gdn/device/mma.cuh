//===- mma.cuh - warp-level bf16 tensor-core products -----------*- CUDA
//-*-===//
//
// mma.sync.m16n8k16 with bf16 operands and fp32 accumulation (sm_80 and
// later, so the same code runs on Ampere and Hopper), m16n8k8 with tf32
// operands (the prepare kernel's inverse), plus the fragment
// loads from shared memory that the delta-rule kernels use. Fragment layouts
// are those of the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating
// point type"), with g = lane / 4 and t = lane % 4:
//
//   A (16 x 16, row-major), four 32-bit registers of two bf16 (low half =
//   lower column):  a[0] = A[g][2t..2t+1]     a[1] = A[g+8][2t..2t+1]
//                   a[2] = A[g][2t+8..2t+9]   a[3] = A[g+8][2t+8..2t+9]
//   B (16 x 8, k x n), two registers:  b[0] = B[2t..2t+1][g]
//                                      b[1] = B[2t+8..2t+9][g]
//   C/D (16 x 8 fp32):  c[0..1] = C[g][2t..2t+1], c[2..3] = C[g+8][2t..2t+1]
//
// B is read from a tile stored transposed ([n][k], k contiguous). Row
// strides of (multiple of 64) + 8 elements (16-byte rows, as ldmatrix
// needs) put the 8 rows of an 8 x 8 matrix in different banks.
//
// GDN_DEVICE_EMULATION: the product is a warp-collective hook of the
// emulator, which gathers the 32 lanes' fragments and decodes them with the
// layouts above, so a kernel that builds its fragments wrongly computes
// wrong numbers on the host too.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_MMA_CUH
#define GDN_DEVICE_MMA_CUH

#include "gdn/device/common.cuh"

#include <stdint.h>
#include <string.h>

namespace gdn {
namespace device {

struct FragmentA {
  uint32_t r[4];
};
struct FragmentB {
  uint32_t r[2];
};
struct Accumulator {
  float c[4];
  __device__ __forceinline__ void fill(float value) {
    c[0] = c[1] = c[2] = c[3] = value;
  }
};

/// d = a * b + d on the tensor cores (every lane of the warp must call it).
__device__ __forceinline__ void mma16816(Accumulator &d, const FragmentA &a,
                                         const FragmentB &b) {
#ifdef GDN_DEVICE_EMULATION
  emulation::mmaBf16m16n8k16(d.c, a.r, b.r);
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d.c[0]), "+f"(d.c[1]), "+f"(d.c[2]), "+f"(d.c[3])
               : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]),
                 "r"(b.r[0]), "r"(b.r[1]));
#endif
}

/// The operands of mma.sync.m16n8k8 with tf32 inputs, one fp32 register
/// per element (rounded by toTf32). With g = lane / 4 and t = lane % 4:
///   A (16 x 8, row-major):  a[0] = A[g][t]    a[1] = A[g+8][t]
///                           a[2] = A[g][t+4]  a[3] = A[g+8][t+4]
///   B (8 x 8, k x n):       b[0] = B[t][g]    b[1] = B[t+4][g]
///   C/D: as m16n8k16's.
struct FragmentATf32 {
  uint32_t r[4];
};
struct FragmentBTf32 {
  uint32_t r[2];
};

/// `x` rounded to tf32 (10 mantissa bits, to nearest), in the 32-bit
/// register the tf32 mma reads. From sm_90 one instruction, cvt.rn (ties to
/// even; F2FP.TF32); before it cvt.rna (ties away from zero), which ptxas
/// expands to five. (The tensor cores ignore the low 13 bits of an
/// unrounded operand: truncation, a bias towards zero in every product.)
__device__ __forceinline__ uint32_t toTf32(float x) {
#ifdef GDN_DEVICE_EMULATION
  return emulation::roundToTf32(x);
#else
  uint32_t bits;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(x));
#else
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(x));
#endif
  return bits;
#endif
}

/// d = a * b + d in tf32 (every lane of the warp must call it): half the
/// depth of mma16816 with 10-bit mantissas where bf16 has 7.
__device__ __forceinline__ void mmaTf32(Accumulator &d, const FragmentATf32 &a,
                                        const FragmentBTf32 &b) {
#ifdef GDN_DEVICE_EMULATION
  emulation::mmaTf32m16n8k8(d.c, a.r, b.r);
#else
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d.c[0]), "+f"(d.c[1]), "+f"(d.c[2]), "+f"(d.c[3])
               : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]),
                 "r"(b.r[0]), "r"(b.r[1]));
#endif
}

/// Two fp32 values as one register of two bf16 (round to nearest even);
/// `low` is the element with the lower index. One conversion instruction
/// for the pair (F2FP.BF16.F32.PACK_AB), where two single conversions and
/// a byte permute cost three.
__device__ __forceinline__ uint32_t packBf16(float low, float high) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  uint32_t bits;
  memcpy(&bits, &pair, 4);
  return bits;
}

/// Two adjacent bf16 of shared memory as one register (`p` 4-byte aligned).
__device__ __forceinline__ uint32_t loadPair(const __nv_bfloat16 *p) {
  return *reinterpret_cast<const uint32_t *>(p);
}

/// Two bf16 `stride` elements apart as one register.
__device__ __forceinline__ uint32_t loadStridedPair(const __nv_bfloat16 *p,
                                                    int stride) {
  uint16_t l, h;
  memcpy(&l, p, 2);
  memcpy(&h, p + stride, 2);
  return static_cast<uint32_t>(l) | (static_cast<uint32_t>(h) << 16);
}

#ifndef GDN_MMA_LDMATRIX
/// Fragments come from shared memory through ldmatrix (one instruction per
/// four 8 x 8 matrices instead of four to eight scalar loads). Build with
/// -DGDN_MMA_LDMATRIX=0 for the plain-load path (same fragments).
#define GDN_MMA_LDMATRIX 1
#endif

/// ldmatrix.m8n8.x4(.trans).b16: lane l supplies `row`, the address of row
/// l % 8 of matrix l / 8 (16 bytes, 16-byte aligned, in shared memory);
/// register i receives, in lane l, elements (l / 4, 2 (l % 4) .. + 1) of
/// matrix i, or with kTranspose elements (2 (l % 4) .. + 1, l / 4).
template <bool kTranspose>
__device__ __forceinline__ void loadMatrices(uint32_t r[4],
                                             const __nv_bfloat16 *row) {
#ifdef GDN_DEVICE_EMULATION
  emulation::loadMatrices(r, row, kTranspose);
#else
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  if (kTranspose)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
#endif
}

/// The A fragment of the 16 x 16 tile at `tile` of a row-major matrix with
/// row stride `ld` elements. ldmatrix: matrix i is rows 8 (i & 1), columns
/// 8 (i >> 1) of the tile, i.e. a.r[i] (see the layout above).
template <bool kLdmatrix = GDN_MMA_LDMATRIX>
__device__ __forceinline__ FragmentA loadA(const __nv_bfloat16 *tile, int ld,
                                           int lane) {
  FragmentA a;
  if (kLdmatrix) {
    const int i = lane >> 3;
    loadMatrices<false>(a.r,
                        tile + ((i & 1) * 8 + (lane & 7)) * ld + (i >> 1) * 8);
    return a;
  }
  const int g = lane >> 2, t = lane & 3;
  const __nv_bfloat16 *p = tile + g * ld + 2 * t;
  a.r[0] = loadPair(p);
  a.r[1] = loadPair(p + 8 * ld);
  a.r[2] = loadPair(p + 8);
  a.r[3] = loadPair(p + 8 * ld + 8);
  return a;
}

/// The A fragment of the transpose of a row-major matrix: A[m][k] =
/// tile[k * ld + m] (the operand K^T of the state update, read from K as
/// stored). ldmatrix.trans: matrix i is rows (k) 8 (i >> 1), columns (m)
/// 8 (i & 1) of the stored tile.
template <bool kLdmatrix = GDN_MMA_LDMATRIX>
__device__ __forceinline__ FragmentA loadATransposed(const __nv_bfloat16 *tile,
                                                     int ld, int lane) {
  FragmentA a;
  if (kLdmatrix) {
    const int i = lane >> 3;
    loadMatrices<true>(a.r,
                       tile + ((i >> 1) * 8 + (lane & 7)) * ld + (i & 1) * 8);
    return a;
  }
  const int g = lane >> 2, t = lane & 3;
  const __nv_bfloat16 *p = tile + (2 * t) * ld + g;
  a.r[0] = loadStridedPair(p, ld);
  a.r[1] = loadStridedPair(p + 8, ld);
  a.r[2] = loadStridedPair(p + 8 * ld, ld);
  a.r[3] = loadStridedPair(p + 8 * ld + 8, ld);
  return a;
}

/// The B fragments of kTiles consecutive 16 x 8 (k x n) tiles whose
/// transposes start at `tileT` ([n][k] with row stride `ld`; tile j is rows
/// 8 j .. 8 j + 7). ldmatrix loads two tiles at a time: matrix i is rows
/// 8 (i >> 1), columns 8 (i & 1) of the pair.
template <int kTiles, bool kLdmatrix = GDN_MMA_LDMATRIX>
__device__ __forceinline__ void loadBTransposed(const __nv_bfloat16 *tileT,
                                                int ld, int lane,
                                                FragmentB (&b)[kTiles]) {
  if (kLdmatrix && kTiles % 2 == 0) {
    const int i = lane >> 3;
    const __nv_bfloat16 *row =
        tileT + ((i >> 1) * 8 + (lane & 7)) * ld + (i & 1) * 8;
#pragma unroll
    for (int j = 0; j < kTiles; j += 2) {
      uint32_t r[4];
      loadMatrices<false>(r, row + j * 8 * ld);
      b[j].r[0] = r[0];
      b[j].r[1] = r[1];
      b[j + 1].r[0] = r[2];
      b[j + 1].r[1] = r[3];
    }
    return;
  }
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    const __nv_bfloat16 *p = tileT + (8 * j + g) * ld + 2 * t;
    b[j].r[0] = loadPair(p);
    b[j].r[1] = loadPair(p + 8);
  }
}

/// The B fragments of kTiles consecutive 16 x 8 (k x n) tiles of a
/// row-major [k][n] matrix with row stride `ld`, starting at `tile` (tile j
/// is columns 8 j .. 8 j + 7). ldmatrix.trans loads two tiles at a time:
/// matrix i is rows (k) 8 (i & 1), columns (n) 8 (i >> 1) of the pair.
/// Accumulators store into such a matrix as 32-bit pairs (adjacent
/// columns), which is why the scan keeps its B operands this way.
template <int kTiles, bool kLdmatrix = GDN_MMA_LDMATRIX>
__device__ __forceinline__ void loadBRowMajor(const __nv_bfloat16 *tile,
                                              int ld, int lane,
                                              FragmentB (&b)[kTiles]) {
  if (kLdmatrix && kTiles % 2 == 0) {
    const int i = lane >> 3;
    const __nv_bfloat16 *row =
        tile + ((i & 1) * 8 + (lane & 7)) * ld + (i >> 1) * 8;
#pragma unroll
    for (int j = 0; j < kTiles; j += 2) {
      uint32_t r[4];
      loadMatrices<true>(r, row + j * 8);
      b[j].r[0] = r[0];
      b[j].r[1] = r[1];
      b[j + 1].r[0] = r[2];
      b[j + 1].r[1] = r[3];
    }
    return;
  }
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    const __nv_bfloat16 *p = tile + (2 * t) * ld + 8 * j + g;
    b[j].r[0] = loadStridedPair(p, ld);
    b[j].r[1] = loadStridedPair(p + 8 * ld, ld);
  }
}

/// Row and column (within the 16 x 8 tile) of accumulator element i.
__device__ __forceinline__ int accumulatorRow(int lane, int i) {
  return (lane >> 2) + (i >= 2 ? 8 : 0);
}
__device__ __forceinline__ int accumulatorColumn(int lane, int i) {
  return 2 * (lane & 3) + (i & 1);
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_MMA_CUH
