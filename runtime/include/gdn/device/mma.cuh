//===- mma.cuh - warp-level bf16 tensor-core products -----------*- CUDA
//-*-===//
//
// mma.sync.m16n8k16 with bf16 operands and fp32 accumulation (sm_80 and
// later, so the same code runs on Ampere and Hopper), plus the fragment
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
// B is read from a tile stored transposed ([n][k], k contiguous), so every
// fragment register is one aligned 32-bit shared-memory load. Row strides
// of (multiple of 64) + 8 elements put the 32 lanes of a load in 32
// different banks.
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

/// Two fp32 values as one register of two bf16 (round to nearest even);
/// `low` is the element with the lower index.
__device__ __forceinline__ uint32_t packBf16(float low, float high) {
  const __nv_bfloat16 l = __float2bfloat16_rn(low);
  const __nv_bfloat16 h = __float2bfloat16_rn(high);
  uint16_t lb, hb;
  memcpy(&lb, &l, 2);
  memcpy(&hb, &h, 2);
  return static_cast<uint32_t>(lb) | (static_cast<uint32_t>(hb) << 16);
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

/// The A fragment of the 16 x 16 tile at `tile` of a row-major matrix with
/// row stride `ld` elements.
__device__ __forceinline__ FragmentA loadA(const __nv_bfloat16 *tile, int ld,
                                           int lane) {
  const int g = lane >> 2, t = lane & 3;
  const __nv_bfloat16 *p = tile + g * ld + 2 * t;
  FragmentA a;
  a.r[0] = loadPair(p);
  a.r[1] = loadPair(p + 8 * ld);
  a.r[2] = loadPair(p + 8);
  a.r[3] = loadPair(p + 8 * ld + 8);
  return a;
}

/// The A fragment of the transpose of a row-major matrix: A[m][k] =
/// tile[k * ld + m] (the operand K^T of the state update, read from K as
/// stored; each register is two 16-bit loads).
__device__ __forceinline__ FragmentA loadATransposed(const __nv_bfloat16 *tile,
                                                     int ld, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const __nv_bfloat16 *p = tile + (2 * t) * ld + g;
  FragmentA a;
  a.r[0] = loadStridedPair(p, ld);
  a.r[1] = loadStridedPair(p + 8, ld);
  a.r[2] = loadStridedPair(p + 8 * ld, ld);
  a.r[3] = loadStridedPair(p + 8 * ld + 8, ld);
  return a;
}

/// The B fragment of the 16 x 8 (k x n) tile whose transpose starts at
/// `tileT` ([n][k] with row stride `ld`).
__device__ __forceinline__ FragmentB loadBTransposed(const __nv_bfloat16 *tileT,
                                                     int ld, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const __nv_bfloat16 *p = tileT + g * ld + 2 * t;
  FragmentB b;
  b.r[0] = loadPair(p);
  b.r[1] = loadPair(p + 8);
  return b;
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
