//===- delta_rule_backward_chunk_wgmma.cuh - chunk gradients on wgmma -*- CUDA
//-*-===//
//
// The backward's chunk-gradient kernel (deltaChunkGradKernel of
// delta_rule_backward.cuh: same inputs, workspace, outputs and function)
// for sm_90a, warp-specialised on warpgroup products; a Config selects it
// with `kChunkGradWgmma = true`.
//
// A persistent block walks units of (chunk slot, key head), a unit's value
// heads in head order. A producer warpgroup copies every tile by TMA (128-byte
// swizzled): Q and K per unit, two units' worth; per value head S and dS'
// (K x V), dO, Vn, W and V (64 x V), each in a buffer of its own with a
// `full` and an `empty` mbarrier, so that the next head's tiles stream in
// as this head's are released, in the order the consumers release them.
// Two consumer warpgroups run every product with M = 64 tokens and both
// operands in shared memory, each warpgroup one half of the product's N:
// of dq's and dk's K columns, or of the score tiles' token columns.
//
// Per value head, with e, f, beta of delta_rule_backward.cuh (rows i are
// tokens; the decays of each term ride on its rows, so the product itself
// needs none):
//
//   T1 = dO S^T:   dq += scale diag(e) T1;       dG_i += scale e_i (Q o T1)_i.
//   T2 = W S^T:    dk -= diag(e beta) T2;         u_i = e_i (K o T2)_i:
//                  dG_i -= beta_i u_i, dbeta_i -= u_i (the R W term with
//                  R = V - diag(e) K S, so that K S and Q S are never formed).
//   <dS', S>, sum_v V o W (dbeta's other part).
//   T3 = Vn dS'^T: dk += diag(f) T3;              dG's update decay: f_i (K o T3)_i.
//   Scores (32 token columns per warpgroup): Q K^T, K K^T, dO Vn^T, W Vn^T,
//   masked into E1 and E2 as the mma.sync kernel does, written as bf16
//   tiles E1 and F = E2 + E2^T (E2 is strictly lower, so the two never
//   overlap and F K is E2 K + E2^T K with the same roundings).
//   dq += E1 K;  dk += E1^T Q (E1 read MN-major) + F K.
//
// where (X o T)_i sums X_ik T_ik over this warpgroup's K columns: the
// identities sum_v dO_iv (Q S)_iv = sum_k Q_ik (dO S^T)_ik and the like
// give every dG and dbeta term of the mma.sync kernel from T1, T2, T3,
// which dq and dk need anyway, instead of from three more products.
// 13.6 of the mma.sync kernel's 21 MFLOP per (chunk, value head) at K = V
// = 128. The row and column sums and dG are then the mma.sync kernel's
// (GradSums), with its roundings of E1 and E2 to bf16; dg, dG's reverse
// cumulative sum, comes from warp scans. A head's betas reach shared
// memory during the head before it. A unit's dq and dk, in bf16 and for a
// whole chunk, are staged in its Q and K tiles and stored by TMA (4-byte
// stores of every thread otherwise).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_DELTA_RULE_BACKWARD_CHUNK_WGMMA_CUH
#define GDN_DEVICE_DELTA_RULE_BACKWARD_CHUNK_WGMMA_CUH

// Included by delta_rule_backward.cuh after what it uses.

#include <initializer_list>

namespace gdn {
namespace device {

/// Optional Config member kChunkGradWgmma: true runs the backward's chunk
/// gradients on wgmma (sm_90a).
GDN_OPTIONAL_CONFIG_MEMBER(ChunkGradWgmmaOf, kChunkGradWgmma, false)

/// The per-head tiles of the wgmma chunk-gradient kernel, in the order the
/// producer refills them (the order the consumers release them).
enum ChunkGradTile : int {
  kTileState = 0, ///< S (K x V), with G of the chunk: released after <dS', S>
  kTileValue,     ///< V (64 x V): after sum_v V o W
  kTileStateGrad, ///< dS' (K x V): after T3
  kTileOutput,    ///< dO (64 x V): after the scores
  kTileWeighted,  ///< W: after the scores
  kTileFresh,     ///< Vn: after the scores
  kChunkGradTiles
};

/// Shared-memory layout: two units' Q and K, the per-head tiles, E1 and F,
/// two heads' G and beta, the GradSums rows and the mbarriers. The base is
/// aligned to 1024 bytes at run time (kBytes includes the slack).
template <class Config> struct ChunkGradWgmmaShape {
  using B = DeltaRuleBackwardShape<Config>;
  static constexpr int kChunk = 64, kK = B::kK, kV = B::kV;
  static constexpr int kGroup = B::kHV / B::kH;
  static constexpr int kConsumerThreads = 256;
  // + the producer warpgroup, of which one thread issues every copy: a
  // warpgroup, not a warp, because registers are allocated per four warps
  // (288 threads got the 168 registers of 384) and setmaxnreg moves them
  // per warpgroup: the consumers hold dq, dk, two products in flight and
  // their sums (168 spilled 500 bytes), the producer a few indices.
  static constexpr int kThreads = kConsumerThreads + 128;
  static constexpr int kLaunchRegisters = 65536 / kThreads / 8 * 8;
  static constexpr int kConsumerRegisters = 240;
  static constexpr int kProducerRegisters = 3 * kLaunchRegisters - 2 * kConsumerRegisters;
  static_assert(kProducerRegisters >= 24 && kProducerRegisters % 8 == 0,
                "chunk wgmma: setmaxnreg within the launch's registers");
  static constexpr int kHalfK = kK / 2; // N of a warpgroup's dq, dk products
  using Tile = Swizzle128Tile<kChunk>;  // token tiles
  using StateTile = Swizzle128Tile<kK>; // S and dS': K rows
  static constexpr uint32_t kKeyBytes = 2 * kChunk * kK;
  static constexpr uint32_t kValueBytes = 2 * kChunk * kV;
  static constexpr uint32_t kStateBytes = 2 * kK * kV;
  static constexpr uint32_t kScoreBytes = 2 * kChunk * kChunk;
  static constexpr size_t kQ = 0; // unit u: Q at kQ + (u % 2) kUnitBytes, K after it
  static constexpr size_t kUnitBytes = 2 * kKeyBytes;
  static constexpr size_t kTiles = 2 * kUnitBytes;
  /// Offset of a per-head tile: S, dS', then the token tiles.
  __host__ __device__ static constexpr size_t tileOffset(int tile) {
    return kTiles + (tile == kTileState       ? 0
                     : tile == kTileStateGrad ? size_t(kStateBytes)
                                              : 2 * size_t(kStateBytes) +
                                                    size_t(kValueBytes) *
                                                        (tile == kTileValue    ? 0
                                                         : tile == kTileOutput ? 1
                                                         : tile == kTileWeighted ? 2
                                                                                 : 3));
  }
  static constexpr size_t kE1 = kTiles + 2 * size_t(kStateBytes) + 4 * size_t(kValueBytes);
  static constexpr size_t kF = kE1 + kScoreBytes;
  static constexpr size_t kGates = kF + kScoreBytes; // two heads' G
  static constexpr size_t kBetas = kGates + 2 * 4 * kChunk; // two heads' beta
  static constexpr size_t kSums = kBetas + 2 * 4 * kChunk;
  static constexpr size_t kBarriers = kSums + 4 * B::kSumRows * kChunk;
  // full, empty per tile; unit full, unit empty per unit buffer.
  static constexpr int kBarrierCount = 2 * kChunkGradTiles + 4;
  static constexpr size_t kBytes = kBarriers + 8 * kBarrierCount + 1024;
  static_assert(kE1 % 1024 == 0 && kBarriers % 8 == 0, "aligned shared regions");
  static_assert(kBytes <= 227 * 1024, "delta rule backward (chunk wgmma): shared memory");
};

/// The tensor maps of the wgmma chunk-gradient kernel (a kernel parameter).
struct ChunkGradTensorMaps {
  CUtensorMap q, k, v, dO, fresh, weighted, states, stateGrads;
  /// Over dq and dk when they are bf16 and 16-byte aligned, as TMA needs
  /// (then `gradientsByTma` is 1 and whole chunks are stored by TMA).
  CUtensorMap dq, dk;
  int gradientsByTma;
};

/// A row-major [rows][columns] bf16 matrix to map (encodeTensorMap2D, rows
/// `columns` elements apart).
struct RowMajorMap {
  CUtensorMap *map;
  const void *base;
  uint64_t columns, rows;
};

/// Encodes each of `all` (host only), stopping at the first error.
inline cudaError_t encodeRowMajorMaps(std::initializer_list<RowMajorMap> all) {
  for (const RowMajorMap &m : all) {
    const cudaError_t error = encodeTensorMap2D(m.map, m.base, m.columns, m.rows, m.columns);
    if (error != cudaSuccess)
      return error;
  }
  return cudaSuccess;
}

/// Encodes them (host only; args.workspace carved); the states' maps as
/// encodeChunkStateMap (refused past 32-bit rows).
template <class Config>
inline cudaError_t encodeChunkGradMaps(ChunkGradTensorMaps &maps,
                                       const DeltaRuleBackwardArgs<Config> &args) {
  using B = DeltaRuleBackwardShape<Config>;
  const uint64_t rows = static_cast<uint64_t>(args.packing.bufferTokens);
  const uint64_t keys = uint64_t(B::kH) * B::kK, values = uint64_t(B::kHV) * B::kV;
  const DeltaRuleBackwardWorkspace &ws = args.workspace;
  cudaError_t error = encodeRowMajorMaps({{&maps.q, args.q, keys, rows},
                                          {&maps.k, args.k, keys, rows},
                                          {&maps.v, args.v, values, rows},
                                          {&maps.dO, args.dO, values, rows},
                                          {&maps.fresh, ws.fresh, values, rows},
                                          {&maps.weighted, ws.weighted, values, rows}});
  if (error != cudaSuccess)
    return error;
  // dq and dk by TMA where it can write them: bf16 and 16-byte aligned
  // (the per-thread stores need 4 bytes only, so a view at another offset
  // still works, the old way).
  maps.gradientsByTma = 0;
  if constexpr (std::is_same_v<typename GradientOf<Config>::type, __nv_bfloat16>) {
    if (reinterpret_cast<uintptr_t>(args.dq) % 16 == 0 &&
        reinterpret_cast<uintptr_t>(args.dk) % 16 == 0) {
      error = encodeRowMajorMaps({{&maps.dq, args.dq, keys, rows}, {&maps.dk, args.dk, keys, rows}});
      if (error != cudaSuccess)
        return error;
      maps.gradientsByTma = 1;
    }
  }
  error = encodeChunkStateMap<Config>(&maps.states, ws.states, args.packing);
  return error != cudaSuccess
             ? error
             : encodeChunkStateMap<Config>(&maps.stateGrads, ws.stateGrads, args.packing);
}

/// Units of (chunk slot, key head) of a launch; its persistent blocks (at
/// most one per SM) walk units blockIdx.x, + gridDim.x, ...
template <class Config>
__host__ __device__ inline int64_t chunkGradUnits(const PackingView &packing) {
  return DeltaRuleWorkspace::slots(packing) * DeltaRuleBackwardShape<Config>::kH;
}

/// The 256 consumer threads' barrier (id 3: 1 and 2 are warpgroupBarrier's).
__device__ __forceinline__ void consumerBarrier() {
#ifdef GDN_DEVICE_EMULATION
  emulation::namedBarrier(3, 256);
#else
  asm volatile("bar.sync 3, 256;\n" ::: "memory");
#endif
}

/// One value per accumulator row (rows rowOf) of this lane's quad sums,
/// into GradSums row `sumRow`.
__device__ __forceinline__ void storeQuadRowSums(float *sums, int sumRow, const float (&value)[2],
                                                 const int (&rowOf)[2], int lane) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const float total = quadSum(value[half]);
    if (lane % 4 == 0)
      sums[sumRow * 64 + rowOf[half]] = total;
  }
}

/// out[half] += sum over a warpgroup's kColumns key columns (from kc0) of
/// X o T in accumulator row rowOf[half]: X a swizzled 64-token tile (Q or
/// K), T a 64 x kColumns accumulator of the same rows and columns.
template <class Element, int kColumns>
__device__ __forceinline__ void rowDotWithTile(const char *x, const float (&t)[kColumns / 2],
                                               const int (&rowOf)[2], int kc0, int pairColumn,
                                               float (&out)[2]) {
  using Tile = Swizzle128Tile<64>;
#pragma unroll
  for (int j = 0; j < kColumns / 8; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float2 v = loadPairAsFloats(reinterpret_cast<const Element *>(
          x + Tile::offset(rowOf[half], kc0 + 8 * j + pairColumn)));
      out[half] += v.x * t[4 * j + 2 * half] + v.y * t[4 * j + 2 * half + 1];
    }
}

/// <dS', S> over two bf16 K x V tiles of one layout: this warp's partial,
/// `threads` threads striding over 16-byte pieces, into GradSums row
/// kSumTotal at `warp` (the partials are summed in order later).
template <int kElements>
__device__ __forceinline__ void stateDotPartial(const char *state, const char *stateGrad, int tid,
                                                int threads, int lane, int warp, float *sums) {
  float dot = 0.0f;
  for (int i = tid; i < kElements / 8; i += threads) {
    const uint4 s = reinterpret_cast<const uint4 *>(state)[i];
    const uint4 d = reinterpret_cast<const uint4 *>(stateGrad)[i];
    const uint32_t sw[4] = {s.x, s.y, s.z, s.w}, dw[4] = {d.x, d.y, d.z, d.w};
#pragma unroll
    for (int w = 0; w < 4; ++w)
      dot += bf16BitsToFloat(sw[w] & 0xffffu) * bf16BitsToFloat(dw[w] & 0xffffu) +
             bf16BitsToFloat(sw[w] >> 16) * bf16BitsToFloat(dw[w] >> 16);
  }
  dot = groupSum<32>(dot);
  if (lane == 0)
    sums[kSumTotal * 64 + warp] = dot;
}

/// One warpgroup's score tiles of a chunk and value head, token columns
/// column0 .. + 31 (qk = Q K^T, kk = K K^T, dp = dO Vn^T, wv = W Vn^T there;
/// rows rowOf, as wgmma's accumulators): masked into the bf16 tiles E1 and
/// F = E2 + E2^T (Swizzle128Tile; E2 is strictly lower, so the two never
/// overlap and F K is E2 K + E2^T K with the same roundings), with their row
/// sums, -sum_j (W Vn^T) A for dbeta and the column sums over the warp's 16
/// rows into `sums` (GradSums rows; `warp` numbers the 8 warps of the two
/// warpgroups that split the columns).
template <class Element>
__device__ __forceinline__ void
maskScores(const float (&qk)[16], const float (&kk)[16], const float (&dp)[16],
           const float (&wv)[16], const float *gate, const int (&rowOf)[2],
           const float (&rowBeta)[2], int column0, int pairColumn, int lane, int warp,
           float scale, char *e1, char *mirrored, float *sums) {
  using Tile = Swizzle128Tile<64>;
  constexpr int kC = 64;
  const int group = column0 / 32;
  float rowScore[2] = {0.0f, 0.0f}, rowBetaA[2] = {0.0f, 0.0f};
  float columnScore[4][2];
  auto element = [](char *t, int row, int column) {
    return reinterpret_cast<Element *>(t + Tile::offset(row, column));
  };
#pragma unroll
  for (int n = 0; n < 4; ++n) {
    columnScore[n][0] = columnScore[n][1] = 0.0f;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int i = rowOf[half];
      float out1[2];
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const int e = 2 * half + jj;
        const int j = column0 + 8 * n + pairColumn + jj;
        // exp(G_i - G_j) only where j <= i (elsewhere it could overflow).
        const float d = j <= i ? decay(gate[i] - gate[j]) : 0.0f;
        const float dP = j <= i ? scale * dp[4 * n + e] : 0.0f;
        float score = dP * d * qk[4 * n + e];
        out1[jj] = dP * d;
        if (j < i) {
          const float a = d * kk[4 * n + e];
          const float dA = -rowBeta[half] * wv[4 * n + e];
          score += dA * a;
          rowBetaA[half] -= wv[4 * n + e] * a;
          // F = E2 + E2^T: both places, once each.
          const Element e2 = __float2bfloat16_rn(dA * d);
          *element(mirrored, i, j) = e2;
          *element(mirrored, j, i) = e2;
        } else if (j == i) {
          *element(mirrored, i, i) = __float2bfloat16_rn(0.0f);
        }
        rowScore[half] += score;
        columnScore[n][jj] += score;
      }
      *reinterpret_cast<uint32_t *>(element(e1, i, column0 + 8 * n + pairColumn)) =
          packBf16(out1[0], out1[1]);
    }
  }
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const float score = quadSum(rowScore[half]), betaA = quadSum(rowBetaA[half]);
    if (lane % 4 == 0) {
      sums[(kSumRowScore + group) * kC + rowOf[half]] = score;
      sums[(kSumRowBetaA + group) * kC + rowOf[half]] = betaA;
    }
  }
  // Column sums over the warp's 16 rows.
#pragma unroll
  for (int n = 0; n < 4; ++n)
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      const float x = columnSum(columnScore[n][jj]);
      if (lane < 4)
        sums[(kSumColScore + warp % 4) * kC + column0 + 8 * n + 2 * lane + jj] = x;
    }
}

/// dg and dbeta of a chunk and value head from its complete GradSums rows
/// (`threads` threads of which this is `tid`, `barrier` their barrier): dG
/// per row (threads 0 .. 63) and the G_last term (the chunk decay of S and
/// the decays to the chunk end, warp 2), then dg as dG's reverse cumulative
/// sum plus that term, by warp scans in a fixed order; `store(t, dg,
/// dbeta)` for each of the `rows` real tokens.
template <class Barrier, class Store>
__device__ __forceinline__ void chunkGateGradients(float *sums, int tid, int warp, int lane,
                                                   int rows, float chunkDecay, int threads,
                                                   Barrier barrier, Store store) {
  constexpr int kC = 64;
  float *lastTerm = sums + kSumTotal * kC + threads / 32;
  if (tid < kC) {
    const int i = tid;
    sums[kSumDG * kC + i] = i < rows ? gateGradientOfRow(sums, i) : 0.0f;
  } else if (warp == kC / 32) {
    float dot = lane < threads / 32 ? sums[kSumTotal * kC + lane] : 0.0f;
    float toEndTotal = 0.0f;
#pragma unroll
    for (int r = lane; r < kC; r += 32)
      toEndTotal += r < rows ? sums[kSumRowT * kC + r] + sums[(kSumRowT + 1) * kC + r] : 0.0f;
    dot = groupSum<32>(dot);
    toEndTotal = groupSum<32>(toEndTotal);
    if (lane == 0)
      *lastTerm = chunkDecay * dot + toEndTotal;
  }
  barrier();
  if (tid < kC) {
    // Suffix sums within the warp's 32 rows, then the rows after them.
    const int t = tid;
    float dg = sums[kSumDG * kC + t];
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
      const bool inside = lane + offset < 32;
      const float after = __shfl_sync(0xffffffffu, dg, inside ? lane + offset : lane);
      if (inside)
        dg += after;
    }
    float later = warp == 0 ? sums[kSumDG * kC + 32 + lane] : 0.0f;
    later = groupSum<32>(later);
    dg += later + *lastTerm;
    if (t < rows) {
      const float dbeta = sums[kSumRowBetaR * kC + t] + sums[(kSumRowBetaR + 1) * kC + t] +
                          sums[kSumRowBetaA * kC + t] + sums[(kSumRowBetaA + 1) * kC + t];
      store(t, dg, dbeta);
    }
  }
}

template <class Config>
__global__ void __launch_bounds__(ChunkGradWgmmaShape<Config>::kThreads, 1)
    deltaChunkGradWgmmaKernel(DeltaRuleBackwardArgs<Config> args,
                              const __grid_constant__ ChunkGradTensorMaps maps) {
  using B = DeltaRuleBackwardShape<Config>;
  using W = ChunkGradWgmmaShape<Config>;
  using Element = typename Config::Element;
  using Store = gdn::device::Element<typename GradientOf<Config>::type>;
  using Tile = typename W::Tile;
  constexpr int kC = W::kChunk, kK = B::kK, kV = B::kV, kGroup = W::kGroup;
  constexpr int kHalfK = W::kHalfK;
#if defined(__CUDA_ARCH__) && !GDN_WGMMA_AVAILABLE
  static_assert(!ChunkGradWgmmaOf<Config>::value, GDN_WGMMA_NEEDS_SM90A);
#endif
  const PackingView &packing = args.packing;
  if (packing.numSeqs <= 0 || packingInvalid(args))
    return;
  const int thread = threadIdx.x;
  const int64_t units = chunkGradUnits<Config>(packing);
  const int64_t keyRow = static_cast<int64_t>(B::kH) * kK;
  const DeltaRuleBackwardWorkspace &ws = args.workspace;

  extern __shared__ uint4 wgmmaShared[];
  char *base = alignSharedTo1024(wgmmaShared);
  uint64_t *full = reinterpret_cast<uint64_t *>(base + W::kBarriers);
  uint64_t *empty = full + kChunkGradTiles;
  uint64_t *unitFull = empty + kChunkGradTiles, *unitEmpty = unitFull + 2;
  float *gates = reinterpret_cast<float *>(base + W::kGates);
  float *betaBuffers = reinterpret_cast<float *>(base + W::kBetas);
  float *sums = reinterpret_cast<float *>(base + W::kSums);
  char *e1 = base + W::kE1, *mirrored = base + W::kF;
  auto tile = [&](int t) { return base + W::tileOffset(t); };

  // A unit's chunk: its sequence, first row and real rows (0: nothing to
  // do but the sequence's padding rows, at chunk 0).
  struct Unit {
    int32_t seq;
    int64_t chunk, row0;
    int rows, keyHead;
  };
  auto unitAt = [&](int64_t u) {
    Unit unit;
    const int64_t slot = u / B::kH;
    unit.keyHead = static_cast<int>(u % B::kH);
    unit.seq = slotSequence(packing, slot);
    unit.chunk = slot - firstSlot(packing, unit.seq);
    const int64_t left = packing.length(unit.seq) - unit.chunk * kC;
    unit.rows = left <= 0 ? 0 : left < kC ? static_cast<int>(left) : kC;
    unit.row0 = packing.begin(unit.seq) + unit.chunk * kC;
    return unit;
  };

  if (thread == 0) {
    for (int t = 0; t < kChunkGradTiles; ++t) {
      mbarrierInit(full + t, 1);
      mbarrierInit(empty + t, W::kConsumerThreads);
    }
    for (int b = 0; b < 2; ++b) {
      mbarrierInit(unitFull + b, 1);
      mbarrierInit(unitEmpty + b, W::kConsumerThreads);
    }
  }
  __syncthreads();

  if (thread / 128 == 2) {
    // The producer: one thread issues every copy, in the consumers' order.
#if GDN_WGMMA_AVAILABLE
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(W::kProducerRegisters));
#endif
    if (thread != W::kConsumerThreads)
      return;
    int64_t heads = 0, unitCount = 0;
    for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
      const Unit unit = unitAt(u);
      if (unit.rows == 0)
        continue;
      const int buffer = static_cast<int>(unitCount % 2);
      if (unitCount >= 2)
        mbarrierWait(unitEmpty + buffer, ((unitCount / 2) - 1) & 1);
      char *keys = base + W::kQ + buffer * W::kUnitBytes;
      mbarrierExpectBytes(unitFull + buffer, 2 * W::kKeyBytes);
      const int y = static_cast<int>(unit.row0);
#pragma unroll
      for (int b = 0; b < kK / 64; ++b) {
        tmaLoad2D(keys + b * Tile::kBlockBytes, &maps.q, unit.keyHead * kK + 64 * b, y,
                  unitFull + buffer);
        tmaLoad2D(keys + W::kKeyBytes + b * Tile::kBlockBytes, &maps.k,
                  unit.keyHead * kK + 64 * b, y, unitFull + buffer);
      }
      ++unitCount;
      const int64_t slot = u / B::kH;
      for (int member = 0; member < kGroup; ++member, ++heads) {
        const int head = unit.keyHead * kGroup + member;
        const int64_t tileIndex = slot * B::kHV + head;
        for (int t = 0; t < kChunkGradTiles; ++t) {
          if (heads >= 1)
            mbarrierWait(empty + t, (heads - 1) & 1);
          char *at = tile(t);
          if (t == kTileState || t == kTileStateGrad) {
            const CUtensorMap *map = t == kTileState ? &maps.states : &maps.stateGrads;
            mbarrierExpectBytes(full + t, W::kStateBytes + (t == kTileState ? 4 * kC : 0));
#pragma unroll
            for (int rb = 0; rb < kK / 64; ++rb)
#pragma unroll
              for (int cb = 0; cb < kV / 64; ++cb)
                tmaLoad2D(at + cb * W::StateTile::kBlockBytes + rb * 64 * 128, map, 64 * cb,
                          static_cast<int>(tileIndex * kK + 64 * rb), full + t);
            if (t == kTileState)
              bulkLoad(gates + (heads % 2) * kC, ws.forward.gateCumsum + tileIndex * kC,
                       4 * kC, full + t);
          } else {
            const CUtensorMap *map = t == kTileOutput     ? &maps.dO
                                     : t == kTileWeighted ? &maps.weighted
                                     : t == kTileValue    ? &maps.v
                                                          : &maps.fresh;
            mbarrierExpectBytes(full + t, W::kValueBytes);
#pragma unroll
            for (int cb = 0; cb < kV / 64; ++cb)
              tmaLoad2D(at + cb * Tile::kBlockBytes, map, head * kV + 64 * cb, y, full + t);
          }
        }
      }
    }
    return;
  }

#if GDN_WGMMA_AVAILABLE
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(W::kConsumerRegisters));
#endif
  // A consumer thread's indices: warpgroup `group` owns K columns kc0 ..
  // kc0 + kHalfK - 1 of dq and dk and token columns 32 group .. + 31 of the
  // score tiles; rowOf are its accumulator rows, pairColumn its first
  // accumulator column (+ 8 j, + 1). Made per head from a thread index the
  // compiler cannot hoist: the offsets derived from them (a few dozen per
  // head) were otherwise kept in registers across the loops, and the
  // consumers spilled 300 bytes (ptxas).
  struct Lanes {
    int tid, warp, lane, group, kc0, rowOf[2], pairColumn;
    __device__ __forceinline__ Lanes()
        : tid(threadIndexOpaque()), warp(tid / 32), lane(tid % 32), group(warp / 4),
          kc0(kHalfK * group), rowOf{16 * (warp % 4) + lane / 4, 16 * (warp % 4) + lane / 4 + 8},
          pairColumn(2 * (lane % 4)) {}
  };
  int64_t heads = 0, unitCount = 0;
  // A head's betas come to shared memory by warps 6 and 7: the unit's
  // first head's as the unit starts, the others' during the dG tail of the
  // head before (where those warps are idle), so that no consumer waits
  // for their global loads there.
  const auto fetchBetas = [&](float *to, const Unit &unit, int head, int t) {
    to[t] = t < unit.rows ? args.beta[(unit.row0 + t) * B::kHV + head] : 0.0f;
  };
  constexpr int kBetaFetchers = W::kConsumerThreads - kC; // first thread of warps 6, 7

  for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const Unit unit = unitAt(u);
    const int rows = unit.rows;
    if (unit.chunk == 0) {
      // Padding rows of the sequence's slot: zero dq, dk of this key head
      // and dg, dbeta of its value heads.
      const int32_t length = packing.length(unit.seq);
      const int64_t end = packing.begin(unit.seq) + length;
      const int64_t padding = packing.slot(unit.seq) - length;
      for (int64_t i = thread; i < padding * kK; i += W::kConsumerThreads) {
        const int64_t at = (end + i / kK) * keyRow + unit.keyHead * kK + i % kK;
        args.dq[at] = Store::store(0.0f);
        args.dk[at] = Store::store(0.0f);
      }
      for (int64_t i = thread; i < padding * kGroup; i += W::kConsumerThreads) {
        const int64_t at = (end + i / kGroup) * B::kHV + unit.keyHead * kGroup + i % kGroup;
        args.dg[at] = 0.0f;
        args.dbeta[at] = 0.0f;
      }
    }
    if (rows == 0)
      continue;
    if (thread >= kBetaFetchers)
      fetchBetas(betaBuffers + (heads % 2) * kC, unit, unit.keyHead * kGroup,
                 thread - kBetaFetchers);
    const int buffer = static_cast<int>(unitCount % 2);
    const char *queries = base + W::kQ + buffer * W::kUnitBytes;
    const char *keys = queries + W::kKeyBytes;
    mbarrierWait(unitFull + buffer, (unitCount / 2) & 1);
    if (rows < kC) {
      // TMA read past the sequence's end: zero those rows (a barrier
      // below orders the zeros before every product).
      zeroTileRowsFrom<kK>(const_cast<char *>(queries), rows, thread, W::kConsumerThreads);
      zeroTileRowsFrom<kK>(const_cast<char *>(keys), rows, thread, W::kConsumerThreads);
    }
    float dq[kHalfK / 2], dk[kHalfK / 2];
#pragma unroll
    for (int i = 0; i < kHalfK / 2; ++i)
      dq[i] = dk[i] = 0.0f;

    for (int member = 0; member < kGroup; ++member, ++heads) {
      const Lanes lanes;
      const int tid = lanes.tid, warp = lanes.warp, lane = lanes.lane, group = lanes.group;
      const int kc0 = lanes.kc0, pairColumn = lanes.pairColumn;
      const int(&rowOf)[2] = lanes.rowOf;
      const int head = unit.keyHead * kGroup + member;
      const unsigned parity = heads & 1;
      const float *betas = betaBuffers + (heads % 2) * kC;
      if (rows < kC) {
        // A partial chunk: every tile first, then the rows past its end
        // zeroed.
        for (int t = 0; t < kChunkGradTiles; ++t)
          mbarrierWait(full + t, parity);
        for (int t : {kTileValue, kTileOutput, kTileWeighted, kTileFresh})
          zeroTileRowsFrom<kV>(tile(t), rows, tid, W::kConsumerThreads);
        fenceSharedForAsyncProxy();
      }
      // A partial chunk's zeros are in place, and the unit's first betas
      // (the others' were written before the last head's final barrier).
      if (rows < kC || member == 0)
        consumerBarrier();
      mbarrierWait(full + kTileState, parity);
      const float *gate = gates + (heads % 2) * kC;
      const float lastGate = gate[rows - 1];
      const float chunkDecay = decay(lastGate);
      float rowDecay[2], toEnd[2], rowBeta[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        rowDecay[half] = decay(gate[rowOf[half]]);
        toEnd[half] = decay(lastGate - gate[rowOf[half]]);
        rowBeta[half] = betas[rowOf[half]];
      }
      auto storeRowSums = [&](int sumRow, const float (&value)[2]) {
        storeQuadRowSums(sums, sumRow, value, rowOf, lane);
      };
      auto rowDot = [&](const char *x, const float (&t)[kHalfK / 2], float (&out)[2]) {
        rowDotWithTile<Element, kHalfK>(x, t, rowOf, kc0, pairColumn, out);
      };
      const char *stateB = tile(kTileState) + kc0 * 128; // rows kc0 .. of S
      const char *stateGradB = tile(kTileStateGrad) + kc0 * 128;

      // T1 = dO S^T and T2 = W S^T (K-major A and B, k = V).
      float t1[kHalfK / 2], t2[kHalfK / 2];
      mbarrierWait(full + kTileOutput, parity);
      wgmmaFence();
      wgmmaSwizzledOperands<kHalfK, kV / 16, 0, 0>(t1, tile(kTileOutput), Tile::kBlockBytes,
                                                   stateB, W::StateTile::kBlockBytes, false);
      wgmmaCommit();
      mbarrierWait(full + kTileWeighted, parity);
      wgmmaSwizzledOperands<kHalfK, kV / 16, 0, 0>(t2, tile(kTileWeighted), Tile::kBlockBytes,
                                                   stateB, W::StateTile::kBlockBytes, false);
      wgmmaCommit();
      float rowG[2] = {0.0f, 0.0f}, rowBetaR[2] = {0.0f, 0.0f}, rowT[2] = {0.0f, 0.0f};
      wgmmaWait<1>();
      wgmmaSettle(t1);
      {
        float qt[2] = {0.0f, 0.0f};
        rowDot(queries, t1, qt);
#pragma unroll
        for (int half = 0; half < 2; ++half)
          rowG[half] += args.scale * rowDecay[half] * qt[half];
#pragma unroll
        for (int i = 0; i < kHalfK / 2; ++i)
          dq[i] += args.scale * rowDecay[(i % 4) / 2] * t1[i];
      }
      wgmmaWait<0>();
      wgmmaSettle(t2);
      {
        float kt[2] = {0.0f, 0.0f};
        rowDot(keys, t2, kt);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float u = rowDecay[half] * kt[half];
          rowG[half] -= rowBeta[half] * u;
          rowBetaR[half] -= u;
        }
#pragma unroll
        for (int i = 0; i < kHalfK / 2; ++i)
          dk[i] -= rowDecay[(i % 4) / 2] * rowBeta[(i % 4) / 2] * t2[i];
      }

      // <dS', S> over the whole K x V tile (both tiles share a layout):
      // per-warp partials, summed in order.
      mbarrierWait(full + kTileStateGrad, parity);
      stateDotPartial<kK * kV>(tile(kTileState), tile(kTileStateGrad), tid,
                               W::kConsumerThreads, lane, warp, sums);
      mbarrierArrive(empty + kTileState);

      // T3 = Vn dS'^T; under it, this warpgroup's half of sum_v V o W.
      float t3[kHalfK / 2];
      mbarrierWait(full + kTileFresh, parity);
      wgmmaFence();
      wgmmaSwizzledOperands<kHalfK, kV / 16, 0, 0>(t3, tile(kTileFresh), Tile::kBlockBytes,
                                                   stateGradB, W::StateTile::kBlockBytes, false);
      wgmmaCommit();
      mbarrierWait(full + kTileValue, parity);
      {
        // Row rowOf[half], the quad's share of this warpgroup's V columns:
        // 16-byte pieces (lane % 4) + 4 p of the half's.
        constexpr int kPieces = kV / 2 / 8 / 4;
#pragma unroll
        for (int half = 0; half < 2; ++half)
#pragma unroll
          for (int p = 0; p < kPieces; ++p) {
            const int column = kV / 2 * group + 8 * (lane % 4 + 4 * p);
            const int offset = Tile::offset(rowOf[half], column);
            const uint4 v = *reinterpret_cast<const uint4 *>(tile(kTileValue) + offset);
            const uint4 w = *reinterpret_cast<const uint4 *>(tile(kTileWeighted) + offset);
            const uint32_t vw[4] = {v.x, v.y, v.z, v.w}, ww[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int x = 0; x < 4; ++x)
              rowBetaR[half] += bf16BitsToFloat(vw[x] & 0xffffu) * bf16BitsToFloat(ww[x] & 0xffffu) +
                                bf16BitsToFloat(vw[x] >> 16) * bf16BitsToFloat(ww[x] >> 16);
          }
      }
      mbarrierArrive(empty + kTileValue);
      wgmmaWait<0>();
      wgmmaSettle(t3);
      mbarrierArrive(empty + kTileStateGrad);
      {
        float kt[2] = {0.0f, 0.0f};
        rowDot(keys, t3, kt);
#pragma unroll
        for (int half = 0; half < 2; ++half)
          rowT[half] = toEnd[half] * kt[half];
#pragma unroll
        for (int i = 0; i < kHalfK / 2; ++i)
          dk[i] += toEnd[(i % 4) / 2] * t3[i];
      }
      storeRowSums(kSumRowG + group, rowG);
      storeRowSums(kSumRowBetaR + group, rowBetaR);
      storeRowSums(kSumRowT + group, rowT);

      // The scores, token columns 32 group .. + 31: Q K^T, K K^T (k = K),
      // dO Vn^T, W Vn^T (k = V), all K-major.
      {
        const int column0 = 32 * group;
        float qk[16], kk[16], dp[16], wv[16];
        const char *keyRows = keys + column0 * 128;
        const char *freshRows = tile(kTileFresh) + column0 * 128;
        wgmmaFence();
        wgmmaSwizzledOperands<32, kK / 16, 0, 0>(qk, queries, Tile::kBlockBytes, keyRows,
                                                 Tile::kBlockBytes, false);
        wgmmaSwizzledOperands<32, kK / 16, 0, 0>(kk, keys, Tile::kBlockBytes, keyRows,
                                                 Tile::kBlockBytes, false);
        wgmmaSwizzledOperands<32, kV / 16, 0, 0>(dp, tile(kTileOutput), Tile::kBlockBytes,
                                                 freshRows, Tile::kBlockBytes, false);
        wgmmaSwizzledOperands<32, kV / 16, 0, 0>(wv, tile(kTileWeighted), Tile::kBlockBytes,
                                                 freshRows, Tile::kBlockBytes, false);
        wgmmaCommit();
        wgmmaWait<0>();
        wgmmaSettle(qk);
        wgmmaSettle(kk);
        wgmmaSettle(dp);
        wgmmaSettle(wv);
        mbarrierArrive(empty + kTileOutput);
        mbarrierArrive(empty + kTileWeighted);
        mbarrierArrive(empty + kTileFresh);

        maskScores<Element>(qk, kk, dp, wv, gate, rowOf, rowBeta, column0, pairColumn, lane,
                            warp, args.scale, e1, mirrored, sums);
      }
      fenceSharedForAsyncProxy();
      consumerBarrier(); // E1, F and every partial sum are complete

      // dq += E1 K; dk += E1^T Q + F K (B = this warpgroup's K columns of
      // the unit's tiles, MN-major; E1^T is E1 read MN-major).
      {
        const int block = kc0 / 64, within = kc0 % 64;
        const char *keyColumns = keys + block * Tile::kBlockBytes + 2 * within;
        const char *queryColumns = queries + block * Tile::kBlockBytes + 2 * within;
        wgmmaFence();
        wgmmaSwizzledOperands<kHalfK, kC / 16, 0, 1>(dq, e1, Tile::kBlockBytes, keyColumns,
                                                     Tile::kBlockBytes, true);
        wgmmaSwizzledOperands<kHalfK, kC / 16, 1, 1>(dk, e1, Tile::kBlockBytes, queryColumns,
                                                     Tile::kBlockBytes, true);
        wgmmaSwizzledOperands<kHalfK, kC / 16, 0, 1>(dk, mirrored, Tile::kBlockBytes,
                                                     keyColumns, Tile::kBlockBytes, true);
        wgmmaCommit();
      }

      // dg and dbeta under the products; warps 6 and 7 fetch the next
      // head's betas first.
      if (tid >= kBetaFetchers && member + 1 < kGroup)
        fetchBetas(betaBuffers + ((heads + 1) % 2) * kC, unit, head + 1, tid - kBetaFetchers);
      chunkGateGradients(sums, tid, warp, lane, rows, chunkDecay, W::kConsumerThreads,
                         consumerBarrier, [&](int t, float dg, float dbeta) {
                           args.dg[(unit.row0 + t) * B::kHV + head] = dg;
                           args.dbeta[(unit.row0 + t) * B::kHV + head] = dbeta;
                         });
      wgmmaWait<0>();
      wgmmaSettle(dq);
      wgmmaSettle(dk);
      consumerBarrier(); // every read of this head's sums, E1 and F is done (and
                         // the next head's betas are in place)
    } // the group's value heads

    // The group's dq and dk rows, this warpgroup's K columns. In bf16
    // (16-byte aligned) and for a whole chunk: staged in the unit's Q and K
    // tiles (their last reads are behind the head loop's final barrier; the
    // unit's buffer is released only after the stores have read them) and
    // stored by TMA, two 64 x 64 boxes per tile, instead of 4-byte stores
    // from every thread (the kernel's load-store queue was its third
    // stall). A partial chunk's rows past its end belong to the next
    // sequence: those chunks store per thread.
    const Lanes lanes;
    constexpr bool kTmaStores = std::is_same_v<typename GradientOf<Config>::type, __nv_bfloat16>;
    if (kTmaStores && maps.gradientsByTma && rows == kC) {
#pragma unroll
      for (int j = 0; j < kHalfK / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int offset = Tile::offset(lanes.rowOf[half], lanes.kc0 + 8 * j + lanes.pairColumn);
          *reinterpret_cast<uint32_t *>(const_cast<char *>(queries) + offset) =
              packBf16(dq[4 * j + 2 * half], dq[4 * j + 2 * half + 1]);
          *reinterpret_cast<uint32_t *>(const_cast<char *>(keys) + offset) =
              packBf16(dk[4 * j + 2 * half], dk[4 * j + 2 * half + 1]);
        }
      fenceSharedForAsyncProxy();
      consumerBarrier();
      if (thread == 0) {
#pragma unroll
        for (int b = 0; b < kK / 64; ++b) {
          const int x = unit.keyHead * kK + 64 * b, y = static_cast<int>(unit.row0);
          tmaStore2D(&maps.dq, x, y, queries + b * Tile::kBlockBytes);
          tmaStore2D(&maps.dk, x, y, keys + b * Tile::kBlockBytes);
        }
        bulkCommit();
        bulkWaitRead<0>();
      }
    } else {
#pragma unroll
      for (int j = 0; j < kHalfK / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = lanes.rowOf[half];
          if (row >= rows)
            continue;
          const int64_t at = (unit.row0 + row) * keyRow + unit.keyHead * kK + lanes.kc0 +
                             8 * j + lanes.pairColumn;
          storeGradientPair(args.dq + at, dq[4 * j + 2 * half], dq[4 * j + 2 * half + 1]);
          storeGradientPair(args.dk + at, dk[4 * j + 2 * half], dk[4 * j + 2 * half + 1]);
        }
    }
    mbarrierArrive(unitEmpty + buffer);
    ++unitCount;
  }
  if (thread == 0)
    bulkWaitAll(); // the last stores have completed before the block ends
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_DELTA_RULE_BACKWARD_CHUNK_WGMMA_CUH
