//===- GdnKernelDialect.h - the gdn_kernel dialect --------------*- C++ -*-===//
//
// Declares the kernel-level dialect: one op per generated CUDA kernel.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDNKERNEL_GDNKERNELDIALECT_H
#define GDN_DIALECT_GDNKERNEL_GDNKERNELDIALECT_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h.inc"

#define GET_OP_CLASSES
#include "gdn/Dialect/GdnKernel/IR/GdnKernelOps.h.inc"

namespace mlir::gdn::kernel {

/// Bytes of one element of a kernel tensor type (bf16/f16/f32).
int64_t getElementBytes(Type type);

/// Lanes that share one head of `headDim` elements of `elementType` when
/// each lane holds `vectorBytes` bytes; 0 when the head does not fill whole
/// vectors.
int64_t getLanesPerHead(int64_t headDim, Type elementType,
                        int64_t vectorBytes = 16);

/// True when those lanes are a power-of-two group of at most a warp (32):
/// what the kernels' L2 norms reduce over with shuffles.
bool isLaneGroup(int64_t headDim, Type elementType, int64_t vectorBytes = 16);

/// The 16-byte words of conv input (`input`'s element type) a prologue
/// thread reads per row when it owns `vectorBytes` bytes of q, k, v
/// (`activation`'s element type), as the device header's
/// prologueInputWords(): 2 for an f32 input beside 16-byte vectors of bf16,
/// 1 beside 8-byte ones; 0 when that is not a whole number of words.
int64_t getPrologueInputWords(Type input, Type activation,
                              int64_t vectorBytes);

/// Shared memory of one prologue block, as the device header's
/// prologueSharedBytes() computes it: the ring of rows in flight
/// (`inputWords` 16-byte words per thread and row, getPrologueInputWords)
/// and one 16-byte word for the offsets' check.
int64_t getPrologueSharedBytes(int64_t threads, int64_t rowsInFlight,
                               int64_t inputWords = 1);

/// Shared memory of one prologue backward block, as the device header's
/// PrologueBackwardShape::kSharedBytes: the ring of (x, dy) vectors per row
/// in flight and thread, and a word for the offsets' check.
int64_t getPrologueGradSharedBytes(int64_t threads, int64_t vectorBytes,
                                   int64_t rowsInFlight,
                                   int64_t inputUnits = 1);

/// Blocks per SM the prologue backward's register budget is set for
/// (`__launch_bounds__`), as measured on the H200 (docs/backward.md):
/// 16-byte vectors need about 250 registers, so one block; 8-byte vectors
/// one block of 512 threads, two of 256, three of 128.
int64_t getPrologueGradBlocksPerSM(int64_t threads, int64_t vectorBytes);

/// True for a kernel result that its kernel can write as the columns of a
/// wider row-major tensor, each token's features (every dimension after
/// the first) in one row, the tokens a row stride apart (a Config member
/// of the kernel): gdn_kernel.prologue_grad's mixed_qkv_grad, a_grad and
/// b_grad, gdn_kernel.gated_rmsnorm_grad's z_grad. gdn-merge-projection-
/// grads stacks such cotangents for one gradient GEMM, and the CUDA target
/// writes them in place.
bool writesStridedRows(Value result);

/// For such a result, the bytes that its first column and the row stride
/// must be multiples of: 16 where its kernel stores 16-byte vectors
/// (mixed_qkv_grad, z_grad), the element's size where it stores elements
/// (a_grad, b_grad).
int64_t getStridedRowsAlignment(Value result);

/// The most shared memory a block can opt in to on Hopper (227 KiB).
constexpr int64_t kMaxSharedBytesPerBlock = 227 * 1024;

/// True for the head dims and tiles of gdn_kernel.delta_rule that the device
/// template instantiates and the GPU suite checks: K and V in {64, 128};
/// for the mma.sync scan a value tile of 32, 64 or 128 dividing V and 1 or 2
/// scan stages, for the wgmma scan (`wgmma`) a tile of 64 or 128 and 2 or 3
/// stages.
bool isSupportedDeltaRuleTile(int64_t headDimK, int64_t headDimV,
                              int64_t valueTile, int64_t scanStages,
                              bool wgmma = false);

/// Dynamic shared memory of the mma.sync scan block for K, a V tile and a
/// stage count (DeltaRuleShape::kScanBytes of delta_rule.cuh, row-major B
/// tiles): what decides the GPUs a tile launches on (sm_90: 227 KiB, sm_80:
/// 163 KiB, sm_86 / sm_89: 99 KiB).
int64_t getDeltaRuleScanSharedBytes(int64_t headDimK, int64_t valueTile,
                                    int64_t scanStages);

/// gdn_kernel.delta_rule's warm-up bound of split chains: 2^-24 by default
/// (what the fp32 state resolves), at most 2^-126 (a bound fp32 still
/// holds as a normal number; the runtime compares logs).
constexpr int64_t kDefaultWarmupBits = 24;
constexpr int64_t kMaxWarmupBits = 126;

} // namespace mlir::gdn::kernel

#endif // GDN_DIALECT_GDNKERNEL_GDNKERNELDIALECT_H
