//===- delta_rule_backward.cuh - the chunked gated delta rule backward -*- CUDA
//-*-===//
//
// The exact gradients of the gated delta rule (delta_rule.cuh; docs/spec.md,
// gdn.delta_rule_grad) with respect to q, k, v, g, beta and the initial states,
// given the cotangents of o and of the final states. Deterministic by
// construction: every gradient element is written by exactly one thread, every
// sum runs in a fixed order, and there are no atomics.
//
// Per chunk, in the notation of delta_rule.cuh (G the chunk-local cumsum of
// g, e_i = exp(G_i), f_i = exp(G_last - G_i), gamma = exp(G_last),
// D_ij = exp(G_i - G_j) for j <= i, A = strictly-lower(D o K K^T),
// N = (I + diag(beta) A)^-1, M = N diag(beta), P = lower(D o Q K^T)):
//
//    R = V - diag(e) K S        Vn = M R
//    O = scale (diag(e) Q S + P Vn)
//    S' = gamma S + K^T diag(f) Vn
//
// Given dO and dS' (the cotangent of the state after the chunk):
//
//    dVn = scale P^T dO + diag(f) K dS'      W = N^T dVn     dR = diag(beta) W
//    dS  = gamma dS' + scale Q^T diag(e) dO - K^T diag(e) dR      (the recurrence)
//    dV  = dR
//    dQ  = scale diag(e) dO S^T + E1 K
//    dK  = -diag(e beta) W S^T + diag(f) Vn dS'^T + E1^T Q + E2 K + E2^T K
//    with E1 = D o lower(scale dO Vn^T) and E2 = D o strictly-lower(-diag(beta) W Vn^T)
//    dbeta_i = sum_v R_iv W_iv - sum_{j<i} (W Vn^T)_ij A_ij
//    dG: the row and column sums of E1 o (QK^T) and E2 o (KK^T) terms, the
//        decays of R, O and S' (derived in docs/backward.md); dg is the
//        reverse cumsum of dG within the chunk.
//
// Five kernels, all launched by launchDeltaRuleBackward with no host
// synchronisation:
// 1. the forward's prepare kernel (M, P, G), also writing N;
// 2. the forward's scan instantiated with kSave: S at every chunk start and
//    Vn, in bf16 (exactly the values the forward's products read); the
//    wgmma scan (no Q, no P) where the Config selects kScanWgmma, else the
//    mma.sync one;
// 3. deltaChunkReverseScanKernel, one block per (sequence, value head,
//    64 columns of V), sequential over chunks from the last: the dS recurrence in mma
//    accumulators; writes dS' of every chunk, W, dV, and the initial states'
//    gradients; deltaChunkReverseScanWgmmaKernel (delta_rule_backward_wgmma.cuh,
//    one block per (sequence, value head), dS^T in warpgroup accumulators)
//    where the Config selects kReverseScanWgmma;
// 4. deltaChunkGradKernel, one block per (chunk, key head), fully
//    parallel: everything else from S, dS', Vn, W of its chunk, for the
//    group's value heads in head order (dq and dk summed over them in
//    registers); deltaChunkGradWgmmaKernel (delta_rule_backward_chunk_wgmma.cuh,
//    persistent blocks over the same units, warp-specialised on wgmma)
//    where the Config selects kChunkGradWgmma;
// 5. deltaRuleBackwardFinishKernel: NaN in every gradient when the packing
//    status holds a violation (nothing otherwise).
// With kFusedBackwardWgmma in the Config (sm_90a, K = V = 128), 3 and 4 are
// one warp-specialised kernel instead, deltaChunkFusedBackwardKernel
// (delta_rule_backward_fused_wgmma.cuh: dS' and W through shared memory),
// followed under GQA by deltaRuleKeyGradSumKernel, which sums its
// per-value-head dq and dk (with two value heads a key head and bf16
// gradients its blocks run in clusters that sum them themselves).
//
// Both scans split long chains (deltaRuleBackwardSplit) as the forward does:
// a segment's block warms its state up from zero over the chunks before it
// (the forward recomputation) or its state gradient over the chunks after
// it (the reverse scan, warmupStop: the gradient runs through the
// transposed transitions, whose norms have the same bounds), then writes
// its own chunks.
//
// Precision: products are bf16 x bf16 -> fp32 on the tensor cores; S, dS',
// Vn, W, N and the chunk's score tiles E1, E2 are rounded to bf16 as mma
// operands; sums, decays and dg/dbeta run in fp32. dq, dk, dv are written in
// Config::Gradient (fp32 by default, or bf16), the others in fp32.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_DELTA_RULE_BACKWARD_CUH
#define GDN_DEVICE_DELTA_RULE_BACKWARD_CUH

#include "gdn/device/delta_rule.cuh"

namespace gdn {
namespace device {

/// The element type of dq, dk and dv: Config::Gradient when the Config
/// names one (bf16 for autograd, which returns gradients in the inputs'
/// type), fp32 otherwise. dg, dbeta and the states' gradients are fp32.
template <class C, class = void> struct GradientOf {
  using type = float;
};
template <class C> struct GradientOf<C, std::void_t<typename C::Gradient>> {
  using type = typename C::Gradient;
};

/// Optional Config member kBackwardRevStages: chunks the reverse scan stages
/// (1, default: two blocks share an SM and hide each other's loads; 2: the
/// next chunk streams in while this one is computed, one block per SM).
GDN_OPTIONAL_CONFIG_MEMBER(RevStagesOf, kBackwardRevStages, 1)

/// Sizes and shared-memory layouts of the backward kernels (K, V in {64,
/// 128}). Both chunk kernels run eight warps: four row groups of 16 chunk
/// rows (or K/4 state rows) times two halves of the output columns.
template <class Config> struct DeltaRuleBackwardShape {
  using Forward = DeltaRuleShape<Config>;
  static constexpr int kC = 64;
  static constexpr int kH = Forward::kH, kHV = Forward::kHV;
  static constexpr int kK = Forward::kK, kV = Forward::kV;
  static constexpr int kThreads = 256;
  static constexpr int kLdK = kK + 8, kLdV = kV + 8, kLdC = kC + 8;
  static constexpr int kValueTiles = kV / 16; // n tiles per warp, V columns
  static constexpr int kKeyTiles = kK / 16;   // n tiles per warp, K columns
  static constexpr int kStateTiles = kK / 64; // m tiles per warp of dS
  static constexpr int kScoreTiles = 4;       // n tiles per warp, C columns

  // Reverse scan: one block per (sequence, value head, V tile of 64
  // columns), so that V = 128 gives twice the blocks and two fit an SM;
  // kRevStages stages of the chunk's Q, K, dO, N, P, G (with two, the next
  // chunk streams in while this one is computed); dS' and the chunk's B
  // operands dVn (later Y = -diag(e) dR in the same tile) and
  // X = scale diag(e) dO (bf16).
  static constexpr int kRevTile = 64;
  static constexpr int kRevTiles = kV / kRevTile;
  static constexpr int kRevColumnTiles = kRevTile / 16; // n tiles per warp
  static constexpr int kRevStages = RevStagesOf<Config>::value;
  static_assert(kRevStages == 1 || kRevStages == 2,
                "delta rule backward: the reverse scan stages 1 or 2 chunks");
  static constexpr int kRevBlocksPerSM = kRevStages == 1 ? 2 : 1;
  static constexpr int kLdT = kRevTile + 8;
  static constexpr size_t kRevStageQ = 0;
  static constexpr size_t kRevStageK = kRevStageQ + 2 * kC * kLdK;
  static constexpr size_t kRevStageDO = kRevStageK + 2 * kC * kLdK;
  static constexpr size_t kRevStageN = kRevStageDO + 2 * kC * kLdT;
  static constexpr size_t kRevStageP = kRevStageN + 2 * kC * kLdC;
  static constexpr size_t kRevStageG = kRevStageP + 2 * kC * kLdC;
  static constexpr size_t kRevStageBytes = kRevStageG + 4 * kC;
  static constexpr size_t kRevState = kRevStages * kRevStageBytes;
  static constexpr size_t kRevNew = kRevState + 2 * kK * kLdT;
  static constexpr size_t kRevX = kRevNew + 2 * kC * kLdT;
  static constexpr size_t kRevBytes = kRevX + 2 * kC * kLdT;
  static_assert(kRevBlocksPerSM * kRevBytes <= 227 * 1024,
                "delta rule backward: the reverse scan's blocks do not fit an SM");

  // Chunk gradients: Q, K, S, dS', dO, Vn, W, V, E1, E2, G, beta, and rows
  // of fp32 partial sums (see GradSums).
  static constexpr size_t kGradQ = 0;
  static constexpr size_t kGradK = kGradQ + 2 * kC * kLdK;
  static constexpr size_t kGradS = kGradK + 2 * kC * kLdK;
  static constexpr size_t kGradDS = kGradS + 2 * kK * kLdV;
  static constexpr size_t kGradDO = kGradDS + 2 * kK * kLdV;
  static constexpr size_t kGradNew = kGradDO + 2 * kC * kLdV;
  static constexpr size_t kGradW = kGradNew + 2 * kC * kLdV;
  static constexpr size_t kGradV = kGradW + 2 * kC * kLdV;
  static constexpr size_t kGradE1 = kGradV + 2 * kC * kLdV;
  static constexpr size_t kGradE2 = kGradE1 + 2 * kC * kLdC;
  static constexpr size_t kGradG = kGradE2 + 2 * kC * kLdC;
  static constexpr size_t kGradBeta = kGradG + 4 * kC;
  static constexpr size_t kGradSums = kGradBeta + 4 * kC;
  static constexpr int kSumRows = 16;
  static constexpr size_t kGradBytes = kGradSums + 4 * kSumRows * kC;

  static_assert(kRevBytes % 16 == 0 && kGradSums % 16 == 0,
                "shared tiles must stay 16-byte aligned");
  static_assert(kRevBytes <= 227 * 1024 && kGradBytes <= 227 * 1024,
                "delta rule backward: shared memory exceeds what sm_90 "
                "allows");
};

/// Rows of the chunk-gradient kernel's fp32 sums ([kSumRows][64]): per
/// column half (two rows each) or per row group (four rows), so that every
/// partial has one writer and the totals are summed in a fixed order.
enum GradSums : int {
  kSumRowG = 0,     ///< dG row terms of O, R (2 rows)
  kSumRowT = 2,     ///< f_i (K dS')_i . Vn_i, the decay of the update (2)
  kSumRowBetaR = 4, ///< sum_v R W (2)
  kSumRowScore = 6, ///< row sums of the score terms (2)
  kSumRowBetaA = 8, ///< -sum_j (W Vn^T) A (2)
  kSumColScore = 10, ///< column sums of the score terms (4)
  kSumTotal = 14,    ///< per-warp partials of <dS', S>, then dG
  kSumDG = 15,
};

/// dG of row i before the chunk's last-gate terms, from the GradSums rows
/// of a 64-token chunk: the row terms of O and R and the scores' row sums,
/// less the update's decays and the scores' column sums, in a fixed order.
__device__ __forceinline__ float gateGradientOfRow(const float *sums, int i) {
  constexpr int kC = 64;
  float dG = sums[kSumRowG * kC + i] + sums[(kSumRowG + 1) * kC + i] +
             sums[kSumRowScore * kC + i] + sums[(kSumRowScore + 1) * kC + i] -
             (sums[kSumRowT * kC + i] + sums[(kSumRowT + 1) * kC + i]);
#pragma unroll
  for (int r = 0; r < 4; ++r)
    dG -= sums[(kSumColScore + r) * kC + i];
  return dG;
}

/// Workspace of the backward: the forward's tiles plus N, the saved states
/// and state gradients per chunk, and Vn and W per row. Every region starts
/// 256-byte aligned. The fused reverse kernel (`fused`) passes dS' and W
/// through shared memory, so it has no state gradients and no W; with GQA it
/// writes dq and dk per value head instead (`keyGradBytes` bytes an
/// element: the gradients' type), partials that deltaRuleKeyGradSumKernel
/// sums.
struct DeltaRuleBackwardWorkspace {
  DeltaRuleWorkspace forward; ///< M, P, G and N
  __nv_bfloat16 *states;      ///< S at each chunk start, [slots][HV][K][V]
  __nv_bfloat16 *stateGrads;  ///< dS after each chunk, [slots][HV][K][V]
  __nv_bfloat16 *fresh;       ///< Vn, [buffer rows][HV][V]
  __nv_bfloat16 *weighted;    ///< W = N^T dVn, [buffer rows][HV][V]
  void *queryGrads;           ///< fused, GQA: dq per value head, [buffer rows][HV][K]
  void *keyGrads;             ///< fused, GQA: dk per value head, [buffer rows][HV][K]

  struct Sizes {
    size_t forward, inverse, states, stateGrads, rows, weighted, keyGrads;
  };
  static size_t align(size_t bytes) { return (bytes + 255) / 256 * 256; }
  static Sizes sizes(const PackingView &p, int valueHeads, int headDimK, int headDimV,
                     bool fused, int keyGradBytes) {
    const int64_t slots = DeltaRuleWorkspace::slots(p);
    const size_t rows = static_cast<size_t>(p.bufferTokens) * valueHeads;
    const size_t states = align(static_cast<size_t>(slots) * valueHeads * headDimK * headDimV * 2);
    const size_t values = align(rows * headDimV * 2);
    return {align(DeltaRuleWorkspace::bytes(p, valueHeads)),
            align(DeltaRuleWorkspace::tileBytes(slots, valueHeads)),
            states,
            fused ? 0 : states,
            values,
            fused ? 0 : values,
            fused ? align(rows * headDimK * keyGradBytes) : 0};
  }
  /// Bytes for a packing (host side, before launching).
  static size_t bytes(const PackingView &p, int valueHeads, int headDimK, int headDimV,
                      bool fused = false, int keyGradBytes = 0) {
    const Sizes s = sizes(p, valueHeads, headDimK, headDimV, fused, keyGradBytes);
    return s.forward + s.inverse + s.states + s.stateGrads + s.rows + s.weighted +
           2 * s.keyGrads;
  }
  static DeltaRuleBackwardWorkspace carve(void *base, const PackingView &p, int valueHeads,
                                          int headDimK, int headDimV, bool fused = false,
                                          int keyGradBytes = 0) {
    const Sizes s = sizes(p, valueHeads, headDimK, headDimV, fused, keyGradBytes);
    char *at = static_cast<char *>(base);
    DeltaRuleBackwardWorkspace w;
    w.forward = DeltaRuleWorkspace::carve(at, p, valueHeads);
    at += s.forward;
    w.forward.inverse = reinterpret_cast<__nv_bfloat16 *>(at);
    at += s.inverse;
    w.states = reinterpret_cast<__nv_bfloat16 *>(at);
    at += s.states;
    w.stateGrads = s.stateGrads ? reinterpret_cast<__nv_bfloat16 *>(at) : nullptr;
    at += s.stateGrads;
    w.fresh = reinterpret_cast<__nv_bfloat16 *>(at);
    at += s.rows;
    w.weighted = s.weighted ? reinterpret_cast<__nv_bfloat16 *>(at) : nullptr;
    at += s.weighted;
    w.queryGrads = s.keyGrads ? at : nullptr;
    at += s.keyGrads;
    w.keyGrads = s.keyGrads ? at : nullptr;
    return w;
  }
};

template <class Config> struct DeltaRuleBackwardArgs {
  using Element = typename Config::Element;
  using Gradient = typename GradientOf<Config>::type;
  // The forward's inputs (as DeltaRuleArgs).
  const Element *q, *k;      ///< [T, H, K]
  const Element *v;          ///< [T, HV, V]
  const float *g, *beta;     ///< [T, HV]
  const float *initialState; ///< [N, HV, K, V] or null
  // Cotangents of the forward's outputs.
  const Element *dO;         ///< [T, HV, V]
  const float *dFinalState;  ///< [N, HV, K, V], or null for zero
  // Gradients (padding rows zero; rows past the pack untouched).
  Gradient *dq, *dk;         ///< [T, H, K]
  Gradient *dv;              ///< [T, HV, V]
  float *dg, *dbeta;         ///< [T, HV]
  float *dInitialState;      ///< [N, HV, K, V]; used when kHasInitialState
  float scale;
  PackingView packing;
  /// The packing validation record, or null: with a violation every
  /// gradient is NaN.
  const gdn_status_t *status;
  DeltaRuleBackwardWorkspace workspace;
  /// Chain splitting (deltaRuleBackwardSplit picks both from the SM count):
  /// the forward recomputation's segments (DeltaRuleArgs::segmentChunks)
  /// and the reverse scan's, in chunks; 0 walks whole sequences.
  int32_t forwardSegmentChunks = 0;
  int32_t reverseSegmentChunks = 0;
  /// How much of the state (or state gradient) a segment's warm-up may
  /// leave out, as DeltaRuleArgs::warmupLogBound; -INFINITY: exact.
  float warmupLogBound = kDefaultWarmupLogBound;
};

template <class Config>
__device__ __forceinline__ bool
packingInvalid(const DeltaRuleBackwardArgs<Config> &args) {
  return args.status && args.status->code != GDN_STATUS_OK;
}

/// The bf16 pair at `p` (4-byte aligned) as two floats.
__device__ __forceinline__ float2 loadPairAsFloats(const __nv_bfloat16 *p) {
  const uint32_t pair = loadPair(p);
  return make_float2(bf16BitsToFloat(pair & 0xffffu), bf16BitsToFloat(pair >> 16));
}

/// Two adjacent gradient elements (8-byte aligned for fp32, 4 for bf16).
__device__ __forceinline__ void storeGradientPair(float *to, float a, float b) {
  *reinterpret_cast<float2 *>(to) = make_float2(a, b);
}
__device__ __forceinline__ void storeGradientPair(__nv_bfloat16 *to, float a, float b) {
  *reinterpret_cast<uint32_t *>(to) = packBf16(a, b);
}

/// Sum over the four lanes of a quad (the lanes holding one accumulator
/// row), in a fixed order.
__device__ __forceinline__ float quadSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  return x;
}

/// The sum of `x` over the eight lanes of the warp with this lane's lane %
/// 4 (an accumulator column over the warp's 16 rows), in a fixed butterfly
/// order.
__device__ __forceinline__ float columnSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 4);
  x += __shfl_xor_sync(0xffffffffu, x, 8);
  x += __shfl_xor_sync(0xffffffffu, x, 16);
  return x;
}

//===----------------------------------------------------------------------===//
// Reverse scan
//===----------------------------------------------------------------------===//

template <class Config>
__global__ void __launch_bounds__(DeltaRuleBackwardShape<Config>::kThreads,
                                  DeltaRuleBackwardShape<Config>::kRevBlocksPerSM)
    deltaChunkReverseScanKernel(DeltaRuleBackwardArgs<Config> args) {
  using B = DeltaRuleBackwardShape<Config>;
  using Element = typename Config::Element;
  constexpr int kC = B::kC, kK = B::kK, kV = B::kV, kVt = B::kRevTile;
  const PackingView &packing = args.packing;
  if (packingInvalid(args))
    return;
  // Block -> (segment slot, value head, V tile), tiles fastest. The block
  // writes chunks [first, end) of its sequence; with split chains it starts
  // from a zero state gradient after chunk stop - 1 (warmupStop) and only
  // runs the gradient down over chunks stop - 1 .. end.
  const int valueTile = static_cast<int>(blockIdx.x % B::kRevTiles);
  const int64_t unit = blockIdx.x / B::kRevTiles;
  const int head = static_cast<int>(unit % B::kHV);
  const ChainSegment segment(packing, unit / B::kHV, args.reverseSegmentChunks);
  if (!segment.valid)
    return;
  const int32_t seq = segment.seq;
  const int keyHead = head / (B::kHV / B::kH);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rowGroup = warp % 4;
  const int column0 = valueTile * kVt;             // the tile's first V column
  const int columnBase = (warp / 4) * (kVt / 2);   // this warp's, in the tile
  const int32_t length = packing.length(seq);
  const int64_t begin = packing.begin(seq);
  const int32_t chunks = segment.chunks;
  const int64_t slot0 = firstSlot(packing, seq);
  const int64_t keyRow = static_cast<int64_t>(B::kH) * kK;
  const int64_t valueRow = static_cast<int64_t>(B::kHV) * kV;
  const DeltaRuleBackwardWorkspace &ws = args.workspace;
  const int32_t first = segment.first;
  const int32_t stop =
      segment.endsSequence()
          ? chunks
          : warmupStop(ws.forward.transitionBound, slot0, B::kHV, head,
                       segment.end, chunks, args.warmupLogBound);
  const bool fromFinal = stop == chunks; // else from zero after chunk stop - 1

  // Padding rows of this sequence's slot get zero dv in this tile (from the
  // sequence's first segment).
  for (int64_t i = tid; segment.startsSequence() && i < (packing.slot(seq) - length) * kVt;
       i += B::kThreads)
    args.dv[(begin + length + i / kVt) * valueRow + head * kV + column0 + i % kVt] =
        gdn::device::Element<typename GradientOf<Config>::type>::store(0.0f);

  extern __shared__ uint4 shared[];
  char *base = reinterpret_cast<char *>(shared);
  Element *gradTile = reinterpret_cast<Element *>(base + B::kRevState);
  Element *newTile = reinterpret_cast<Element *>(base + B::kRevNew);
  Element *xTile = reinterpret_cast<Element *>(base + B::kRevX);
  Element *yTile = newTile; // Y replaces dVn once W is computed
  auto stage = [&](int32_t c) {
    return base + (B::kRevStages == 2 ? (c & 1) : 0) * B::kRevStageBytes;
  };
  // Issues the copies of chunk c into its stage (one commit group).
  auto fetch = [&](int32_t c) {
    char *at = stage(c);
    const int rows = length - c * kC < kC ? length - c * kC : kC;
    const int64_t chunkRow0 = begin + static_cast<int64_t>(c) * kC;
    const int64_t tileIndex = (slot0 + c) * B::kHV + head;
    stageRows<kK, B::kThreads>(reinterpret_cast<Element *>(at + B::kRevStageQ), B::kLdK,
                               args.q + chunkRow0 * keyRow + keyHead * kK, keyRow, rows);
    stageRows<kK, B::kThreads>(reinterpret_cast<Element *>(at + B::kRevStageK), B::kLdK,
                               args.k + chunkRow0 * keyRow + keyHead * kK, keyRow, rows);
    stageRows<kVt, B::kThreads>(reinterpret_cast<Element *>(at + B::kRevStageDO), B::kLdT,
                                args.dO + chunkRow0 * valueRow + head * kV + column0,
                                valueRow, rows);
    stageRows<kC, B::kThreads>(reinterpret_cast<Element *>(at + B::kRevStageN), B::kLdC,
                               ws.forward.inverse + tileIndex * kC * kC, kC, kC);
    stageRows<kC, B::kThreads>(reinterpret_cast<Element *>(at + B::kRevStageP), B::kLdC,
                               ws.forward.scores + tileIndex * kC * kC, kC, kC);
    if (tid < kC / 4)
      copyAsync16(at + B::kRevStageG + 16 * tid,
                  ws.forward.gateCumsum + tileIndex * kC + 4 * tid);
  };

  // dS' in accumulators: warp w owns state rows [r K/4, (r+1) K/4) and the
  // tile's columns [columnBase, columnBase + Vt/2).
  Accumulator grad[B::kStateTiles][B::kRevColumnTiles];
  const int stateRow0 = rowGroup * (kK / 4);
  const int64_t stateBase =
      (static_cast<int64_t>(seq) * B::kHV + head) * kK * kV + column0;
#pragma unroll
  for (int m = 0; m < B::kStateTiles; ++m)
#pragma unroll
    for (int n = 0; n < B::kRevColumnTiles; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = stateRow0 + 16 * m + accumulatorRow(lane, e);
        const int column = columnBase + 8 * n + accumulatorColumn(lane, e);
        grad[m][n].c[e] = fromFinal && args.dFinalState
                              ? args.dFinalState[stateBase + row * kV + column]
                              : 0.0f;
      }

  const int row0 = 16 * rowGroup; // this warp's chunk rows
  if (B::kRevStages == 2 && stop > first)
    fetch(stop - 1);
  commitAsyncCopies();
  for (int32_t c = stop - 1; c >= first; --c) {
    const bool emit = c < segment.end; // this chunk's gradients are ours
    const int rows = length - c * kC < kC ? length - c * kC : kC;
    const int64_t chunkRow0 = begin + static_cast<int64_t>(c) * kC;
    const int64_t tileIndex = (slot0 + c) * B::kHV + head;
    if (B::kRevStages == 1) {
      // One stage: chunk c waits until every warp is done with chunk c + 1.
      if (c < stop - 1)
        __syncthreads();
      fetch(c);
      commitAsyncCopies();
    }
    // dS' as the B operand of K dS' (its readers in chunk c + 1 passed
    // three barriers since), and saved for the chunk kernel.
    Element *savedGrad = ws.stateGrads + tileIndex * kK * kV + column0;
#pragma unroll
    for (int m = 0; m < B::kStateTiles; ++m)
#pragma unroll
      for (int n = 0; n < B::kRevColumnTiles; ++n) {
        const int row = stateRow0 + 16 * m + accumulatorRow(lane, 0);
        const int column = columnBase + 8 * n + accumulatorColumn(lane, 0);
        storeTileB<true>(gradTile, B::kLdT, row, column, grad[m][n].c);
        if (emit)
          storeTileB<true>(savedGrad, kV, row, column, grad[m][n].c);
      }
    waitAsyncCopies<0>(); // chunk c, the only group in flight
    // Chunk c has landed, dS' is whole, and (two stages) every warp is done
    // with chunk c + 1, whose stage the next fetch overwrites.
    __syncthreads();
    if (B::kRevStages == 2) {
      if (c > first)
        fetch(c - 1);
      commitAsyncCopies();
    }
    const char *at = stage(c);
    const Element *qs = reinterpret_cast<const Element *>(at + B::kRevStageQ);
    const Element *ks = reinterpret_cast<const Element *>(at + B::kRevStageK);
    const Element *dos = reinterpret_cast<const Element *>(at + B::kRevStageDO);
    const Element *ns = reinterpret_cast<const Element *>(at + B::kRevStageN);
    const Element *ps = reinterpret_cast<const Element *>(at + B::kRevStageP);
    const float *gate = reinterpret_cast<const float *>(at + B::kRevStageG);

    const float lastGate = gate[rows - 1];
    float rowDecay[2], toEnd[2], rowBeta[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = row0 + accumulatorRow(lane, 2 * half);
      rowDecay[half] = decay(gate[row]);
      toEnd[half] = decay(lastGate - gate[row]);
      rowBeta[half] = row < rows ? args.beta[(chunkRow0 + row) * B::kHV + head] : 0.0f;
    }

    // dVn = diag(f) K dS' + scale P^T dO; X = scale diag(e) dO.
    Accumulator kds[B::kRevColumnTiles], ptdo[B::kRevColumnTiles];
#pragma unroll
    for (int n = 0; n < B::kRevColumnTiles; ++n) {
      kds[n].fill(0.0f);
      ptdo[n].fill(0.0f);
    }
#pragma unroll
    for (int step = 0; step < kK / 16; ++step) {
      const FragmentA a = loadA(ks + row0 * B::kLdK + 16 * step, B::kLdK, lane);
      FragmentB b[B::kRevColumnTiles];
      loadBRowMajor(gradTile + 16 * step * B::kLdT + columnBase, B::kLdT, lane, b);
#pragma unroll
      for (int n = 0; n < B::kRevColumnTiles; ++n)
        mma16816(kds[n], a, b[n]);
    }
#pragma unroll
    for (int step = 0; step < kC / 16; ++step) {
      const FragmentA a =
          loadATransposed(ps + 16 * step * B::kLdC + row0, B::kLdC, lane);
      FragmentB b[B::kRevColumnTiles];
      loadBRowMajor(dos + 16 * step * B::kLdT + columnBase, B::kLdT, lane, b);
#pragma unroll
      for (int n = 0; n < B::kRevColumnTiles; ++n)
        mma16816(ptdo[n], a, b[n]);
    }
#pragma unroll
    for (int n = 0; n < B::kRevColumnTiles; ++n) {
      const int row = row0 + accumulatorRow(lane, 0);
      const int column = columnBase + 8 * n + accumulatorColumn(lane, 0);
      float fresh[4], x[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float2 dO = loadPairAsFloats(dos + (row + 8 * half) * B::kLdT + column);
        x[2 * half] = args.scale * rowDecay[half] * dO.x;
        x[2 * half + 1] = args.scale * rowDecay[half] * dO.y;
      }
#pragma unroll
      for (int e = 0; e < 4; ++e)
        fresh[e] = toEnd[e / 2] * kds[n].c[e] + args.scale * ptdo[n].c[e];
      storeTileB<true>(newTile, B::kLdT, row, column, fresh);
      storeTileB<true>(xTile, B::kLdT, row, column, x);
    }
    __syncthreads();

    // W = N^T dVn, dR = diag(beta) W (= dV); Y = -diag(e) dR.
    Accumulator w[B::kRevColumnTiles];
#pragma unroll
    for (int n = 0; n < B::kRevColumnTiles; ++n)
      w[n].fill(0.0f);
#pragma unroll
    for (int step = 0; step < kC / 16; ++step) {
      const FragmentA a =
          loadATransposed(ns + 16 * step * B::kLdC + row0, B::kLdC, lane);
      FragmentB b[B::kRevColumnTiles];
      loadBRowMajor(newTile + 16 * step * B::kLdT + columnBase, B::kLdT, lane, b);
#pragma unroll
      for (int n = 0; n < B::kRevColumnTiles; ++n)
        mma16816(w[n], a, b[n]);
    }
    __syncthreads(); // every warp has read dVn: Y takes its tile
#pragma unroll
    for (int n = 0; n < B::kRevColumnTiles; ++n) {
      const int row = row0 + accumulatorRow(lane, 0);
      const int column = columnBase + 8 * n + accumulatorColumn(lane, 0);
      float y[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float dr0 = rowBeta[half] * w[n].c[2 * half];
        const float dr1 = rowBeta[half] * w[n].c[2 * half + 1];
        y[2 * half] = -rowDecay[half] * dr0;
        y[2 * half + 1] = -rowDecay[half] * dr1;
        if (emit && row + 8 * half < rows) {
          const int64_t at =
              (chunkRow0 + row + 8 * half) * valueRow + head * kV + column0 + column;
          *reinterpret_cast<uint32_t *>(ws.weighted + at) =
              packBf16(w[n].c[2 * half], w[n].c[2 * half + 1]);
          storeGradientPair(args.dv + at, dr0, dr1);
        }
      }
      storeTileB<true>(yTile, B::kLdT, row, column, y);
    }
    __syncthreads();

    // dS = gamma dS' + Q^T X + K^T Y.
    const float chunkDecay = decay(lastGate);
#pragma unroll
    for (int m = 0; m < B::kStateTiles; ++m)
#pragma unroll
      for (int n = 0; n < B::kRevColumnTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          grad[m][n].c[e] *= chunkDecay;
#pragma unroll
    for (int step = 0; step < kC / 16; ++step) {
      FragmentB bx[B::kRevColumnTiles], by[B::kRevColumnTiles];
      loadBRowMajor(xTile + 16 * step * B::kLdT + columnBase, B::kLdT, lane, bx);
      loadBRowMajor(yTile + 16 * step * B::kLdT + columnBase, B::kLdT, lane, by);
#pragma unroll
      for (int m = 0; m < B::kStateTiles; ++m) {
        const FragmentA aq = loadATransposed(
            qs + 16 * step * B::kLdK + stateRow0 + 16 * m, B::kLdK, lane);
        const FragmentA ak = loadATransposed(
            ks + 16 * step * B::kLdK + stateRow0 + 16 * m, B::kLdK, lane);
#pragma unroll
        for (int n = 0; n < B::kRevColumnTiles; ++n) {
          mma16816(grad[m][n], aq, bx[n]);
          mma16816(grad[m][n], ak, by[n]);
        }
      }
    }
  }
  waitAsyncCopies<0>();

  if (Config::kHasInitialState && segment.startsSequence()) {
#pragma unroll
    for (int m = 0; m < B::kStateTiles; ++m)
#pragma unroll
      for (int n = 0; n < B::kRevColumnTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = stateRow0 + 16 * m + accumulatorRow(lane, e);
          const int column = columnBase + 8 * n + accumulatorColumn(lane, e);
          args.dInitialState[stateBase + row * kV + column] = grad[m][n].c[e];
        }
  }
}

} // namespace device
} // namespace gdn
// The reverse scan's sm_90a variant, built on the definitions above.
#include "gdn/device/delta_rule_backward_wgmma.cuh"
#include "gdn/device/delta_rule_backward_chunk_wgmma.cuh"
#include "gdn/device/delta_rule_backward_fused_wgmma.cuh"
namespace gdn {
namespace device {

//===----------------------------------------------------------------------===//
// Chunk gradients
//===----------------------------------------------------------------------===//

template <class Config>
__global__ void __launch_bounds__(DeltaRuleBackwardShape<Config>::kThreads, 1)
    deltaChunkGradKernel(DeltaRuleBackwardArgs<Config> args) {
  using B = DeltaRuleBackwardShape<Config>;
  using Element = typename Config::Element;
  constexpr int kC = B::kC, kK = B::kK, kV = B::kV;
  const PackingView &packing = args.packing;
  if (packing.numSeqs <= 0 || packingInvalid(args))
    return;
  constexpr int kGroup = B::kHV / B::kH;
  using Store = gdn::device::Element<typename GradientOf<Config>::type>;
  const int64_t slot = blockIdx.x;
  const int keyHead = blockIdx.y;
  const int32_t seq = slotSequence(packing, slot);
  const int64_t chunk = slot - firstSlot(packing, seq);
  const int32_t length = packing.length(seq);
  const int64_t begin = packing.begin(seq);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t keyRow = static_cast<int64_t>(B::kH) * kK;
  const int64_t valueRow = static_cast<int64_t>(B::kHV) * kV;
  const DeltaRuleBackwardWorkspace &ws = args.workspace;

  if (chunk == 0) {
    // Padding rows of the sequence's slot: zero dq, dk of this key head and
    // dg, dbeta of its value heads.
    const int64_t padding = packing.slot(seq) - length;
    for (int64_t i = tid; i < padding * kK; i += B::kThreads) {
      const int64_t at = (begin + length + i / kK) * keyRow + keyHead * kK + i % kK;
      args.dq[at] = Store::store(0.0f);
      args.dk[at] = Store::store(0.0f);
    }
    for (int64_t i = tid; i < padding * kGroup; i += B::kThreads) {
      const int64_t at = (begin + length + i / kGroup) * B::kHV + keyHead * kGroup + i % kGroup;
      args.dg[at] = 0.0f;
      args.dbeta[at] = 0.0f;
    }
  }
  if (chunk * kC >= length)
    return;
  const int rows = length - chunk * kC < kC ? static_cast<int>(length - chunk * kC) : kC;
  const int64_t chunkRow0 = begin + chunk * kC;
  const int rowGroup = warp % 4, columnHalf = warp / 4;
  const int row0 = 16 * rowGroup;

  extern __shared__ uint4 shared[];
  char *base = reinterpret_cast<char *>(shared);
  Element *qs = reinterpret_cast<Element *>(base + B::kGradQ);
  Element *ks = reinterpret_cast<Element *>(base + B::kGradK);
  Element *ss = reinterpret_cast<Element *>(base + B::kGradS);
  Element *dss = reinterpret_cast<Element *>(base + B::kGradDS);
  Element *dos = reinterpret_cast<Element *>(base + B::kGradDO);
  Element *news = reinterpret_cast<Element *>(base + B::kGradNew);
  Element *wts = reinterpret_cast<Element *>(base + B::kGradW);
  Element *vs = reinterpret_cast<Element *>(base + B::kGradV);
  Element *e1 = reinterpret_cast<Element *>(base + B::kGradE1);
  Element *e2 = reinterpret_cast<Element *>(base + B::kGradE2);
  float *gate = reinterpret_cast<float *>(base + B::kGradG);
  float *betas = reinterpret_cast<float *>(base + B::kGradBeta);
  float *sums = reinterpret_cast<float *>(base + B::kGradSums);

  stageRows<kK, B::kThreads>(qs, B::kLdK, args.q + chunkRow0 * keyRow + keyHead * kK,
                             keyRow, rows);
  stageRows<kK, B::kThreads>(ks, B::kLdK, args.k + chunkRow0 * keyRow + keyHead * kK,
                             keyRow, rows);
  commitAsyncCopies();

  // dq and dk of this warp's 16 rows and half of the K columns, summed over
  // the value heads of the group in head order.
  const int keyColumn0 = columnHalf * (kK / 2);
  Accumulator dqTotal[B::kKeyTiles], dkTotal[B::kKeyTiles];
#pragma unroll
  for (int n = 0; n < B::kKeyTiles; ++n) {
    dqTotal[n].fill(0.0f);
    dkTotal[n].fill(0.0f);
  }

  for (int member = 0; member < kGroup; ++member) {
  const int head = keyHead * kGroup + member;
  const int64_t tileIndex = slot * B::kHV + head;
  __syncthreads(); // every warp is done with the previous head's tiles
  // The K x V states: K rows of V elements (stageRows fills 64 rows a call).
#pragma unroll
  for (int part = 0; part < kK / kC; ++part) {
    stageRows<kV, B::kThreads>(ss + part * kC * B::kLdV, B::kLdV,
                               ws.states + tileIndex * kK * kV + part * kC * kV,
                               kV, kC);
    stageRows<kV, B::kThreads>(dss + part * kC * B::kLdV, B::kLdV,
                               ws.stateGrads + tileIndex * kK * kV + part * kC * kV,
                               kV, kC);
  }
  stageRows<kV, B::kThreads>(dos, B::kLdV, args.dO + chunkRow0 * valueRow + head * kV,
                             valueRow, rows);
  stageRows<kV, B::kThreads>(news, B::kLdV, ws.fresh + chunkRow0 * valueRow + head * kV,
                             valueRow, rows);
  stageRows<kV, B::kThreads>(wts, B::kLdV, ws.weighted + chunkRow0 * valueRow + head * kV,
                             valueRow, rows);
  stageRows<kV, B::kThreads>(vs, B::kLdV, args.v + chunkRow0 * valueRow + head * kV,
                             valueRow, rows);
  if (tid < kC / 4)
    copyAsync16(gate + 4 * tid, ws.forward.gateCumsum + tileIndex * kC + 4 * tid);
  commitAsyncCopies();
  if (tid < kC)
    betas[tid] = tid < rows ? args.beta[(chunkRow0 + tid) * B::kHV + head] : 0.0f;
  waitAsyncCopies<0>();
  __syncthreads();

  const float lastGate = gate[rows - 1];
  const float chunkDecay = decay(lastGate);
  float rowDecay[2], toEnd[2], rowBeta[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + accumulatorRow(lane, 2 * half);
    rowDecay[half] = decay(gate[row]);
    toEnd[half] = decay(lastGate - gate[row]);
    rowBeta[half] = betas[row];
  }
  // Stores one value per accumulator row (e / 2) of this lane's quad sums.
  auto storeRowSums = [&](int sumRow, const float (&value)[2]) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float total = quadSum(value[half]);
      if (lane % 4 == 0)
        sums[sumRow * kC + row0 + accumulatorRow(lane, 2 * half)] = total;
    }
  };

  // (a) K S, Q S and K dS' (C x V, this warp's half of the columns): the
  // decay terms of dG and the R W term of dbeta.
  {
    const int column0 = columnHalf * (kV / 2);
    Accumulator kS[B::kValueTiles], qS[B::kValueTiles];
#pragma unroll
    for (int n = 0; n < B::kValueTiles; ++n) {
      kS[n].fill(0.0f);
      qS[n].fill(0.0f);
    }
#pragma unroll
    for (int step = 0; step < kK / 16; ++step) {
      const FragmentA ak = loadA(ks + row0 * B::kLdK + 16 * step, B::kLdK, lane);
      const FragmentA aq = loadA(qs + row0 * B::kLdK + 16 * step, B::kLdK, lane);
      FragmentB b[B::kValueTiles];
      loadBRowMajor(ss + 16 * step * B::kLdV + column0, B::kLdV, lane, b);
#pragma unroll
      for (int n = 0; n < B::kValueTiles; ++n) {
        mma16816(kS[n], ak, b[n]);
        mma16816(qS[n], aq, b[n]);
      }
    }
    float rowG[2] = {0.0f, 0.0f}, rowBetaR[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < B::kValueTiles; ++n)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int at = (row0 + accumulatorRow(lane, 2 * half)) * B::kLdV + column0 +
                       8 * n + accumulatorColumn(lane, 0);
        const float2 v = loadPairAsFloats(vs + at);
        const float2 w = loadPairAsFloats(wts + at);
        const float2 dO = loadPairAsFloats(dos + at);
        const float vv[2] = {v.x, v.y}, ww[2] = {w.x, w.y}, oo[2] = {dO.x, dO.y};
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float kSv = kS[n].c[2 * half + j];
          const float residual = vv[j] - rowDecay[half] * kSv;
          const float dR = rowBeta[half] * ww[j];
          rowG[half] += rowDecay[half] *
                        (args.scale * oo[j] * qS[n].c[2 * half + j] - dR * kSv);
          rowBetaR[half] += residual * ww[j];
        }
      }
    storeRowSums(kSumRowG + columnHalf, rowG);
    storeRowSums(kSumRowBetaR + columnHalf, rowBetaR);

    Accumulator kdS[B::kValueTiles];
#pragma unroll
    for (int n = 0; n < B::kValueTiles; ++n)
      kdS[n].fill(0.0f);
#pragma unroll
    for (int step = 0; step < kK / 16; ++step) {
      const FragmentA ak = loadA(ks + row0 * B::kLdK + 16 * step, B::kLdK, lane);
      FragmentB b[B::kValueTiles];
      loadBRowMajor(dss + 16 * step * B::kLdV + column0, B::kLdV, lane, b);
#pragma unroll
      for (int n = 0; n < B::kValueTiles; ++n)
        mma16816(kdS[n], ak, b[n]);
    }
    float rowT[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < B::kValueTiles; ++n)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float2 fresh = loadPairAsFloats(
            news + (row0 + accumulatorRow(lane, 2 * half)) * B::kLdV + column0 +
            8 * n + accumulatorColumn(lane, 0));
        rowT[half] += toEnd[half] * (kdS[n].c[2 * half] * fresh.x +
                                     kdS[n].c[2 * half + 1] * fresh.y);
      }
    storeRowSums(kSumRowT + columnHalf, rowT);
  }

  // <dS', S> over the whole K x V tile: per-warp partials, summed in order.
  {
    float dot = 0.0f;
    for (int i = tid; i < kK * kV / 2; i += B::kThreads) {
      const int row = i / (kV / 2), column = 2 * (i % (kV / 2));
      const float2 s = loadPairAsFloats(ss + row * B::kLdV + column);
      const float2 d = loadPairAsFloats(dss + row * B::kLdV + column);
      dot += s.x * d.x + s.y * d.y;
    }
    dot = groupSum<32>(dot);
    if (lane == 0)
      sums[kSumTotal * kC + warp] = dot;
  }

  // (b) The C x C scores: Q K^T, K K^T, dO Vn^T, W Vn^T (this warp's 16
  // rows and 32 of the columns), the masked products E1 and E2 (bf16, for
  // dq and dk), and their dG and dbeta terms.
  {
    const int column0 = columnHalf * 32;
    Accumulator qk[B::kScoreTiles], kk[B::kScoreTiles], dp[B::kScoreTiles],
        wv[B::kScoreTiles];
#pragma unroll
    for (int n = 0; n < B::kScoreTiles; ++n) {
      qk[n].fill(0.0f);
      kk[n].fill(0.0f);
      dp[n].fill(0.0f);
      wv[n].fill(0.0f);
    }
#pragma unroll
    for (int step = 0; step < kK / 16; ++step) {
      const FragmentA aq = loadA(qs + row0 * B::kLdK + 16 * step, B::kLdK, lane);
      const FragmentA ak = loadA(ks + row0 * B::kLdK + 16 * step, B::kLdK, lane);
      FragmentB b[B::kScoreTiles];
      loadBTransposed(ks + column0 * B::kLdK + 16 * step, B::kLdK, lane, b);
#pragma unroll
      for (int n = 0; n < B::kScoreTiles; ++n) {
        mma16816(qk[n], aq, b[n]);
        mma16816(kk[n], ak, b[n]);
      }
    }
#pragma unroll
    for (int step = 0; step < kV / 16; ++step) {
      const FragmentA ao = loadA(dos + row0 * B::kLdV + 16 * step, B::kLdV, lane);
      const FragmentA aw = loadA(wts + row0 * B::kLdV + 16 * step, B::kLdV, lane);
      FragmentB b[B::kScoreTiles];
      loadBTransposed(news + column0 * B::kLdV + 16 * step, B::kLdV, lane, b);
#pragma unroll
      for (int n = 0; n < B::kScoreTiles; ++n) {
        mma16816(dp[n], ao, b[n]);
        mma16816(wv[n], aw, b[n]);
      }
    }
    float rowScore[2] = {0.0f, 0.0f}, rowBetaA[2] = {0.0f, 0.0f};
    float columnScore[B::kScoreTiles][2];
#pragma unroll
    for (int n = 0; n < B::kScoreTiles; ++n) {
      columnScore[n][0] = columnScore[n][1] = 0.0f;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int i = row0 + accumulatorRow(lane, 2 * half);
        float out1[2], out2[2];
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
          const int e = 2 * half + jj;
          const int j = column0 + 8 * n + accumulatorColumn(lane, e);
          // exp(G_i - G_j) only where j <= i (elsewhere it could overflow).
          const float d = j <= i ? decay(gate[i] - gate[j]) : 0.0f;
          const float dP = j <= i ? args.scale * dp[n].c[e] : 0.0f;
          float score = dP * d * qk[n].c[e];
          out1[jj] = dP * d;
          out2[jj] = 0.0f;
          if (j < i) {
            const float a = d * kk[n].c[e];
            const float dA = -rowBeta[half] * wv[n].c[e];
            score += dA * a;
            rowBetaA[half] -= wv[n].c[e] * a;
            out2[jj] = dA * d;
          }
          rowScore[half] += score;
          columnScore[n][jj] += score;
        }
        const int at = i * B::kLdC + column0 + 8 * n + accumulatorColumn(lane, 0);
        *reinterpret_cast<uint32_t *>(e1 + at) = packBf16(out1[0], out1[1]);
        *reinterpret_cast<uint32_t *>(e2 + at) = packBf16(out2[0], out2[1]);
      }
    }
    storeRowSums(kSumRowScore + columnHalf, rowScore);
    storeRowSums(kSumRowBetaA + columnHalf, rowBetaA);
    // Column sums over the warp's 16 rows.
#pragma unroll
    for (int n = 0; n < B::kScoreTiles; ++n)
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const float x = columnSum(columnScore[n][jj]);
        if (lane < 4)
          sums[(kSumColScore + rowGroup) * kC + column0 + 8 * n + 2 * lane + jj] = x;
      }
  }
  __syncthreads(); // E1, E2 and every partial sum are complete

  // (c) this value head's share of dq and dk (C x K, this warp's half of
  // the columns), added to the group's totals.
  {
    const int column0 = keyColumn0;
    Accumulator part[B::kKeyTiles];
    // part = A B^T for A = a C x V tile, B = a K x V state tile.
    auto productWithState = [&](const Element *a, const Element *state) {
#pragma unroll
      for (int n = 0; n < B::kKeyTiles; ++n)
        part[n].fill(0.0f);
#pragma unroll
      for (int step = 0; step < kV / 16; ++step) {
        const FragmentA fa = loadA(a + row0 * B::kLdV + 16 * step, B::kLdV, lane);
        FragmentB b[B::kKeyTiles];
        loadBTransposed(state + column0 * B::kLdV + 16 * step, B::kLdV, lane, b);
#pragma unroll
        for (int n = 0; n < B::kKeyTiles; ++n)
          mma16816(part[n], fa, b[n]);
      }
    };
    // total += A X for A = E (or E^T) and X = Q or K rows.
    auto addScoreProduct = [&](Accumulator(&total)[B::kKeyTiles], const Element *e,
                               bool transposed, const Element *x) {
#pragma unroll
      for (int step = 0; step < kC / 16; ++step) {
        const FragmentA fa =
            transposed ? loadATransposed(e + 16 * step * B::kLdC + row0, B::kLdC, lane)
                       : loadA(e + row0 * B::kLdC + 16 * step, B::kLdC, lane);
        FragmentB b[B::kKeyTiles];
        loadBRowMajor(x + 16 * step * B::kLdK + column0, B::kLdK, lane, b);
#pragma unroll
        for (int n = 0; n < B::kKeyTiles; ++n)
          mma16816(total[n], fa, b[n]);
      }
    };
    auto addRowScaled = [&](Accumulator(&total)[B::kKeyTiles], const float (&scaleOf)[2]) {
#pragma unroll
      for (int n = 0; n < B::kKeyTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          total[n].c[e] += scaleOf[e / 2] * part[n].c[e];
    };
    // dQ += scale diag(e) dO S^T + E1 K.
    addScoreProduct(dqTotal, e1, false, ks);
    productWithState(dos, ss);
    const float qScale[2] = {args.scale * rowDecay[0], args.scale * rowDecay[1]};
    addRowScaled(dqTotal, qScale);

    // dK += E1^T Q + E2 K + E2^T K - diag(e beta) W S^T + diag(f) Vn dS'^T.
    addScoreProduct(dkTotal, e1, true, qs);
    addScoreProduct(dkTotal, e2, false, ks);
    addScoreProduct(dkTotal, e2, true, ks);
    productWithState(wts, ss);
    const float wScale[2] = {-rowDecay[0] * rowBeta[0], -rowDecay[1] * rowBeta[1]};
    addRowScaled(dkTotal, wScale);
    productWithState(news, dss);
    addRowScaled(dkTotal, toEnd);
  }

  // (d) dG per row, then dg as its reverse cumsum and dbeta, by one thread
  // per row in a fixed order.
  if (tid < kC) {
    const int i = tid;
    float dG = gateGradientOfRow(sums, i);
    if (i == rows - 1) {
      // G_last: the chunk decay of S and the decays to the chunk end.
      float dot = 0.0f;
      for (int w = 0; w < B::kThreads / 32; ++w)
        dot += sums[kSumTotal * kC + w];
      float toEndTotal = 0.0f;
      for (int r = 0; r < rows; ++r)
        toEndTotal += sums[kSumRowT * kC + r] + sums[(kSumRowT + 1) * kC + r];
      dG += chunkDecay * dot + toEndTotal;
    }
    sums[kSumDG * kC + i] = dG;
  }
  __syncthreads();
  if (tid < rows) {
    const int t = tid;
    float dg = 0.0f;
    for (int i = rows - 1; i >= t; --i)
      dg += sums[kSumDG * kC + i];
    const float dbeta = sums[kSumRowBetaR * kC + t] + sums[(kSumRowBetaR + 1) * kC + t] +
                        sums[kSumRowBetaA * kC + t] + sums[(kSumRowBetaA + 1) * kC + t];
    args.dg[(chunkRow0 + t) * B::kHV + head] = dg;
    args.dbeta[(chunkRow0 + t) * B::kHV + head] = dbeta;
  }
  } // the group's value heads

  // The group's dq and dk rows.
#pragma unroll
  for (int n = 0; n < B::kKeyTiles; ++n)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = row0 + accumulatorRow(lane, 2 * half);
      if (row >= rows)
        continue;
      const int64_t at =
          (chunkRow0 + row) * keyRow + keyHead * kK + keyColumn0 + 8 * n + accumulatorColumn(lane, 0);
      storeGradientPair(args.dq + at, dqTotal[n].c[2 * half], dqTotal[n].c[2 * half + 1]);
      storeGradientPair(args.dk + at, dkTotal[n].c[2 * half], dkTotal[n].c[2 * half + 1]);
    }
}

//===----------------------------------------------------------------------===//
// Finish: NaN in every gradient when the packing is invalid
//===----------------------------------------------------------------------===//

/// The other kernels return at once on invalid offsets; this one writes NaN
/// over every gradient then (and does nothing otherwise), so that no number
/// computed from invalid offsets is ever returned.
template <class Config>
__global__ void deltaRuleBackwardFinishKernel(DeltaRuleBackwardArgs<Config> args) {
  using B = DeltaRuleBackwardShape<Config>;
  using Store = Element<typename GradientOf<Config>::type>;
  if (!packingInvalid(args))
    return;
  const PackingView &packing = args.packing;
  const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t tokens = packing.bufferTokens;
  for (int64_t i = first; i < tokens * B::kH * B::kK; i += threads)
    args.dq[i] = args.dk[i] = Store::store(NAN);
  for (int64_t i = first; i < tokens * B::kHV * B::kV; i += threads)
    args.dv[i] = Store::store(NAN);
  for (int64_t i = first; i < tokens * B::kHV; i += threads)
    args.dg[i] = args.dbeta[i] = NAN;
  const int64_t states = static_cast<int64_t>(packing.numSeqs) * B::kHV * B::kK * B::kV;
  for (int64_t i = first; Config::kHasInitialState && i < states; i += threads)
    args.dInitialState[i] = NAN;
}

/// Whether the reverse walk's block holds a whole value head (the wgmma
/// reverse scan, the fused kernel) rather than one V tile of it.
template <class Config>
struct WholeHeadReverseOf
    : std::integral_constant<bool, ReverseScanWgmmaOf<Config>::value ||
                                       FusedBackwardWgmmaOf<Config>::value> {};

/// The workspace layout a Config's backward uses (DeltaRuleBackwardWorkspace):
/// fused, and then with per-value-head dq and dk under GQA (in the
/// gradients' type) unless its clusters sum them (FusedClusterKeyGradSums).
template <class Config> struct BackwardWorkspaceLayout {
  static constexpr bool kFused = FusedBackwardWgmmaOf<Config>::value;
  static constexpr bool kPerValueHeadKeyGrads = kFused &&
                                                Config::kValueHeads != Config::kKeyHeads &&
                                                !FusedClusterKeyGradSums<Config>::value;
  static constexpr int kKeyGradBytes =
      kPerValueHeadKeyGrads ? int(sizeof(typename GradientOf<Config>::type)) : 0;
};

/// Reverse scan blocks of a launch: one per (segment slot, value head, V
/// tile), as deltaRuleScanBlocks counts the forward's.
template <class Config>
inline int64_t deltaRuleReverseScanBlocks(const PackingView &packing,
                                          int32_t segmentChunks) {
  using B = DeltaRuleBackwardShape<Config>;
  // The wgmma scan's block holds every V column of its head, as the fused
  // kernel's does.
  return chainSlots(packing, segmentChunks) * B::kHV *
         (WholeHeadReverseOf<Config>::value ? 1 : B::kRevTiles);
}

/// Splits the backward's two sequential scans for a GPU of `smCount` SMs
/// (deltaRuleSegmentChunks' rule, each scan by its own blocks per sequence
/// and per SM), with warm-ups bounded by exp(warmupLogBound).
template <class Config>
inline void deltaRuleBackwardSplit(DeltaRuleBackwardArgs<Config> &args, int64_t smCount,
                                   float warmupLogBound = kDefaultWarmupLogBound) {
  using S = DeltaRuleShape<Config>;
  using B = DeltaRuleBackwardShape<Config>;
  // The wgmma recomputation runs one block per SM, the mma.sync one
  // kScanBlocksPerSM.
  const int64_t forwardBlocksPerSM = ScanWgmmaOf<Config>::value ? 1 : S::kScanBlocksPerSM;
  args.forwardSegmentChunks = chainSegmentChunks(
      args.packing, int64_t(S::kHV) * S::kValueTiles, smCount * forwardBlocksPerSM);
  // The wgmma reverse scan and the fused kernel run one block per head and
  // SM.
  constexpr bool kReverseWgmma = WholeHeadReverseOf<Config>::value;
  args.reverseSegmentChunks = chainSegmentChunks(
      args.packing, int64_t(B::kHV) * (kReverseWgmma ? 1 : B::kRevTiles),
      smCount * (kReverseWgmma ? 1 : B::kRevBlocksPerSM));
  args.warmupLogBound = warmupLogBound;
}

#ifndef GDN_DEVICE_EMULATION // host emulation runs the kernel bodies itself
/// Workspace bytes for a packing (host side; no device access).
template <class Config>
inline size_t deltaRuleBackwardWorkspaceBytes(const PackingView &packing) {
  using L = BackwardWorkspaceLayout<Config>;
  return DeltaRuleBackwardWorkspace::bytes(packing, Config::kValueHeads, Config::kHeadDimK,
                                           Config::kHeadDimV, L::kFused,
                                           L::kKeyGradBytes);
}

/// Which kernels launchDeltaRuleBackward starts: all in normal use; some at
/// a time to time them apart (each reads what earlier ones left in the
/// workspace).
enum DeltaRuleBackwardPhases : unsigned {
  kBackwardPrepare = 1,
  kBackwardForwardScan = 2,
  kBackwardReverseScan = 4,
  kBackwardChunkGrad = 8,
  kBackwardFinish = 16,
  kBackwardAll = 31
};

/// Launches the five kernels on `stream`. `workspace` holds
/// deltaRuleBackwardWorkspaceBytes bytes, 256-byte aligned; args.workspace
/// is carved from it here. No host synchronisation.
template <class Config>
inline cudaError_t launchDeltaRuleBackward(DeltaRuleBackwardArgs<Config> args,
                                           void *workspace, cudaStream_t stream,
                                           unsigned phases = kBackwardAll) {
  using S = DeltaRuleShape<Config>;
  using B = DeltaRuleBackwardShape<Config>;
  const PackingView &packing = args.packing;
  using L = BackwardWorkspaceLayout<Config>;
  args.workspace = DeltaRuleBackwardWorkspace::carve(workspace, packing, Config::kValueHeads,
                                                     Config::kHeadDimK, Config::kHeadDimV,
                                                     L::kFused, L::kKeyGradBytes);
  cudaError_t error = cudaSuccess;
  auto allow = [&](auto kernel, size_t bytes) {
    if (error == cudaSuccess)
      error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(bytes));
  };
  allow(deltaChunkPrepareKernel<Config>, S::kPrepareBytes);
  // The recomputation: the wgmma scan with kSave where the Config selects
  // it (sm_90a; tensor maps of k, v, M and the saved states), else the
  // mma.sync one.
  DeltaRuleTensorMaps maps = {};
  if constexpr (ScanWgmmaOf<Config>::value) {
    error = encodeRecomputationMaps(maps, args);
    allow(deltaChunkScanWgmmaKernel<Config, true>, DeltaRuleWgmmaShape<Config>::kBytes);
  } else {
    allow(deltaChunkScanKernel<Config, true>, S::kScanBytes);
  }
  // The reverse scan: fused with the chunk gradients where the Config
  // selects it, else on wgmma where it selects that (tensor maps of q, k,
  // dO, N and P), else on mma.sync.
  DeltaRuleTensorMaps reverseMaps = {};
  FusedBackwardTensorMaps fusedMaps = {};
  if constexpr (FusedBackwardWgmmaOf<Config>::value) {
    if (error == cudaSuccess)
      error = encodeFusedBackwardMaps(fusedMaps, args);
    allow(deltaChunkFusedBackwardKernel<Config>, FusedBackwardShape<Config>::kBytes);
  } else if constexpr (ReverseScanWgmmaOf<Config>::value) {
    if (error == cudaSuccess)
      error = encodeReverseScanMaps(reverseMaps, args);
    allow(deltaChunkReverseScanWgmmaKernel<Config>, ReverseScanWgmmaShape<Config>::kBytes);
  } else {
    allow(deltaChunkReverseScanKernel<Config>, B::kRevBytes);
  }
  // The chunk gradients: on wgmma where the Config selects it (tensor maps
  // of q, k, v, dO and the workspace's Vn, W, S, dS'; one block per SM).
  ChunkGradTensorMaps chunkMaps = {};
  int chunkBlocks = 0;
  if constexpr (FusedBackwardWgmmaOf<Config>::value) {
    // (in the fused kernel)
  } else if constexpr (ChunkGradWgmmaOf<Config>::value) {
    if (error == cudaSuccess)
      error = encodeChunkGradMaps(chunkMaps, args);
    int device = 0;
    if (error == cudaSuccess)
      error = cudaGetDevice(&device);
    if (error == cudaSuccess)
      error = cudaDeviceGetAttribute(&chunkBlocks, cudaDevAttrMultiProcessorCount, device);
    allow(deltaChunkGradWgmmaKernel<Config>, ChunkGradWgmmaShape<Config>::kBytes);
  } else {
    allow(deltaChunkGradKernel<Config>, B::kGradBytes);
  }
  if (error != cudaSuccess)
    return error;
  if (packing.numSeqs > 0) {
    DeltaRuleArgs<Config> forward = {};
    forward.q = args.q;
    forward.k = args.k;
    forward.v = args.v;
    forward.g = args.g;
    forward.beta = args.beta;
    forward.initialState = args.initialState;
    forward.scale = args.scale;
    forward.packing = packing;
    forward.status = args.status;
    forward.workspace = args.workspace.forward;
    forward.savedStates = args.workspace.states;
    forward.savedNew = args.workspace.fresh;
    forward.warmupLogBound = args.warmupLogBound;
    const int64_t slots = DeltaRuleWorkspace::slots(packing);
    // The prepare kernel writes the transition bounds when either scan
    // splits (it writes them for any positive segment length).
    forward.segmentChunks =
        args.forwardSegmentChunks > 0 ? args.forwardSegmentChunks
                                      : args.reverseSegmentChunks;
    if (phases & kBackwardPrepare)
      deltaChunkPrepareKernel<Config>
          <<<dim3(static_cast<unsigned>(slots), S::kHV / S::kPrepareHeads), S::kThreads,
             S::kPrepareBytes, stream>>>(forward);
    forward.segmentChunks = args.forwardSegmentChunks;
    if (phases & kBackwardForwardScan) {
      const unsigned blocks =
          static_cast<unsigned>(deltaRuleScanBlocks<Config>(packing, forward.segmentChunks));
      if constexpr (ScanWgmmaOf<Config>::value)
        deltaChunkScanWgmmaKernel<Config, true>
            <<<blocks, DeltaRuleWgmmaShape<Config>::kThreads,
               DeltaRuleWgmmaShape<Config>::kBytes, stream>>>(forward, maps);
      else
        deltaChunkScanKernel<Config, true>
            <<<blocks, S::kScanThreads, S::kScanBytes, stream>>>(forward);
    }
    if (phases & kBackwardReverseScan) {
      const unsigned blocks = static_cast<unsigned>(
          deltaRuleReverseScanBlocks<Config>(packing, args.reverseSegmentChunks));
      if constexpr (FusedClusterKeyGradSums<Config>::value) {
        // A key head's two value heads (adjacent blocks) as one cluster.
        error = launchInClusters(deltaChunkFusedBackwardKernel<Config>, blocks,
                                 FusedBackwardShape<Config>::kThreads,
                                 FusedBackwardShape<Config>::kBytes, stream,
                                 FusedClusterKeyGradSums<Config>::kBlocks, args, fusedMaps);
        if (error != cudaSuccess)
          return error;
      } else if constexpr (FusedBackwardWgmmaOf<Config>::value)
        deltaChunkFusedBackwardKernel<Config>
            <<<blocks, FusedBackwardShape<Config>::kThreads,
               FusedBackwardShape<Config>::kBytes, stream>>>(args, fusedMaps);
      else if constexpr (ReverseScanWgmmaOf<Config>::value)
        deltaChunkReverseScanWgmmaKernel<Config>
            <<<blocks, ReverseScanWgmmaShape<Config>::kThreads,
               ReverseScanWgmmaShape<Config>::kBytes, stream>>>(args, reverseMaps);
      else
        deltaChunkReverseScanKernel<Config><<<blocks, B::kThreads, B::kRevBytes, stream>>>(args);
    }
    if (phases & kBackwardChunkGrad) {
      if constexpr (FusedBackwardWgmmaOf<Config>::value) {
        // The fused kernel wrote dq and dk (without GQA, or summed in its
        // clusters), or their per-value-head partials, summed here.
        if constexpr (BackwardWorkspaceLayout<Config>::kPerValueHeadKeyGrads) {
          const int64_t quads = int64_t(packing.bufferTokens) * B::kH * (B::kK / 4);
          const unsigned sumBlocks =
              static_cast<unsigned>(quads / 256 + 1 < 4096 ? quads / 256 + 1 : 4096);
          deltaRuleKeyGradSumKernel<Config><<<sumBlocks, 256, 0, stream>>>(args);
        }
      } else if constexpr (ChunkGradWgmmaOf<Config>::value) {
        const int64_t units = chunkGradUnits<Config>(packing);
        const unsigned blocks =
            static_cast<unsigned>(units < chunkBlocks ? units : chunkBlocks);
        deltaChunkGradWgmmaKernel<Config>
            <<<blocks, ChunkGradWgmmaShape<Config>::kThreads,
               ChunkGradWgmmaShape<Config>::kBytes, stream>>>(args, chunkMaps);
      } else {
        deltaChunkGradKernel<Config>
            <<<dim3(static_cast<unsigned>(slots), B::kH), B::kThreads, B::kGradBytes,
               stream>>>(args);
      }
    }
  }
  const int64_t work = static_cast<int64_t>(packing.bufferTokens) * B::kH * B::kK;
  const unsigned blocks = static_cast<unsigned>(
      work / 256 + 1 < 4096 ? work / 256 + 1 : 4096);
  if (phases & kBackwardFinish)
    deltaRuleBackwardFinishKernel<Config><<<blocks, 256, 0, stream>>>(args);
  return cudaGetLastError();
}
#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_DELTA_RULE_BACKWARD_CUH
