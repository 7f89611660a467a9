//===- delta_rule.cuh - the chunked gated delta rule forward ----*- CUDA
//-*-===//
//
// The forward gated delta rule of docs/spec.md over packed varlen sequences,
// in chunks of 64 tokens that never span two sequences. Two kernels:
//
// 1. deltaChunkPrepareKernel (delta_rule_prepare.cuh), fully parallel
//    over (chunk, value head; two value heads of one key head per block):
//    the chunk-local quantities that do not depend on the state.
//      G      = inclusive cumsum of g within the chunk
//      L      = strictly-lower(beta_i exp(G_i - G_j) k_i.k_j)
//      M      = (I + L)^-1 diag(beta)          (the WY transform)
//      P      = lower-with-diagonal(exp(G_i - G_j) q_i.k_j)
//    K K^T and Q K^T run on the tensor cores (mma.sync from cp.async
//    tiles; on the wgmma path, deltaChunkPrepareTmaKernel, wgmma from TMA
//    boxes); the unit-lower-triangular inverse goes by 16 x 16 blocks (fp32
//    substitution on the diagonal, tf32 products for the rest, its
//    intermediates in L's unused upper blocks). M and P go to the workspace as
//    bf16 (8 KiB each per chunk and head), G as fp32. (Where the wgmma scan
//    computes P itself, kWgmmaScanScores, or the fused block's producer
//    does, kFusedInverse = false, the prepare kernel skips Q K^T and P.)
//
// 2. deltaChunkScanKernel, one block per (sequence, value head, V tile),
//    or with split chains per segment of a sequence (ScanSegment, whose
//    block first warms its state up over the chunks before it:
//    warmupStart), sequential over the chunks, carrying the state S (K x Vt,
//    fp32) in the mma accumulators of its warps (four row groups x up to
//    four groups of 16 columns). Per chunk (rows i, j are tokens, all
//    products bf16 x bf16 -> fp32 on the tensor cores):
//      R    = V - diag(exp(G)) K S                    (bf16, shared)
//      Vnew = M R                                     (the d_t of all rows)
//      O    = scale (diag(exp(G)) Q S + P Vnew)
//      S    = exp(G_last) S + K^T diag(exp(G_last - G)) Vnew
//    This is the fused form of the WY algebra: with (I + L) Vnew =
//    diag(beta) (V - diag(exp(G)) K S) from unrolling d_t over the chunk,
//    W = M diag(exp(G)) K and U = M V are never formed, so the workspace
//    holds two 64 x 64 tiles per chunk instead of two 64 x d ones.
//    The next chunk's Q, K, V, M, P, G stream into a second stage of shared
//    memory (cp.async) while the current one is computed. The B operands
//    the warps exchange (bf16 S, R, Vnew, decayed Vnew) are row-major in
//    shared memory: pair stores from the accumulators, ldmatrix.trans loads.
//
// On sm_90a the scan can instead be deltaChunkScanWgmmaKernel
// (delta_rule_wgmma.cuh, Config::kScanWgmma): the same algebra with the
// state transposed in warpgroup accumulators and the tiles copied by TMA.
//
// Rows of a partial last chunk past the sequence end are zero in Q, K, V
// and M, and have G = G_last, so they add nothing to S and their outputs
// are never stored. Padding rows of the output (cu_padded) are written as
// zeros by the scan kernel of the padded sequence.
//
// Precision (tolerance: relative RMS 5e-3 against float64 with bf16
// inputs): every product accumulates in fp32, the state stays fp32 and the
// inverse is solved in fp32; the losses are the bf16 roundings of the mma
// operands and of o itself. A float64 model of this algorithm with one
// rounding at a time (d = 128, one sequence of 2048, the bench's input
// distributions) measured the relative RMS each adds to o / to the final
// state: o itself 1.7e-3 / -, M 1.6e-3 / 1.7e-3, P 1.6e-3 / -, Vnew in P
// Vnew 1.7e-3 / -, decayed Vnew in the update 0.3e-3 / 1.7e-3, R 0.8e-3 /
// -, S 0.3e-3 / -; all together 3.4e-3 / 2.3e-3. The emulation test sees
// 2.9e-3 to 3.3e-3 on o. If a tighter budget is ever needed, M and P are the
// cheap ones to carry as two bf16 terms (hi + lo: +12.5% of the mma each).
// FLA rounds in the same places (A, w, u, v_new, h in bf16).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_DELTA_RULE_CUH
#define GDN_DEVICE_DELTA_RULE_CUH

#include "gdn/device/common.cuh"
#include "gdn/device/mma.cuh"
#include "gdn/device/packing.cuh"

#include <math.h>
#include <stdint.h>

#include <type_traits>

namespace gdn {
namespace device {

/// Optional Config members of the scan, with their defaults:
/// - kScanStages: 2 (the next chunk streams into shared memory while this
///   one is computed) or 1 (half the staging memory, so that two blocks can
///   share an SM and overlap each other's loads instead);
/// - kScanColumnGroups: groups of four warps splitting the V tile's columns
///   (default one group per 16 columns, at most four).
GDN_OPTIONAL_CONFIG_MEMBER(ScanStagesOf, kScanStages, 2)
GDN_OPTIONAL_CONFIG_MEMBER(ScanColumnGroupsOf, kScanColumnGroups,
                           C::kValueTile / 16 < 4 ? C::kValueTile / 16 : 4)

/// - kScanRowMajorTiles: true (default) keeps the scan's B operands (S, R,
///   Vnew, decayed Vnew) row-major ([k][n]): accumulators store them as
///   bf16 pairs (one conversion and one 32-bit store per two values) and
///   ldmatrix.trans reads them; false keeps the transposed tiles of the
///   first version (one 16-bit store per value).
GDN_OPTIONAL_CONFIG_MEMBER(ScanRowMajorTilesOf, kScanRowMajorTiles, true)
/// - kPrepareSharedLower: true (default) puts the prepare kernel's fp32 L
///   over its Q and K tiles (dead once K K^T and Q K^T are in registers):
///   53 KiB instead of 87 KiB of shared memory, four blocks per SM instead
///   of two; false keeps the separate L of the first version.
GDN_OPTIONAL_CONFIG_MEMBER(PrepareSharedLowerOf, kPrepareSharedLower, true)

/// - kPrepareBlockedInverse: true (default) inverts I + L by 16 x 16
///   blocks (the diagonal blocks by forward substitution, the others by
///   tensor-core products, see invertUnitLowerBlocked); false
///   keeps the forward substitution over all 64 rows, one thread per
///   column.
GDN_OPTIONAL_CONFIG_MEMBER(PrepareBlockedInverseOf, kPrepareBlockedInverse,
                           true)
/// - kPrepareInverseTf32: true (default) runs the blocked inverse's
///   products in tf32 (one mma.m16n8k8 per 16 x 8 x 8, operands rounded to
///   10 mantissa bits: X within about 5e-5 relative RMS of float64, against
///   M's own bf16 rounding of 2^-9); false in split bf16 (hi + lo, three
///   mma.m16n8k16 per 16 x 8 x 16, about 16 bits). On the H200 tf32 took
///   the prepare kernel's instructions 6% and the forward 0.5-1.7% down
///   (docs/performance.md).
GDN_OPTIONAL_CONFIG_MEMBER(PrepareInverseTf32Of, kPrepareInverseTf32, true)
/// - kPrepareBlocksPerSM: the prepare kernel's launch-bounds occupancy
///   request (0, the default: 4 with the shared L, else none), which caps
///   its registers (4: 128 per thread).
GDN_OPTIONAL_CONFIG_MEMBER(PrepareBlocksPerSMOf, kPrepareBlocksPerSM, 0)

/// Sizes and shared-memory layout of the two kernels for one Config
/// (Element, kKeyHeads, kValueHeads, kHeadDimK, kHeadDimV, kValueTile,
/// kHasInitialState, kHasFinalState).
template <class Config> struct DeltaRuleShape {
  using Element = typename Config::Element;
  static_assert(std::is_same<Element, __nv_bfloat16>::value,
                "delta rule: only bf16 activations are supported (the "
                "products use mma.sync .bf16)");
  static constexpr int kChunk = 64;
  static constexpr int kThreads = 128; // prepare: four warps, 16 rows each
  static constexpr int kH = Config::kKeyHeads, kHV = Config::kValueHeads;
  static constexpr int kK = Config::kHeadDimK, kV = Config::kHeadDimV;
  static constexpr int kVt = Config::kValueTile;
  static_assert(kHV % kH == 0, "delta rule: value heads must be a multiple "
                               "of key heads (GQA)");
  static_assert(kK == 64 || kK == 128,
                "delta rule: key head dim must be 64 or 128 (each warp owns "
                "K/4 state rows, a multiple of the 16-row mma tile)");
  static_assert(kV == 64 || kV == 128,
                "delta rule: value head dim must be 64 or 128");
  static_assert(kVt % 16 == 0 && kV % kVt == 0,
                "delta rule: the value tile must divide V and be a multiple "
                "of 16");
  static constexpr int kValueTiles = kV / kVt;
  static constexpr int kStateTiles = kK / 4 / 16; // m tiles per warp
  // The scan splits the V tile's columns over groups of four warps (by
  // default 16 columns per group, at most four groups: 512 threads): more
  // warps hide each other's mma and barrier latency in the same shared
  // memory.
  static constexpr int kColumnGroups = ScanColumnGroupsOf<Config>::value;
  static_assert(kColumnGroups >= 1 && kColumnGroups <= 4 &&
                    kVt % (8 * kColumnGroups) == 0,
                "delta rule: 1 to 4 column groups of whole 8-column tiles");
  static constexpr int kScanStages = ScanStagesOf<Config>::value;
  static_assert(kScanStages == 1 || kScanStages == 2,
                "delta rule: the scan stages 1 or 2 chunks");
  // One stage exists so that two blocks share an SM: registers are capped
  // to make that possible (the shared memory fits, see below).
  static constexpr int kScanBlocksPerSM = kScanStages == 1 ? 2 : 1;
  static constexpr int kScanThreads = 128 * kColumnGroups;
  static constexpr int kWarpColumns = kVt / kColumnGroups;
  static constexpr int kColumnTiles = kWarpColumns / 8; // n tiles per warp

  // Row strides in elements: 16 bytes of padding per row puts the 8 rows of
  // an 8 x 8 fragment load (ldmatrix or 4-byte loads) in different banks and
  // keeps every row 16-byte aligned (ldmatrix, cp.async).
  static constexpr int kLdK = kK + 8, kLdC = kChunk + 8, kLdV = kVt + 8;
  static constexpr int kLdL = kChunk + 4; // fp32 L, 16-byte broadcast rows

  // Prepare kernel: one block per chunk and pair of value heads that share
  // a key head (GQA with an even group; one head otherwise), so K K^T and
  // Q K^T are computed once for both and the two inverses run side by side.
  static constexpr int kPrepareHeads = (kHV / kH) % 2 == 0 ? 2 : 1;
  // Q, K tiles, then per value head L (fp32), G, beta, the per-warp sums
  // and, last, P's bf16 staging tiles (not allocated when the kernel makes no
  // P). With kPrepareSharedLower, L lies over Q and K (written only after a
  // barrier that follows the last read of Q and K).
  // (Only where it fits: K = 64 with two heads keeps L apart.)
  static constexpr size_t kPrepareQ = 0;
  static constexpr size_t kPrepareK = kPrepareQ + 2 * kChunk * kLdK;
  static constexpr size_t kPrepareLowerBytes = kPrepareHeads * 4 * kChunk * kLdL;
  static constexpr size_t kPrepareQKEnd = kPrepareK + 2 * kChunk * kLdK;
  static constexpr bool kPrepareSharedLower =
      PrepareSharedLowerOf<Config>::value && kPrepareLowerBytes <= kPrepareQKEnd;
  static constexpr size_t kPrepareL = kPrepareSharedLower ? kPrepareQ
                                                          : kPrepareQKEnd;
  static constexpr size_t kPrepareG =
      kPrepareSharedLower ? kPrepareQKEnd : kPrepareL + kPrepareLowerBytes;
  // Blocks per SM the launch bounds ask for (the register cap follows);
  // without the shared L, no request (as in the first version: shared
  // memory allows two). Without P the kernel needs no staging tiles (36
  // KiB at K = 128) and runs six blocks of 80 registers: its time at mha32
  // 1 x 32768 went from 0.240 to 0.217 ms (docs/performance.md).
  // With two heads per block ptxas spills 20 bytes at 80; five blocks of
  // 96, without spills, were 1.5% slower (gqa16x32). With P,
  // 96 registers (five blocks) made it 50% slower.
  static constexpr int kPrepareBlocksPerSM =
      PrepareBlocksPerSMOf<Config>::value > 0
          ? PrepareBlocksPerSMOf<Config>::value
          : (kPrepareSharedLower ? 4 : 1);
  static constexpr int kPrepareBlocksPerSMWithoutScores =
      PrepareBlocksPerSMOf<Config>::value > 0
          ? PrepareBlocksPerSMOf<Config>::value
          : (kPrepareSharedLower ? 6 : 1);
  static constexpr size_t kPrepareBeta = kPrepareG + kPrepareHeads * 4 * kChunk;
  // The cumsum's per-warp totals (four warps), then per value head and warp
  // the sum of its rows' log expansions (logExpansion).
  static constexpr size_t kPrepareWarpTotals =
      kPrepareBeta + kPrepareHeads * 4 * kChunk;
  static constexpr size_t kPrepareExpansion = kPrepareWarpTotals + 16;
  static constexpr size_t kPrepareTile = kPrepareExpansion + kPrepareHeads * 16;
  static constexpr size_t kPrepareBytes =
      kPrepareTile + kPrepareHeads * 2 * kChunk * kLdC;
  /// The prepare kernel's shared memory with or without P.
  __host__ __device__ static constexpr size_t prepareBytes(bool scores) {
    return scores ? kPrepareBytes : kPrepareTile;
  }
  /// The same for the TMA prepare kernel: its mbarrier, and 1024 bytes to
  /// align the base for 128-byte swizzling.
  __host__ __device__ static constexpr size_t prepareTmaBytes(bool scores) {
    return prepareBytes(scores) + 16 + 1024;
  }

  // Scan kernel: kScanStages stages of {Q, K, V tile, M, P, G}, then S, R,
  // Vnew and the decayed Vnew (the B operands of the chunk's products).
  static constexpr size_t kStageQ = 0;
  static constexpr size_t kStageK = kStageQ + 2 * kChunk * kLdK;
  static constexpr size_t kStageV = kStageK + 2 * kChunk * kLdK;
  static constexpr size_t kStageM = kStageV + 2 * kChunk * kLdV;
  static constexpr size_t kStageP = kStageM + 2 * kChunk * kLdC;
  static constexpr size_t kStageG = kStageP + 2 * kChunk * kLdC;
  static constexpr size_t kStageBytes = kStageG + 4 * kChunk;
  // Row-major B tiles: S as [K][Vt], the others as [64][Vt] (row stride
  // kLdV); transposed ones: S^T as [Vt][K], the others as [Vt][64].
  static constexpr bool kRowMajorTiles = ScanRowMajorTilesOf<Config>::value;
  static constexpr int kLdState = kRowMajorTiles ? kLdV : kLdK;
  static constexpr int kLdChunkB = kRowMajorTiles ? kLdV : kLdC;
  static constexpr size_t kScanStateT = kScanStages * kStageBytes;
  static constexpr size_t kScanR =
      kScanStateT + 2 * (kRowMajorTiles ? kK * kLdV : kVt * kLdK);
  static constexpr size_t kScanChunkB =
      2 * (kRowMajorTiles ? kChunk * kLdV : kVt * kLdC);
  static constexpr size_t kScanNew = kScanR + kScanChunkB;
  static constexpr size_t kScanNewDecayed = kScanNew + kScanChunkB;
  static constexpr size_t kScanBytes = kScanNewDecayed + kScanChunkB;
  static_assert(kStageBytes % 16 == 0 && kPrepareBytes % 16 == 0,
                "shared tiles must stay 16-byte aligned");
  static_assert(kScanBytes <= 227 * 1024,
                "delta rule: the scan kernel's shared memory exceeds what "
                "sm_90 allows; use a smaller kValueTile");
};

/// Workspace tiles of every (chunk slot, value head). Chunk c of sequence s
/// has slot floor(cu_seqlens[s] / 64) + s + c: a closed form, so no kernel
/// needs a prefix sum over chunk counts. Sequences never share a slot:
/// floor(a) + ceil(b) <= floor(a + b) + 1 with a = cu[s] / 64 and b =
/// len_s / 64 says that sequence s's last slot is below s + 1's first; and
/// the last slot is below bufferTokens / 64 + numSeqs + 1.
struct DeltaRuleWorkspace {
  __nv_bfloat16 *transform; ///< M, [slots][HV][64][64]
  __nv_bfloat16 *scores;    ///< P, [slots][HV][64][64]; null when the
                            ///< scan side computes P (ScanComputesScoresOf)
  float *gateCumsum;        ///< G, [slots][HV][64]
  /// The log of a bound on the norm of the chunk's state transition,
  /// [slots][HV]: G_last plus its rows' logExpansion, what a split chain's
  /// warm-up sums (warmupStart). Written only for split launches.
  float *transitionBound;
  /// N = (I + L)^-1 itself, [slots][HV][64][64]: written by the prepare
  /// kernel only when set (the backward needs it; the forward does not).
  __nv_bfloat16 *inverse = nullptr;

  __host__ __device__ static int64_t slots(const PackingView &p) {
    return static_cast<int64_t>(p.bufferTokens) / 64 + p.numSeqs + 1;
  }
  static size_t tileBytes(int64_t slots, int valueHeads) {
    return static_cast<size_t>(slots) * valueHeads * 64 * 64 * 2;
  }
  static size_t gateBytes(int64_t slots, int valueHeads) {
    return static_cast<size_t>(slots) * valueHeads * 64 * 4;
  }
  /// Bytes for a packing (host side, before launching). withScores false:
  /// no P (the wgmma scan computes it; `scores` is then null).
  static size_t bytes(const PackingView &p, int valueHeads,
                      bool withScores = true) {
    const int64_t n = slots(p);
    return (withScores ? 2 : 1) * tileBytes(n, valueHeads) +
           gateBytes(n, valueHeads) + static_cast<size_t>(n) * valueHeads * 4;
  }
  static DeltaRuleWorkspace carve(void *base, const PackingView &p,
                                  int valueHeads, bool withScores = true) {
    char *bytes = static_cast<char *>(base);
    const size_t tiles = tileBytes(slots(p), valueHeads);
    const size_t gates = gateBytes(slots(p), valueHeads);
    const size_t allTiles = (withScores ? 2 : 1) * tiles;
    return {reinterpret_cast<__nv_bfloat16 *>(bytes),
            withScores ? reinterpret_cast<__nv_bfloat16 *>(bytes + tiles)
                       : nullptr,
            reinterpret_cast<float *>(bytes + allTiles),
            reinterpret_cast<float *>(bytes + allTiles + gates)};
  }
};

/// -24 ln 2: DeltaRuleArgs::warmupLogBound's default.
constexpr float kDefaultWarmupLogBound = -16.635532f;

template <class Config> struct DeltaRuleArgs {
  using Element = typename Config::Element;
  const Element *q, *k;      ///< [T, H, K], L2-normalised rows
  const Element *v;          ///< [T, HV, V]
  const float *g, *beta;     ///< [T, HV]; g is the per-token log decay
  const float *initialState; ///< [N, HV, K, V] or null
  float *finalState;         ///< [N, HV, K, V] or null
  Element *o;                ///< [T, HV, V]
  float scale;
  PackingView packing;
  /// The packing validation record (packing.cuh), or null when the offsets
  /// are trusted. When it holds a violation, o and the final states are
  /// NaN, never numbers computed from invalid offsets.
  const gdn_status_t *status;
  DeltaRuleWorkspace workspace;
  /// Used only by the scan instantiated for the backward (kSave): S at the
  /// start of every chunk, [slots][HV][K][V] bf16 (the bf16 values the
  /// chunk's products read), and Vnew, [buffer rows][HV][V] bf16.
  __nv_bfloat16 *savedStates = nullptr;
  __nv_bfloat16 *savedNew = nullptr;
  /// Chain splitting (the forward scan; deltaRuleSegmentChunks picks it):
  /// sequences are cut into segments of this many chunks, one scan block
  /// each, so that a few long sequences still fill the GPU. 0: one block
  /// walks a whole sequence.
  int32_t segmentChunks = 0;
  /// A segment's block starts from a zero state at the latest chunk before
  /// the segment from which the transitions of the chunks in between are
  /// bounded by exp(warmupLogBound) in norm (warmupStart): the state it
  /// leaves out reaches the segment scaled by at most that. Where no chunk
  /// qualifies it starts at the sequence's start, exactly. The default,
  /// -24 ln 2, leaves out at most 2^-24 of that state (the fp32 state's own
  /// rounding); -INFINITY makes every segment exact.
  float warmupLogBound = kDefaultWarmupLogBound;
};

/// True when the launch must not trust the offsets.
template <class Config>
__device__ __forceinline__ bool
packingInvalid(const DeltaRuleArgs<Config> &args) {
  return args.status && args.status->code != GDN_STATUS_OK;
}

/// The first slot of sequence `seq` (see DeltaRuleWorkspace), for slots of
/// `slotTokens` tokens: chunks (64), or a split chain's segments (the same
/// closed form, so segments need no prefix sum either).
__device__ __forceinline__ int64_t firstSlot(const PackingView &p, int32_t seq,
                                             int64_t slotTokens = 64) {
  return p.cuSeqlens[seq] / slotTokens + seq;
}

/// The sequence owning `slot`: the last one whose first slot is <= slot
/// (first slots strictly increase, so a binary search finds it).
__device__ __forceinline__ int32_t slotSequence(const PackingView &p,
                                                int64_t slot,
                                                int64_t slotTokens = 64) {
  int32_t low = 0, high = p.numSeqs - 1;
  while (low < high) {
    const int32_t mid = low + (high - low + 1) / 2;
    if (firstSlot(p, mid, slotTokens) <= slot)
      low = mid;
    else
      high = mid - 1;
  }
  return low;
}

constexpr float kLog2e = 1.4426950408889634f;

/// log max(1, |1 - beta |k|^2|): the log of the norm of I - beta k k^T, by
/// which one token's transition can grow the state beyond its decay exp(g).
/// Zero for unit keys and beta in [0, 2], the layer's case (l2-normalised
/// k, sigmoid beta).
__device__ __forceinline__ float logExpansion(float betaKeyNorm2) {
  const float eigenvalue = fabsf(1.0f - betaKeyNorm2);
  return eigenvalue > 1.0f ? logf(eigenvalue) : 0.0f;
}

/// exp(x) for the decays, x <= 0 (2^-22 relative error, see fastExp2).
__device__ __forceinline__ float decay(float x) { return fastExp2(x * kLog2e); }

/// Copies `rows` rows of `width` elements (a multiple of 8) from a strided
/// global matrix into a shared tile with row stride `ld`; rows from `valid`
/// to 64 are zero-filled. Every thread of the block takes part.
template <int kWidth, int kThreads>
__device__ __forceinline__ void stageRows(__nv_bfloat16 *tile, int ld,
                                          const __nv_bfloat16 *from,
                                          int64_t rowStride, int valid) {
  constexpr int kVectors = kWidth / 8;
  for (int i = threadIdx.x; i < 64 * kVectors; i += kThreads) {
    const int row = i / kVectors, column = (i % kVectors) * 8;
    __nv_bfloat16 *to = tile + row * ld + column;
    if (row < valid)
      copyAsync16(to, from + row * rowStride + column);
    else
      *reinterpret_cast<uint4 *>(to) = make_uint4(0, 0, 0, 0);
  }
}

/// The float value of bf16 bits (exact).
__device__ __forceinline__ float bf16BitsToFloat(uint32_t bits) {
  const uint32_t word = bits << 16;
  float value;
  memcpy(&value, &word, 4);
  return value;
}

} // namespace device
} // namespace gdn
// The prepare kernel (gates, the inverse of I + L, M and P) and the
// helpers the wgmma scan and the fused block share with it, built on the
// definitions above.
#include "gdn/device/delta_rule_prepare.cuh"
namespace gdn {
namespace device {

/// Stores one accumulator tile's four values of this lane (v[e] at row
/// `row` + 8 (e / 2), column `column` + e % 2, i.e. row and column of
/// element 0) into a B-operand tile of the scan, bf16 rounded to nearest:
/// row-major ([k][n], two 32-bit pair stores) or transposed ([n][k], four
/// 16-bit stores). Both hold the same values, so both paths compute the
/// same bits.
template <bool kRowMajor>
__device__ __forceinline__ void storeTileB(__nv_bfloat16 *tile, int ld,
                                           int row, int column,
                                           const float (&v)[4]) {
  if (kRowMajor) {
    *reinterpret_cast<uint32_t *>(tile + row * ld + column) =
        packBf16(v[0], v[1]);
    *reinterpret_cast<uint32_t *>(tile + (row + 8) * ld + column) =
        packBf16(v[2], v[3]);
  } else {
    tile[column * ld + row] = __float2bfloat16_rn(v[0]);
    tile[(column + 1) * ld + row] = __float2bfloat16_rn(v[1]);
    tile[column * ld + row + 8] = __float2bfloat16_rn(v[2]);
    tile[(column + 1) * ld + row + 8] = __float2bfloat16_rn(v[3]);
  }
}

/// The B fragments of kTiles 16 x 8 tiles at (k0, n0) of a scan B-operand
/// tile stored as storeTileB stores it.
template <bool kRowMajor, int kTiles>
__device__ __forceinline__ void loadTileB(const __nv_bfloat16 *tile, int ld,
                                          int k0, int n0, int lane,
                                          FragmentB (&b)[kTiles]) {
  if (kRowMajor)
    loadBRowMajor(tile + k0 * ld + n0, ld, lane, b);
  else
    loadBTransposed(tile + n0 * ld + k0, ld, lane, b);
}

/// Block index -> (sequence, value head, V tile), V tiles fastest so that
/// the tiles of one head (same Q, K, M, P) run side by side and share L2.
template <class Config> struct ScanUnit {
  int32_t seq;
  int head, valueTile;
  int keyHead; ///< the key head the value head reads (GQA)
  int column0; ///< the first V column of the tile
  __device__ __forceinline__ explicit ScanUnit(int64_t block) {
    using S = DeltaRuleShape<Config>;
    valueTile = static_cast<int>(block % S::kValueTiles);
    block /= S::kValueTiles;
    head = static_cast<int>(block % S::kHV);
    seq = static_cast<int32_t>(block / S::kHV);
    keyHead = head / (S::kHV / S::kH);
    column0 = valueTile * S::kVt;
  }
};

/// A segment of a sequence's chunks, from its slot: one scan block's share
/// of the chain. Its block writes the outputs of chunks [first, end)
/// (having run its state from a warm-up start: warmupStart, or for the
/// backward's reverse scan warmupStop); the final state (or the initial
/// state's gradient) only when the segment ends (starts) the sequence.
/// Without splitting (segmentChunks <= 0) the slot is the sequence and the
/// segment is all of it. With it, sequence s's segments have the slots
/// cu_seqlens[s] / (64 segmentChunks) + s + j (as chunk slots do), one
/// segment at least (a zero-length sequence still has its final state and
/// padding rows written); unused slots find `valid` false.
struct ChainSegment {
  int32_t seq, chunks, first, end;
  bool valid;
  __device__ __forceinline__ ChainSegment(const PackingView &p, int64_t slot,
                                          int32_t segmentChunks) {
    if (segmentChunks <= 0) {
      seq = static_cast<int32_t>(slot);
      valid = seq < p.numSeqs;
      chunks = valid ? (p.length(seq) + 63) / 64 : 0;
      first = 0;
      end = chunks;
      return;
    }
    const int64_t tokens = 64 * static_cast<int64_t>(segmentChunks);
    seq = slotSequence(p, slot, tokens);
    chunks = (p.length(seq) + 63) / 64;
    const int64_t index = slot - firstSlot(p, seq, tokens);
    valid = index == 0 || index * segmentChunks < chunks;
    first = valid ? static_cast<int32_t>(index * segmentChunks) : 0;
    end = first + segmentChunks < chunks ? first + segmentChunks : chunks;
  }
  __device__ __forceinline__ bool startsSequence() const { return first == 0; }
  __device__ __forceinline__ bool endsSequence() const { return end == chunks; }
};

/// One forward scan block's work: its unit (value head, V tile) and its
/// segment, the unit's `seq` being the segment's slot.
template <class Config> struct ScanSegment : ChainSegment {
  ScanUnit<Config> unit;
  __device__ __forceinline__ ScanSegment(const PackingView &p, int64_t block,
                                         int32_t segmentChunks)
      : ChainSegment(p, ScanUnit<Config>(block).seq, segmentChunks),
        unit(block) {}
};

/// The chunk a segment's block starts from: the latest c < first whose
/// chunks c .. first - 1 have transition bounds (the workspace's, logs)
/// summing to at most `limit`: the state before c reaches the segment
/// scaled by at most exp(limit), so a zero state at c leaves out that
/// little. 0 when no chunk qualifies (the sequence's start, with its
/// initial state: exact). Every thread walks back alone, eight chunks' loads
/// in flight at a time, and sums in a fixed order: all agree, and so do
/// runs. (No shuffles: the compiler then knows the result is the same in
/// every thread, and keeps the scan's stage addresses, which depend on it,
/// in uniform registers, as wgmma's descriptors need; a shuffled search
/// cost the scan 12%.)
__device__ __forceinline__ int32_t warmupStart(const float *transitionBound,
                                               int64_t slot0, int valueHeads,
                                               int head, int32_t first,
                                               float limit) {
  constexpr int kBatch = 8;
  float sum = 0.0f;
  for (int32_t c = first - 1; c >= 0; c -= kBatch) {
    float bound[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i)
      bound[i] = c - i >= 0
                     ? transitionBound[(slot0 + c - i) * valueHeads + head]
                     : 0.0f;
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      sum += bound[i];
      if (c - i >= 0 && sum <= limit)
        return c - i;
    }
  }
  return 0;
}

/// The reverse of warmupStart, for the backward's reverse scan (whose state
/// gradient runs from a sequence's last chunk down): the chunk after the
/// earliest c >= end whose chunks end .. c have transition bounds summing to
/// at most `limit`. A segment's block starts from a zero state gradient
/// after chunk c and walks chunks c .. end without writing: the gradient
/// after c reaches the segment through the transposed transitions of those
/// chunks, whose norms are the same bounds, so it leaves out at most
/// exp(limit) of it. `chunks` when no chunk before the last qualifies (the
/// sequence's end, with the final state's cotangent: exact). Walks and sums
/// in a fixed order in every thread, as warmupStart.
__device__ __forceinline__ int32_t warmupStop(const float *transitionBound,
                                              int64_t slot0, int valueHeads,
                                              int head, int32_t end,
                                              int32_t chunks, float limit) {
  constexpr int kBatch = 8;
  float sum = 0.0f;
  for (int32_t c = end; c < chunks - 1; c += kBatch) {
    float bound[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i)
      bound[i] = c + i < chunks - 1
                     ? transitionBound[(slot0 + c + i) * valueHeads + head]
                     : 0.0f;
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      sum += bound[i];
      if (c + i < chunks - 1 && sum <= limit)
        return c + i + 1;
    }
  }
  return chunks;
}

/// Offsets that cannot be trusted: NaN over o and the final states, every
/// block of a kThreads-thread grid taking its grid-stride share.
template <class Config, int kThreads>
__device__ __forceinline__ void
fillOutputsWithNaN(const DeltaRuleArgs<Config> &args) {
  using S = DeltaRuleShape<Config>;
  const PackingView &packing = args.packing;
  const int64_t threads = static_cast<int64_t>(gridDim.x) * kThreads;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t outputs =
      static_cast<int64_t>(packing.bufferTokens) * S::kHV * S::kV;
  for (int64_t i = first; i < outputs; i += threads)
    args.o[i] = __float2bfloat16_rn(NAN);
  const int64_t states =
      static_cast<int64_t>(packing.numSeqs) * S::kHV * S::kK * S::kV;
  for (int64_t i = first; Config::kHasFinalState && i < states; i += threads)
    args.finalState[i] = NAN;
}

/// Zeros in the padding rows of sequence `seq`'s slot (cu_padded), in the
/// V tile of `head` that starts at column `column0`.
template <class Config, int kThreads>
__device__ __forceinline__ void
zeroPaddingRows(const DeltaRuleArgs<Config> &args, int32_t seq, int head,
                int column0) {
  using S = DeltaRuleShape<Config>;
  constexpr int kVectors = S::kVt / 8;
  const PackingView &packing = args.packing;
  const int64_t length = packing.length(seq);
  const int64_t padding = packing.slot(seq) - length;
  const int64_t valueRow = static_cast<int64_t>(S::kHV) * S::kV;
  for (int64_t i = threadIdx.x; i < padding * kVectors; i += kThreads) {
    const int64_t row = packing.begin(seq) + length + i / kVectors;
    *reinterpret_cast<uint4 *>(args.o + row * valueRow + head * S::kV +
                               column0 + (i % kVectors) * 8) =
        make_uint4(0, 0, 0, 0);
  }
}

/// kSave: the backward's forward pass. Instead of o and the final states it
/// writes S at every chunk start and Vnew (args.savedStates, savedNew), the
/// values the backward's chunk-parallel kernel reads back.
template <class Config, bool kSave = false>
__global__ void __launch_bounds__(DeltaRuleShape<Config>::kScanThreads,
                                  DeltaRuleShape<Config>::kScanBlocksPerSM)
    deltaChunkScanKernel(DeltaRuleArgs<Config> args) {
  using S = DeltaRuleShape<Config>;
  using Element = typename Config::Element;
  constexpr int kC = S::kChunk, kVt = S::kVt;
  const PackingView &packing = args.packing;
  if (packingInvalid(args)) {
    if (kSave)
      return; // the backward's last kernel writes NaN over the gradients
    fillOutputsWithNaN<Config, S::kScanThreads>(args);
    return;
  }
  // Split chains (kSave too): a segment saves S and Vnew of its own chunks,
  // its warm-up chunks only run the state up.
  const ScanSegment<Config> segment(packing, blockIdx.x, args.segmentChunks);
  if (!segment.valid)
    return;
  const ScanUnit<Config> &unit = segment.unit;
  const int32_t seq = segment.seq;
  const int head = unit.head, keyHead = unit.keyHead, column0 = unit.column0;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // Warp w: chunk rows / state rows of row group w % 4, columns of column
  // group w / 4.
  const int rowGroup = warp % 4;
  const int columnBase = (warp / 4) * S::kWarpColumns;
  const int32_t length = packing.length(seq);
  const int64_t begin = packing.begin(seq);
  const int64_t slot0 = firstSlot(packing, seq);
  const int64_t keyRow = static_cast<int64_t>(S::kH) * S::kK;
  const int64_t valueRow = static_cast<int64_t>(S::kHV) * S::kV;
  // Chunks start .. first - 1 only warm the state up (no output).
  const int32_t start =
      warmupStart(args.workspace.transitionBound, slot0, S::kHV, head,
                  segment.first, args.warmupLogBound);
  const int32_t end = segment.end;

  if (!kSave && segment.first == 0)
    zeroPaddingRows<Config, S::kScanThreads>(args, seq, head, column0);

  extern __shared__ uint4 shared[];
  char *base = reinterpret_cast<char *>(shared);
  Element *stateT = reinterpret_cast<Element *>(base + S::kScanStateT);
  Element *residualT = reinterpret_cast<Element *>(base + S::kScanR);
  Element *newT = reinterpret_cast<Element *>(base + S::kScanNew);
  Element *newDecayedT = reinterpret_cast<Element *>(base + S::kScanNewDecayed);
  auto stage = [&](int c) {
    return base + (S::kScanStages == 2 ? (c & 1) : 0) * S::kStageBytes;
  };

  // The state: warp w owns rows [r K/4, (r+1) K/4) of S (key dims, r its
  // row group) and its column group's kWarpColumns columns, as
  // kStateTiles x kColumnTiles accumulator tiles.
  Accumulator state[S::kStateTiles][S::kColumnTiles];
  const int stateRow0 = rowGroup * (S::kK / 4);
  const int64_t stateBase =
      (static_cast<int64_t>(seq) * S::kHV + head) * S::kK * S::kV + column0;
#pragma unroll
  for (int m = 0; m < S::kStateTiles; ++m)
#pragma unroll
    for (int n = 0; n < S::kColumnTiles; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = stateRow0 + 16 * m + accumulatorRow(lane, e);
        const int column = columnBase + 8 * n + accumulatorColumn(lane, e);
        state[m][n].c[e] =
            Config::kHasInitialState && start == 0
                ? args.initialState[stateBase + row * S::kV + column]
                : 0.0f;
      }

  // Issues the copies of chunk c into its stage (one commit group).
  auto fetch = [&](int32_t c) {
    char *at = stage(c);
    const int64_t row0 = begin + static_cast<int64_t>(c) * kC;
    const int rows = length - c * kC < kC ? length - c * kC : kC;
    // The backward's pass (kSave) computes no o: no Q, no P.
    if (!kSave)
      stageRows<S::kK, S::kScanThreads>(
          reinterpret_cast<Element *>(at + S::kStageQ), S::kLdK,
          args.q + row0 * keyRow + keyHead * S::kK, keyRow, rows);
    stageRows<S::kK, S::kScanThreads>(
        reinterpret_cast<Element *>(at + S::kStageK), S::kLdK,
        args.k + row0 * keyRow + keyHead * S::kK, keyRow, rows);
    stageRows<kVt, S::kScanThreads>(
        reinterpret_cast<Element *>(at + S::kStageV), S::kLdV,
        args.v + row0 * valueRow + head * S::kV + column0, valueRow, rows);
    const int64_t tileIndex = (slot0 + c) * S::kHV + head;
    stageRows<kC, S::kScanThreads>(
        reinterpret_cast<Element *>(at + S::kStageM), S::kLdC,
        args.workspace.transform + tileIndex * kC * kC, kC, kC);
    if (!kSave)
      stageRows<kC, S::kScanThreads>(
          reinterpret_cast<Element *>(at + S::kStageP), S::kLdC,
          args.workspace.scores + tileIndex * kC * kC, kC, kC);
    if (tid < kC / 4)
      copyAsync16(at + S::kStageG + 16 * tid,
                  args.workspace.gateCumsum + tileIndex * kC + 4 * tid);
  };
  if (S::kScanStages == 2 && start < end)
    fetch(start);
  commitAsyncCopies();

  for (int32_t c = start; c < end; ++c) {
    const bool emit = c >= segment.first; // o of this chunk is ours
    if (S::kScanStages == 1) {
      // One stage: chunk c waits until every warp is done with chunk c - 1.
      if (c > start)
        __syncthreads();
      fetch(c);
      commitAsyncCopies();
    }
    // S in bf16: the B operand of K S and Q S (its readers in chunk c - 1
    // passed two barriers since).
#pragma unroll
    for (int m = 0; m < S::kStateTiles; ++m)
#pragma unroll
      for (int n = 0; n < S::kColumnTiles; ++n)
        storeTileB<S::kRowMajorTiles>(
            stateT, S::kLdState, stateRow0 + 16 * m + accumulatorRow(lane, 0),
            columnBase + 8 * n + accumulatorColumn(lane, 0), state[m][n].c);
    if (kSave && emit) {
      // The same bf16 values, row-major, for the backward.
      __nv_bfloat16 *saved = args.savedStates +
                             ((slot0 + c) * S::kHV + head) * S::kK * S::kV +
                             column0;
#pragma unroll
      for (int m = 0; m < S::kStateTiles; ++m)
#pragma unroll
        for (int n = 0; n < S::kColumnTiles; ++n)
          storeTileB<true>(saved, S::kV,
                           stateRow0 + 16 * m + accumulatorRow(lane, 0),
                           columnBase + 8 * n + accumulatorColumn(lane, 0),
                           state[m][n].c);
    }
    waitAsyncCopies<0>(); // chunk c, the only group in flight
    // Chunk c has landed, S is whole, and every warp is done with chunk
    // c - 1, whose stage the next fetch overwrites (two stages).
    __syncthreads();
    if (S::kScanStages == 2) {
      if (c + 1 < end)
        fetch(c + 1);
      commitAsyncCopies();
    }

    const char *at = stage(c);
    const Element *qs = reinterpret_cast<const Element *>(at + S::kStageQ);
    const Element *ks = reinterpret_cast<const Element *>(at + S::kStageK);
    const Element *vs = reinterpret_cast<const Element *>(at + S::kStageV);
    const Element *ms = reinterpret_cast<const Element *>(at + S::kStageM);
    const Element *ps = reinterpret_cast<const Element *>(at + S::kStageP);
    const float *gate = reinterpret_cast<const float *>(at + S::kStageG);
    const int rows = length - c * kC < kC ? length - c * kC : kC;
    const int row0 = 16 * rowGroup; // this warp's chunk rows

    // K S and Q S for this warp's 16 rows.
    Accumulator ksAcc[S::kColumnTiles], out[S::kColumnTiles];
#pragma unroll
    for (int n = 0; n < S::kColumnTiles; ++n) {
      ksAcc[n].fill(0.0f);
      out[n].fill(0.0f);
    }
#pragma unroll
    for (int step = 0; step < S::kK / 16; ++step) {
      const FragmentA ak =
          loadA(ks + row0 * S::kLdK + 16 * step, S::kLdK, lane);
      FragmentB b[S::kColumnTiles];
      loadTileB<S::kRowMajorTiles>(stateT, S::kLdState, 16 * step, columnBase,
                                   lane, b);
#pragma unroll
      for (int n = 0; n < S::kColumnTiles; ++n)
        mma16816(ksAcc[n], ak, b[n]);
      if (!kSave && emit) { // the backward's pass needs no o
        const FragmentA aq =
            loadA(qs + row0 * S::kLdK + 16 * step, S::kLdK, lane);
#pragma unroll
        for (int n = 0; n < S::kColumnTiles; ++n)
          mma16816(out[n], aq, b[n]);
      }
    }
    // R = V - exp(G) K S (to shared); O starts as exp(G) Q S.
    float rowDecay[2];
#pragma unroll
    for (int half = 0; half < 2; ++half)
      rowDecay[half] = decay(gate[row0 + accumulatorRow(lane, 2 * half)]);
#pragma unroll
    for (int n = 0; n < S::kColumnTiles; ++n) {
      // V's two adjacent columns of each row as one 32-bit load.
      float value[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = row0 + accumulatorRow(lane, 2 * half);
        const int column = columnBase + 8 * n + accumulatorColumn(lane, 0);
        const uint32_t pair = loadPair(vs + row * S::kLdV + column);
        value[2 * half] = bf16BitsToFloat(pair & 0xffffu);
        value[2 * half + 1] = bf16BitsToFloat(pair >> 16);
      }
      float residual[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        residual[e] = value[e] - rowDecay[e / 2] * ksAcc[n].c[e];
        out[n].c[e] *= rowDecay[e / 2];
      }
      storeTileB<S::kRowMajorTiles>(
          residualT, S::kLdChunkB, row0 + accumulatorRow(lane, 0),
          columnBase + 8 * n + accumulatorColumn(lane, 0), residual);
    }
    __syncthreads();

    // Vnew = M R for this warp's rows; shared twice: as is (the B operand
    // of P Vnew) and decayed to the chunk end (the state update's).
    Accumulator fresh[S::kColumnTiles];
#pragma unroll
    for (int n = 0; n < S::kColumnTiles; ++n)
      fresh[n].fill(0.0f);
#pragma unroll
    for (int step = 0; step < kC / 16; ++step) {
      const FragmentA a = loadA(ms + row0 * S::kLdC + 16 * step, S::kLdC, lane);
      FragmentB b[S::kColumnTiles];
      loadTileB<S::kRowMajorTiles>(residualT, S::kLdChunkB, 16 * step,
                                   columnBase, lane, b);
#pragma unroll
      for (int n = 0; n < S::kColumnTiles; ++n)
        mma16816(fresh[n], a, b[n]);
    }
    const float lastGate = gate[rows - 1];
    float toEnd[2];
#pragma unroll
    for (int half = 0; half < 2; ++half)
      toEnd[half] =
          decay(lastGate - gate[row0 + accumulatorRow(lane, 2 * half)]);
#pragma unroll
    for (int n = 0; n < S::kColumnTiles; ++n) {
      const int row = row0 + accumulatorRow(lane, 0);
      const int column = columnBase + 8 * n + accumulatorColumn(lane, 0);
      float decayed[4];
#pragma unroll
      for (int e = 0; e < 4; ++e)
        decayed[e] = fresh[n].c[e] * toEnd[e / 2];
      storeTileB<S::kRowMajorTiles>(newT, S::kLdChunkB, row, column,
                                    fresh[n].c);
      if (kSave && emit) {
#pragma unroll
        for (int half = 0; half < 2; ++half)
          if (row + 8 * half < rows)
            *reinterpret_cast<uint32_t *>(
                args.savedNew +
                (begin + static_cast<int64_t>(c) * kC + row + 8 * half) *
                    valueRow +
                head * S::kV + column0 + column) =
                packBf16(fresh[n].c[2 * half], fresh[n].c[2 * half + 1]);
      }
      storeTileB<S::kRowMajorTiles>(newDecayedT, S::kLdChunkB, row, column,
                                    decayed);
    }
    __syncthreads();

    // O += P Vnew, then the store of the real rows.
#pragma unroll
    for (int step = 0; !kSave && emit && step < kC / 16; ++step) {
      const FragmentA a = loadA(ps + row0 * S::kLdC + 16 * step, S::kLdC, lane);
      FragmentB b[S::kColumnTiles];
      loadTileB<S::kRowMajorTiles>(newT, S::kLdChunkB, 16 * step, columnBase,
                                   lane, b);
#pragma unroll
      for (int n = 0; n < S::kColumnTiles; ++n)
        mma16816(out[n], a, b[n]);
    }
    const int64_t chunkRow0 = begin + static_cast<int64_t>(c) * kC;
#pragma unroll
    for (int n = 0; n < S::kColumnTiles; ++n)
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        const int row = row0 + accumulatorRow(lane, e);
        if (kSave || !emit || row >= rows)
          continue;
        const int column =
            column0 + columnBase + 8 * n + accumulatorColumn(lane, e);
        *reinterpret_cast<uint32_t *>(args.o + (chunkRow0 + row) * valueRow +
                                      head * S::kV + column) =
            packBf16(args.scale * out[n].c[e], args.scale * out[n].c[e + 1]);
      }

    // S = exp(G_last) S + K^T (decayed Vnew): A = K^T read from K as
    // stored, k = the chunk's tokens.
    const float chunkDecay = decay(lastGate);
#pragma unroll
    for (int m = 0; m < S::kStateTiles; ++m)
#pragma unroll
      for (int n = 0; n < S::kColumnTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          state[m][n].c[e] *= chunkDecay;
#pragma unroll
    for (int step = 0; step < kC / 16; ++step) {
      FragmentB b[S::kColumnTiles];
      loadTileB<S::kRowMajorTiles>(newDecayedT, S::kLdChunkB, 16 * step,
                                   columnBase, lane, b);
#pragma unroll
      for (int m = 0; m < S::kStateTiles; ++m) {
        const FragmentA a = loadATransposed(
            ks + 16 * step * S::kLdK + stateRow0 + 16 * m, S::kLdK, lane);
#pragma unroll
        for (int n = 0; n < S::kColumnTiles; ++n)
          mma16816(state[m][n], a, b[n]);
      }
    }
  }
  waitAsyncCopies<0>();

  if (Config::kHasFinalState && !kSave && segment.endsSequence()) {
#pragma unroll
    for (int m = 0; m < S::kStateTiles; ++m)
#pragma unroll
      for (int n = 0; n < S::kColumnTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = stateRow0 + 16 * m + accumulatorRow(lane, e);
          const int column = columnBase + 8 * n + accumulatorColumn(lane, e);
          args.finalState[stateBase + row * S::kV + column] = state[m][n].c[e];
        }
  }
}

/// The segment slots of a launch (ChainSegment): the sequences, or with
/// split chains an upper bound on the segments (unused slots' blocks return
/// at once).
inline int64_t chainSlots(const PackingView &packing, int32_t segmentChunks) {
  return segmentChunks > 0
             ? packing.bufferTokens / (64 * static_cast<int64_t>(segmentChunks)) +
                   packing.numSeqs + 1
             : packing.numSeqs;
}

/// Scan blocks of a launch: one per (segment slot, value head, V tile).
template <class Config>
inline int64_t deltaRuleScanBlocks(const PackingView &packing,
                                   int32_t segmentChunks) {
  using S = DeltaRuleShape<Config>;
  return chainSlots(packing, segmentChunks) * S::kHV * S::kValueTiles;
}

/// Segments are at least this long: a segment's block also runs the warm-up
/// chunks before (or after) it, usually one or two.
constexpr int32_t kMinSegmentChunks = 8;

/// The segment length (in chunks) that splits long chains so that a scan of
/// `unitsPerSequence` blocks per sequence (value heads times V tiles) makes
/// about `targetBlocks` blocks (the blocks the GPU runs at once), from what
/// the host knows without reading the offsets: the sequence count and the
/// buffer's rows. 0 (no split) when the sequences alone make more than half
/// of the target. The forward's scan and both of the backward's use it.
inline int32_t chainSegmentChunks(const PackingView &packing,
                                  int64_t unitsPerSequence,
                                  int64_t targetBlocks) {
  const int64_t blocks =
      static_cast<int64_t>(packing.numSeqs) * unitsPerSequence;
  if (packing.numSeqs <= 0 || targetBlocks < 2 * blocks)
    return 0;
  const int64_t perSequence = targetBlocks / blocks; // >= 2
  const int64_t meanChunks =
      (packing.bufferTokens + 64 * static_cast<int64_t>(packing.numSeqs) - 1) /
      (64 * static_cast<int64_t>(packing.numSeqs));
  int64_t chunks = (meanChunks + perSequence - 1) / perSequence;
  if (chunks < kMinSegmentChunks)
    chunks = kMinSegmentChunks;
  return chunks >= meanChunks || chunks > INT32_MAX
             ? 0
             : static_cast<int32_t>(chunks);
}
/// chainSegmentChunks for the forward scan of `Config` (generated code
/// passes the SM count).
template <class Config>
inline int32_t deltaRuleSegmentChunks(const PackingView &packing,
                                      int64_t targetBlocks) {
  using S = DeltaRuleShape<Config>;
  return chainSegmentChunks(packing, int64_t(S::kHV) * S::kValueTiles,
                            targetBlocks);
}

} // namespace device
} // namespace gdn
// The scan's sm_90a variant and the fused forward, built on the
// definitions above.
#include "gdn/device/delta_rule_fused.cuh"
#include "gdn/device/delta_rule_wgmma.cuh"
namespace gdn {
namespace device {

/// The tensor maps of q, k and v of a call (host only, no device access):
/// what the wgmma scan and the fused forward copy their inputs with; with
/// `output`, o's too (the fused block stores whole chunks of o by TMA).
template <class Config>
inline cudaError_t encodeTileMaps(DeltaRuleTensorMaps &maps,
                                  const DeltaRuleArgs<Config> &args,
                                  bool output) {
  using S = DeltaRuleShape<Config>;
  const int32_t rows = args.packing.bufferTokens;
  cudaError_t error =
      encodeTensorMap2D(&maps.q, args.q, S::kH * S::kK, rows, S::kH * S::kK);
  if (error == cudaSuccess)
    error =
        encodeTensorMap2D(&maps.k, args.k, S::kH * S::kK, rows, S::kH * S::kK);
  if (error == cudaSuccess)
    error = encodeTensorMap2D(&maps.v, args.v, S::kHV * S::kV, rows,
                              S::kHV * S::kV);
  if (error == cudaSuccess && output)
    error = encodeTensorMap2D(&maps.o, args.o, S::kHV * S::kV, rows,
                              S::kHV * S::kV);
  return error;
}

/// The tensor maps the wgmma scan or the fused block reads (host only, no
/// device access; args.workspace carved): encodeTileMaps' (o's with
/// `output`), M's and, with `scores`, P's, as tile rows of the workspace.
/// TMA coordinates are 32-bit: tile rows past 2^31 are refused rather than
/// wrapped (token rows are int32 already).
template <class Config>
inline cudaError_t encodeScanMaps(DeltaRuleTensorMaps &maps,
                                  const DeltaRuleArgs<Config> &args, bool output,
                                  bool scores) {
  using S = DeltaRuleShape<Config>;
  const uint64_t tiles =
      static_cast<uint64_t>(DeltaRuleWorkspace::slots(args.packing)) * S::kHV * 64;
  if (tiles > static_cast<uint64_t>(INT32_MAX))
    return cudaErrorInvalidValue;
  cudaError_t error = encodeTileMaps(maps, args, output);
  if (error == cudaSuccess)
    error = encodeTensorMap2D(&maps.transform, args.workspace.transform, 64, tiles, 64);
  if (error == cudaSuccess && scores)
    error = encodeTensorMap2D(&maps.scores, args.workspace.scores, 64, tiles, 64);
  return error;
}

#ifndef GDN_DEVICE_EMULATION // host emulation runs the kernel bodies itself

/// Workspace bytes for a packing (host side; no device access).
template <class Config>
inline size_t deltaRuleWorkspaceBytes(const PackingView &packing) {
  // The fused forward keeps M, P and G in shared memory: no workspace.
  return FusedOnlyOf<Config>::value
             ? 0
             : DeltaRuleWorkspace::bytes(packing, Config::kValueHeads,
                                         !ScanComputesScoresOf<Config>::value);
}

/// Whether two Configs describe the same problem (element type, heads,
/// dims, states), so that one's arguments serve the other.
template <class A, class B>
struct SameDeltaRuleProblem
    : std::integral_constant<
          bool, std::is_same<typename A::Element, typename B::Element>::value &&
                    DeltaRuleShape<A>::kH == DeltaRuleShape<B>::kH &&
                    DeltaRuleShape<A>::kHV == DeltaRuleShape<B>::kHV &&
                    DeltaRuleShape<A>::kK == DeltaRuleShape<B>::kK &&
                    DeltaRuleShape<A>::kV == DeltaRuleShape<B>::kV &&
                    A::kHasInitialState == B::kHasInitialState &&
                    A::kHasFinalState == B::kHasFinalState> {};

/// The same arguments for another Config of the same problem (every input
/// and output field; the workspace is carved again by the launch; the kSave
/// fields are the backward's): keep in step with DeltaRuleArgs.
template <class To, class From>
inline DeltaRuleArgs<To> retypeDeltaRuleArgs(const DeltaRuleArgs<From> &args) {
  static_assert(SameDeltaRuleProblem<From, To>::value,
                "delta rule: arguments move only between configs of the same "
                "heads, dims and states");
  DeltaRuleArgs<To> to = {};
  to.q = args.q;
  to.k = args.k;
  to.v = args.v;
  to.g = args.g;
  to.beta = args.beta;
  to.initialState = args.initialState;
  to.finalState = args.finalState;
  to.o = args.o;
  to.scale = args.scale;
  to.packing = args.packing;
  to.status = args.status;
  to.segmentChunks = args.segmentChunks;
  to.warmupLogBound = args.warmupLogBound;
  return to;
}

/// The prepare kernel a Config selects: with the wgmma scan (sm_90a) the
/// TMA and wgmma one, which needs the tensor maps of q and k; otherwise
/// the cp.async and mma.sync one. `setup` does what can fail on the host,
/// `launch` only launches (as ScanLaunch below); `encoded`: the call's q and
/// k maps where the scan's setup has made them already.
template <class Config, bool kScores, bool = ScanWgmmaOf<Config>::value>
struct PrepareLaunch {
  using S = DeltaRuleShape<Config>;
  static constexpr size_t kBytes = S::prepareBytes(kScores);
  cudaError_t setup(const DeltaRuleArgs<Config> &,
                    const DeltaRuleTensorMaps * = nullptr) {
    return cudaFuncSetAttribute(deltaChunkPrepareKernel<Config, kScores>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(kBytes));
  }
  void launch(const DeltaRuleArgs<Config> &args, cudaStream_t stream) const {
    deltaChunkPrepareKernel<Config, kScores>
        <<<dim3(static_cast<unsigned>(DeltaRuleWorkspace::slots(args.packing)),
                S::kHV / S::kPrepareHeads),
           S::kThreads, kBytes, stream>>>(args);
  }
};
template <class Config, bool kScores>
struct PrepareLaunch<Config, kScores, true> {
  using S = DeltaRuleShape<Config>;
  static constexpr size_t kBytes = S::prepareTmaBytes(kScores);
  DeltaRuleTensorMaps maps = {};
  cudaError_t setup(const DeltaRuleArgs<Config> &args,
                    const DeltaRuleTensorMaps *encoded = nullptr) {
    const int32_t rows = args.packing.bufferTokens;
    cudaError_t error = cudaSuccess;
    if (encoded) {
      maps.q = encoded->q;
      maps.k = encoded->k;
    } else {
      error = encodeTensorMap2D(&maps.k, args.k, S::kH * S::kK, rows,
                                S::kH * S::kK);
      if (error == cudaSuccess && kScores)
        error = encodeTensorMap2D(&maps.q, args.q, S::kH * S::kK, rows,
                                  S::kH * S::kK);
    }
    if (error == cudaSuccess)
      error = cudaFuncSetAttribute(deltaChunkPrepareTmaKernel<Config, kScores>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(kBytes));
    return error;
  }
  void launch(const DeltaRuleArgs<Config> &args, cudaStream_t stream) const {
    deltaChunkPrepareTmaKernel<Config, kScores>
        <<<dim3(static_cast<unsigned>(DeltaRuleWorkspace::slots(args.packing)),
                S::kHV / S::kPrepareHeads),
           S::kThreads, kBytes, stream>>>(args, maps);
  }
};

/// The forward scan a Config selects (kScanWgmma): its block size, shared
/// memory and launch. `setup` does everything that can fail on the host
/// (attributes, tensor maps) before launchDeltaRule starts any kernel, so
/// that a refusal leaves nothing half done; `launch` only launches.
template <class Config, bool = ScanWgmmaOf<Config>::value> struct ScanLaunch {
  static constexpr int kThreads = DeltaRuleShape<Config>::kScanThreads;
  static constexpr size_t kBytes = DeltaRuleShape<Config>::kScanBytes;
  cudaError_t setup(const DeltaRuleArgs<Config> &) {
    return cudaFuncSetAttribute(deltaChunkScanKernel<Config>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(kBytes));
  }
  cudaError_t launch(const DeltaRuleArgs<Config> &args, int64_t units,
                     cudaStream_t stream) const {
    deltaChunkScanKernel<Config>
        <<<static_cast<unsigned>(units), kThreads, kBytes, stream>>>(args);
    return cudaSuccess; // launch errors: cudaGetLastError
  }
};
template <class Config> struct ScanLaunch<Config, true> {
  using S = DeltaRuleShape<Config>;
  // The fused block with a producer of P alone (kFusedInverse false) in
  // place of the wgmma scan.
  static constexpr bool kFused = FusedForwardOf<Config>::value;
  static constexpr int kThreads = kFused
                                      ? DeltaRuleFusedShape<Config>::kThreads
                                      : DeltaRuleWgmmaShape<Config>::kThreads;
  static constexpr size_t kBytes = kFused ? DeltaRuleFusedShape<Config>::kBytes
                                          : DeltaRuleWgmmaShape<Config>::kBytes;
  static constexpr auto kernel() {
    if constexpr (kFused)
      return deltaRuleFusedKernel<Config>;
    else
      return deltaChunkScanWgmmaKernel<Config>;
  }
  DeltaRuleTensorMaps maps = {};
  /// Encodes the tensor maps of this call's buffers (host only, no device
  /// access; args.workspace must be carved).
  cudaError_t setup(const DeltaRuleArgs<Config> &args) {
    cudaError_t error =
        encodeScanMaps(maps, args, kFused, !ScanComputesScoresOf<Config>::value);
    if (error == cudaSuccess)
      error = cudaFuncSetAttribute(kernel(),
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(kBytes));
    return error;
  }
  /// As a programmatic dependent of the prepare kernel before it on the
  /// stream (kProgrammaticLaunch; the kernels wait for its grid before
  /// reading the workspace), or in plain stream order.
  cudaError_t launch(const DeltaRuleArgs<Config> &args, int64_t units,
                     cudaStream_t stream) const {
    const dim3 grid(static_cast<unsigned>(units));
    if constexpr (ProgrammaticLaunchOf<Config>::value)
      return launchDependent(kernel(), grid, dim3(kThreads), kBytes, stream,
                             args, maps);
    kernel()<<<grid, kThreads, kBytes, stream>>>(args, maps);
    return cudaSuccess; // launch errors: cudaGetLastError
  }
};

/// The fused forward (kFusedForward): tensor maps of q, k and v, one
/// kernel.
template <class Config> struct FusedLaunch {
  static_assert(ScanWgmmaOf<Config>::value,
                "delta rule: kFusedForward needs kScanWgmma (sm_90a)");
  static constexpr int kThreads = DeltaRuleFusedShape<Config>::kThreads;
  static constexpr size_t kBytes = DeltaRuleFusedShape<Config>::kBytes;
  DeltaRuleTensorMaps maps = {};
  cudaError_t setup(const DeltaRuleArgs<Config> &args) {
    cudaError_t error = encodeTileMaps(maps, args, true);
    if (error == cudaSuccess)
      error = cudaFuncSetAttribute(deltaRuleFusedKernel<Config>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(kBytes));
    return error;
  }
  void launch(const DeltaRuleArgs<Config> &args, int64_t units,
              cudaStream_t stream) const {
    deltaRuleFusedKernel<Config>
        <<<static_cast<unsigned>(units), kThreads, kBytes, stream>>>(args,
                                                                     maps);
  }
};

/// Which kernels launchDeltaRule starts: both in normal use; one at a time
/// to time them apart (the scan alone reads what an earlier prepare left in
/// the workspace).
enum DeltaRulePhases : unsigned {
  kDeltaRulePrepare = 1,
  kDeltaRuleScan = 2,
  kDeltaRuleBoth = 3
};

/// launchDeltaRule's two-kernel forward: prepare, then the scan.
template <class Config>
inline cudaError_t launchDeltaRuleKernels(DeltaRuleArgs<Config> args,
                                          void *workspace, cudaStream_t stream,
                                          unsigned phases) {
  const PackingView &packing = args.packing;
  // P comes from the prepare kernel unless the scan side computes it (the
  // wgmma scan, or the fused block's producer).
  constexpr bool kPrepareScores = !ScanComputesScoresOf<Config>::value;
  args.workspace = DeltaRuleWorkspace::carve(
      workspace, packing, Config::kValueHeads, kPrepareScores);
  // The opt-in above 48 KiB is set on every launch: a cheap attribute write
  // that a cudaDeviceReset would undo.
  PrepareLaunch<Config, kPrepareScores> prepare;
  ScanLaunch<Config> scan;
  cudaError_t error = cudaSuccess;
  const DeltaRuleTensorMaps *encoded = nullptr;
  if (phases & kDeltaRuleScan) {
    error = scan.setup(args);
    if constexpr (ScanWgmmaOf<Config>::value)
      encoded = &scan.maps; // q and k for the prepare kernel too
  }
  if (error == cudaSuccess && (phases & kDeltaRulePrepare))
    error = prepare.setup(args, encoded);
  if (error != cudaSuccess)
    return error;
  if (phases & kDeltaRulePrepare)
    prepare.launch(args, stream);
  if (phases & kDeltaRuleScan) {
    error = scan.launch(
        args, deltaRuleScanBlocks<Config>(packing, args.segmentChunks), stream);
    if (error != cudaSuccess)
      return error;
  }
  return cudaGetLastError();
}

/// Launches the forward on `stream`: prepare then scan, or the fused
/// kernel (kFusedForward). `workspace` holds deltaRuleWorkspaceBytes bytes,
/// 256-byte aligned; args.workspace is carved from it here. No host
/// synchronisation.
template <class Config>
inline cudaError_t launchDeltaRule(DeltaRuleArgs<Config> args, void *workspace,
                                   cudaStream_t stream,
                                   unsigned phases = kDeltaRuleBoth) {
  const PackingView &packing = args.packing;
  if (packing.numSeqs <= 0)
    return cudaSuccess;
  if (args.segmentChunks < 0)
    return cudaErrorInvalidValue;
  // Without it the two kernels would run with the knob silently ignored.
  static_assert(
      FusedInverseOf<Config>::value ||
          (FusedForwardOf<Config>::value && ScanWgmmaOf<Config>::value),
      "delta rule: kFusedInverse = false needs kFusedForward and "
      "kScanWgmma (sm_90a): it is the fused block's producer that "
      "makes P alone");
  if constexpr (FusedOnlyOf<Config>::value) {
    // One kernel; `phases` without the scan launches nothing. (The two
    // kernels are in the else branch: a fused config instantiates neither.)
    FusedLaunch<Config> fused;
    if (!(phases & kDeltaRuleScan))
      return cudaSuccess;
    const cudaError_t error = fused.setup(args);
    if (error != cudaSuccess)
      return error;
    fused.launch(args, deltaRuleScanBlocks<Config>(packing, args.segmentChunks),
                 stream);
    return cudaGetLastError();
  } else {
    return launchDeltaRuleKernels(args, workspace, stream, phases);
  }
}

/// launchDeltaRule with a tile chosen at run time, when the compiler did not
/// know the sequence count: Config when the packing's sequences make at
/// least `minBlocks` scan blocks at its V tile, else Narrow (a narrower V
/// tile: more blocks for few long sequences). The two configs differ only
/// in their scan tiles, so the arguments, workspace and function are the
/// same.
template <class Config, class Narrow>
inline cudaError_t launchDeltaRuleAdaptive(DeltaRuleArgs<Config> args,
                                           void *workspace,
                                           cudaStream_t stream,
                                           int64_t minBlocks) {
  using S = DeltaRuleShape<Config>;
  static_assert(SameDeltaRuleProblem<Config, Narrow>::value,
                "launchDeltaRuleAdaptive: the configs may differ only in "
                "their scan tiles");
  // The workspace is sized for Config: both must agree on where P comes
  // from (the default depends on the V tile).
  static_assert(ScanComputesScoresOf<Config>::value ==
                    ScanComputesScoresOf<Narrow>::value,
                "launchDeltaRuleAdaptive: set kWgmmaScanScores the same in "
                "both configs (the workspace holds P for both or neither)");
  const int64_t blocks =
      static_cast<int64_t>(args.packing.numSeqs) * S::kHV * S::kValueTiles;
  if (blocks >= minBlocks)
    return launchDeltaRule<Config>(args, workspace, stream);
  return launchDeltaRule<Narrow>(retypeDeltaRuleArgs<Narrow>(args), workspace,
                                 stream);
}
#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_DELTA_RULE_CUH
