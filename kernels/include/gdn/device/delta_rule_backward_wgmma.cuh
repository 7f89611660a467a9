//===- delta_rule_backward_wgmma.cuh - the reverse scan on wgmma -*- CUDA
//-*-===//
//
// The backward's reverse state-gradient scan (deltaChunkReverseScanKernel
// of delta_rule_backward.cuh: same inputs, workspace, outputs and
// function) for sm_90a, on warpgroup products; a Config selects it with
// `kReverseScanWgmma = true`. It mirrors the forward's wgmma scan
// (delta_rule_wgmma.cuh): one block per (sequence or segment of a split
// chain, value head) with one warpgroup per 64 columns of V, each keeping
// its columns of the state gradient transposed, dS^T (64 x K fp32), as the
// accumulator of a 64 x K product, so that every product of the chunk has
// V as its M dimension and each product's result, converted to bf16 in
// registers, is the A operand of the next. B operands are the chunk's
// tiles (Q, K, dO, N, P) copied by TMA with 128-byte swizzling, two or
// three chunks in flight, walking the chunks from the last. Per chunk,
// with e_t = exp(G_t), f_t = exp(G_last - G_t), rows being value columns:
//
//   dVn^T = dS'^T K^T diag(f) + scale dO^T P       (K-major B; MN-major B)
//   W^T   = dVn^T N                                (MN-major B)
//   dR^T  = W^T diag(beta) (= dv^T),  Y^T = -dR^T diag(e)
//   X^T   = scale dO^T diag(e)                     (dO^T by ldmatrix.trans)
//   dS^T  = exp(G_last) dS'^T + X^T Q + Y^T K      (MN-major B)
//
// which is the mma.sync kernel's algebra transposed, with its bf16
// roundings (dS', dVn, W, X, Y as product operands), so the precision is
// the same; the sums run in another order, so the bits are not. dS' of
// every chunk goes to the workspace from registers, W through a staging
// tile in 16-byte rows, dv from registers (fp32: whole 32-byte sectors).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_DELTA_RULE_BACKWARD_WGMMA_CUH
#define GDN_DEVICE_DELTA_RULE_BACKWARD_WGMMA_CUH

// Included by delta_rule_backward.cuh after what it uses (the backward's
// arguments, shapes and workspace).

namespace gdn {
namespace device {

/// Optional Config member kReverseScanWgmma: true runs the backward's
/// reverse scan on wgmma (sm_90a).
GDN_OPTIONAL_CONFIG_MEMBER(ReverseScanWgmmaOf, kReverseScanWgmma, false)

/// Shared-memory layout of the wgmma reverse scan: kStages stages of {Q, K
/// (K columns), dO (V columns), N, P (64 columns), as TMA writes them, G},
/// per warpgroup the staging boxes of its columns of dS' (K / 64 boxes of
/// 64 keys x 64 columns, as TMA stores them), the staging tile of W, per
/// warpgroup the chunk's decays and betas, and the stages' mbarriers. The
/// base is aligned to 1024 bytes at run time (kBytes includes the slack).
template <class Config> struct ReverseScanWgmmaShape {
  using B = DeltaRuleBackwardShape<Config>;
  static constexpr int kChunk = 64, kK = B::kK, kV = B::kV;
  static constexpr int kWarpgroups = kV / 64;
  static constexpr int kThreads = 128 * kWarpgroups;
  using Tile = Swizzle128Tile<kChunk>;
  static constexpr size_t kStageQ = 0;
  static constexpr size_t kStageK = kStageQ + 2 * kChunk * kK;
  static constexpr size_t kStageDO = kStageK + 2 * kChunk * kK;
  static constexpr size_t kStageN = kStageDO + 2 * kChunk * kV;
  static constexpr size_t kStageP = kStageN + 2 * kChunk * kChunk;
  static constexpr size_t kStageG = kStageP + 2 * kChunk * kChunk;
  static constexpr unsigned kStageCopyBytes =
      static_cast<unsigned>(kStageG + 4 * kChunk);
  static constexpr size_t kStageBytes = (kStageCopyBytes + 1023) / 1024 * 1024;
  static constexpr int kLdOut = kV + 8; // staging rows
  // e, f and beta of the chunk's tokens, per warpgroup.
  static constexpr size_t kDecayBytes = kWarpgroups * 3 * 4 * kChunk;
  // dS' of one warpgroup's columns: K rows of 128 bytes.
  static constexpr size_t kStateStagingBytes = size_t(kK) * 128;
  static constexpr size_t kTail = kWarpgroups * kStateStagingBytes + 2 * kChunk * kLdOut +
                                  kDecayBytes + 8 * 3 + 1024;
  static constexpr int kStages = 3 * kStageBytes + kTail <= 227 * 1024 ? 3 : 2;
  static constexpr size_t kStateStaging = kStages * kStageBytes; // 1024-aligned
  static constexpr size_t kOutput = kStateStaging + kWarpgroups * kStateStagingBytes;
  static constexpr size_t kDecays = kOutput + 2 * kChunk * kLdOut;
  static constexpr size_t kBarriers = kDecays + kDecayBytes;
  static constexpr size_t kBytes = kBarriers + 8 * kStages + 1024;
  static_assert(kBarriers % 8 == 0, "mbarriers are 8-byte aligned");
  static_assert(kBytes <= 227 * 1024, "delta rule backward (wgmma): shared memory");
};

/// A tensor map over per-chunk states, S or dS' in the workspace: a
/// [slots x HV x K][V] bf16 matrix, boxes of 64 keys x 64 columns (host
/// only). TMA coordinates are 32-bit: more rows are refused.
template <class Config>
inline cudaError_t encodeChunkStateMap(CUtensorMap *map, const void *states,
                                       const PackingView &packing) {
  using B = DeltaRuleBackwardShape<Config>;
  const uint64_t rows =
      static_cast<uint64_t>(DeltaRuleWorkspace::slots(packing)) * B::kHV * B::kK;
  if (rows > static_cast<uint64_t>(INT32_MAX))
    return cudaErrorInvalidValue;
  return encodeTensorMap2D(map, states, B::kV, rows, B::kV);
}

/// The forward's arguments through which encodeScanMaps maps a backward
/// scan's tiles: q, k, `values` in v's place, the forward's workspace.
template <class Config>
inline DeltaRuleArgs<Config>
scanMapsArguments(const DeltaRuleBackwardArgs<Config> &args,
                  const typename Config::Element *values) {
  DeltaRuleArgs<Config> mapped = {};
  mapped.q = args.q;
  mapped.k = args.k;
  mapped.v = values;
  mapped.packing = args.packing;
  mapped.workspace = args.workspace.forward;
  return mapped;
}

/// The tensor maps of the wgmma recomputation (deltaChunkScanWgmmaKernel
/// with kSave): k, v and M as the forward's scan maps them, and `o` over
/// the saved states, which it stores by TMA (host only; args.workspace
/// carved).
template <class Config>
inline cudaError_t encodeRecomputationMaps(DeltaRuleTensorMaps &maps,
                                           const DeltaRuleBackwardArgs<Config> &args) {
  const cudaError_t error = encodeScanMaps(maps, scanMapsArguments(args, args.v), false, false);
  return error != cudaSuccess
             ? error
             : encodeChunkStateMap<Config>(&maps.o, args.workspace.states, args.packing);
}

/// The tensor maps of the wgmma reverse scan, in DeltaRuleTensorMaps'
/// fields: q and k as named, `v` over dO, `transform` over N, `scores`
/// over P and `o` over dS', which it stores by TMA (host only;
/// args.workspace carved).
template <class Config>
inline cudaError_t encodeReverseScanMaps(DeltaRuleTensorMaps &maps,
                                         const DeltaRuleBackwardArgs<Config> &args) {
  DeltaRuleArgs<Config> mapped = scanMapsArguments(args, args.dO);
  mapped.workspace.transform = args.workspace.forward.inverse;
  const cudaError_t error = encodeScanMaps(maps, mapped, false, true);
  return error != cudaSuccess
             ? error
             : encodeChunkStateMap<Config>(&maps.o, args.workspace.stateGrads, args.packing);
}

template <class Config>
__global__ void __launch_bounds__(ReverseScanWgmmaShape<Config>::kThreads, 1)
    deltaChunkReverseScanWgmmaKernel(DeltaRuleBackwardArgs<Config> args,
                                     const __grid_constant__ DeltaRuleTensorMaps maps) {
  using B = DeltaRuleBackwardShape<Config>;
  using R = ReverseScanWgmmaShape<Config>;
  using Element = typename Config::Element;
  using Gradient = typename GradientOf<Config>::type;
  using Store = gdn::device::Element<Gradient>;
  constexpr int kC = R::kChunk, kK = B::kK, kV = B::kV;
#if defined(__CUDA_ARCH__) && !GDN_WGMMA_AVAILABLE
  static_assert(!ReverseScanWgmmaOf<Config>::value, GDN_WGMMA_NEEDS_SM90A);
#endif
  const PackingView &packing = args.packing;
  if (packingInvalid(args))
    return;
  // Block -> (segment slot, value head), heads fastest; the block writes
  // chunks [first, end) of its sequence, running the gradient down from
  // chunk stop - 1 (warmupStop, as the mma.sync kernel).
  const int head = static_cast<int>(blockIdx.x % B::kHV);
  const ChainSegment segment(packing, blockIdx.x / B::kHV, args.reverseSegmentChunks);
  if (!segment.valid)
    return;
  const int32_t seq = segment.seq;
  const int keyHead = head / (B::kHV / B::kH);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int group = warp / 4;          // this thread's warpgroup
  const int groupColumn0 = 64 * group; // its V columns
  const int rowInGroup = 16 * (warp % 4) + lane / 4; // + 8 for e >= 2
  const int pairColumn = 2 * (lane % 4);             // + 8 j, + 1
  const int transposeColumn = groupColumn0 + 16 * (warp % 4);
  const int32_t length = packing.length(seq);
  const int64_t begin = packing.begin(seq);
  const int32_t chunks = segment.chunks;
  const int64_t slot0 = firstSlot(packing, seq);
  const int64_t valueRow = static_cast<int64_t>(B::kHV) * kV;
  const DeltaRuleBackwardWorkspace &ws = args.workspace;
  const int32_t first = segment.first;
  const int32_t stop =
      segment.endsSequence()
          ? chunks
          : warmupStop(ws.forward.transitionBound, slot0, B::kHV, head, segment.end,
                       chunks, args.warmupLogBound);
  const bool fromFinal = stop == chunks; // else from zero after chunk stop - 1

  // Padding rows of this sequence's slot get zero dv (from the sequence's
  // first segment).
  for (int64_t i = tid; segment.startsSequence() && i < (packing.slot(seq) - length) * kV;
       i += R::kThreads)
    args.dv[(begin + length + i / kV) * valueRow + head * kV + i % kV] = Store::store(0.0f);

  extern __shared__ uint4 wgmmaShared[];
  // Aligned as the forward's wgmma scan aligns (its comment says why
  // through an integer).
  char *base = reinterpret_cast<char *>(
      (reinterpret_cast<uintptr_t>(wgmmaShared) + 1023) & ~uintptr_t(1023));
  Element *staging = reinterpret_cast<Element *>(base + R::kOutput);
  float *toStart = reinterpret_cast<float *>(base + R::kDecays) + group * 3 * kC;
  const float *toEnd = toStart + kC, *betas = toStart + 2 * kC;
  uint64_t *full = reinterpret_cast<uint64_t *>(base + R::kBarriers);
  // Chunk c is the block's (stop - 1 - c)-th: its stage and phase.
  auto stage = [&](int32_t c) {
    return base + ((stop - 1 - c) % R::kStages) * R::kStageBytes;
  };
  // This warpgroup's dS' boxes ([key][column], Swizzle128Tile).
  char *stateStaging = base + R::kStateStaging + group * R::kStateStagingBytes;
  auto stateStagingAt = [&](int key, int column) {
    return reinterpret_cast<__nv_bfloat16 *>(
        stateStaging + (key / 64) * R::Tile::kBlockBytes +
        R::Tile::offset(key % 64, column - groupColumn0));
  };

  // dS^T of this warpgroup's 64 columns: accumulator element (r, k) is
  // dS[k][groupColumn0 + r].
  float grad[kK / 2];
  const int64_t stateBase = (static_cast<int64_t>(seq) * B::kHV + head) * kK * kV + groupColumn0;
  auto stateOffset = [&](int j, int e) {
    const int row = rowInGroup + 8 * (e / 2);
    const int key = 8 * j + pairColumn + e % 2;
    return static_cast<int64_t>(key) * kV + row;
  };
#pragma unroll
  for (int j = 0; j < kK / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      grad[4 * j + e] = fromFinal && args.dFinalState
                            ? args.dFinalState[stateBase + stateOffset(j, e)]
                            : 0.0f;

  // Thread 0 issues the copies of chunk c into its stage: one TMA box per
  // 64 columns of Q, K and dO, one each of N and P, a bulk copy of G.
  auto fetch = [&](int32_t c) {
    char *at = stage(c);
    uint64_t *barrier = full + (stop - 1 - c) % R::kStages;
    const int row0 = static_cast<int>(begin) + c * kC;
    const int tileRow = static_cast<int>(((slot0 + c) * B::kHV + head) * kC);
    mbarrierExpectBytes(barrier, R::kStageCopyBytes);
#pragma unroll
    for (int b = 0; b < kK / 64; ++b) {
      tmaLoad2D(at + R::kStageQ + b * R::Tile::kBlockBytes, &maps.q, keyHead * kK + 64 * b,
                row0, barrier);
      tmaLoad2D(at + R::kStageK + b * R::Tile::kBlockBytes, &maps.k, keyHead * kK + 64 * b,
                row0, barrier);
    }
#pragma unroll
    for (int b = 0; b < kV / 64; ++b)
      tmaLoad2D(at + R::kStageDO + b * R::Tile::kBlockBytes, &maps.v, head * kV + 64 * b, row0,
                barrier);
    tmaLoad2D(at + R::kStageN, &maps.transform, 0, tileRow, barrier);
    tmaLoad2D(at + R::kStageP, &maps.scores, 0, tileRow, barrier);
    bulkLoad(at + R::kStageG, ws.forward.gateCumsum + tileRow, 4 * kC, barrier);
  };
  if (tid == 0)
    for (int s = 0; s < R::kStages; ++s)
      mbarrierInit(full + s, 1);
  __syncthreads();
  if (tid == 0)
    for (int32_t c = stop - 1; c > stop - R::kStages && c >= first; --c)
      fetch(c);

  for (int32_t c = stop - 1; c >= first; --c) {
    const int32_t local = stop - 1 - c;
    const bool emit = c < segment.end; // else a warm-up chunk: no output
    const int rows = length - c * kC < kC ? length - c * kC : kC;
    const int64_t chunkRow0 = begin + static_cast<int64_t>(c) * kC;
    // This thread's beta (tokens 0 .. 63 of the warpgroup), loaded before
    // the wait so that its latency hides behind the copies.
    const int betaToken = tid % 128;
    const float beta = betaToken < rows ? args.beta[(chunkRow0 + betaToken) * B::kHV + head] : 0.0f;
    mbarrierWait(full + local % R::kStages, (local / R::kStages) & 1);
    char *at = stage(c);
    if (rows < kC) {
      // TMA read past the sequence's end: zero those rows of Q, K, dO.
      zeroRowsFrom<kK, R::kThreads>(at + R::kStageQ, rows);
      zeroRowsFrom<kK, R::kThreads>(at + R::kStageK, rows);
      zeroRowsFrom<kV, R::kThreads>(at + R::kStageDO, rows);
      fenceSharedForAsyncProxy();
    }
    // The previous chunk's dS' has left the staging boxes.
    if (tid % 128 == 0)
      bulkWaitRead<0>();
    // Chunk c is whole for every thread, and every warpgroup is done with
    // chunk c + 1: its stage, the staging tiles and the decays may be
    // reused.
    __syncthreads();
    if (tid == 0 && c - (R::kStages - 1) >= first)
      fetch(c - (R::kStages - 1));
    const float *gate = reinterpret_cast<const float *>(at + R::kStageG);

    // dS'^T in bf16 as the A operand of K dS', and dS' for the chunk
    // kernel staged as [key][column] (stmatrix.trans; element (r, k) of
    // dS'^T is dS'[k][column r]) before the products, then stored by TMA
    // to [slot][HV][K][V] after the decays' barrier below.
    uint32_t gradA[kK / 16][4];
#pragma unroll
    for (int s = 0; s < kK / 16; ++s)
      accumulatorToA(grad, s, gradA[s]);
    if (emit) {
      stageOutputTransposed<kK / 8>(grad, 1.0f, group, tid, stateStagingAt);
      fenceSharedForAsyncProxy();
    }
    // dO^T as A fragments, k step s = tokens 16 s ..: ldmatrix.trans of
    // dO's 8 x 8 blocks (tokens x columns), matrix m = (tokens + 8 (m / 2),
    // columns + 8 (m % 2)) as the A fragment's registers order them.
    uint32_t outputA[4][4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int matrix = lane / 8;
      loadMatrices<true>(outputA[s],
                         reinterpret_cast<const Element *>(
                             at + R::kStageDO +
                             R::Tile::offset(16 * s + 8 * (matrix / 2) + lane % 8,
                                             transposeColumn + 8 * (matrix % 2))));
    }
    // The state gradient's decay, before any product is in flight: done
    // under them, ptxas made the products wait or arrive first (C7517,
    // C7519), and the two placements timed within 1% of each other.
    const float lastGate = gate[rows - 1];
    const float chunkDecay = decay(lastGate);
#pragma unroll
    for (int i = 0; i < kK / 2; ++i)
      grad[i] *= chunkDecay;
    float keyProduct[32], scoreProduct[32];
    wgmmaFence();
    wgmmaSwizzled<64, kK / 16, 0>(keyProduct, gradA, at + R::kStageK, false);
    wgmmaSwizzled<64, 4, 1>(scoreProduct, outputA, at + R::kStageP, false);
    wgmmaCommit();

    // While they run: the chunk's decays and betas, one token per thread
    // of the warpgroup for e and f, the first 64 for beta.
    {
      const int t = tid % 128, token = t % kC;
      toStart[t] = t < kC ? decay(gate[token]) : decay(lastGate - gate[token]);
      if (t < kC)
        toStart[2 * kC + t] = beta;
    }
    warpgroupBarrier(group);
    if (emit && tid % 128 == 0) {
      const int stateRow = static_cast<int>(((slot0 + c) * B::kHV + head) * kK);
#pragma unroll
      for (int b = 0; b < kK / 64; ++b)
        tmaStore2D(&maps.o, groupColumn0, stateRow + 64 * b,
                   stateStaging + b * R::Tile::kBlockBytes);
      bulkCommit();
    }
    // This thread's tokens come in pairs 8 j + pairColumn + {0, 1}: read
    // where they are used (held in registers across the products, the
    // three sets of pairs made ptxas spill).
    auto pair = [&](const float *values, int j) {
      return *reinterpret_cast<const float2 *>(values + 8 * j + pairColumn);
    };
    auto pick = [](float2 two, int i) { return i % 2 ? two.y : two.x; };

    // X^T = scale dO^T diag(e) in bf16: register r of k step s holds
    // tokens 16 s + 8 (r / 2) + pairColumn + {0, 1}.
    uint32_t scaledA[4][4];
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const uint32_t values = outputA[s][r];
        const float2 decays = pair(toStart, 2 * s + r / 2);
        scaledA[s][r] = packBf16(args.scale * decays.x * bf16BitsToFloat(values & 0xffffu),
                                 args.scale * decays.y * bf16BitsToFloat(values >> 16));
      }

    // dVn^T = (dS'^T K^T) diag(f) + scale dO^T P, then W^T = dVn^T N; with
    // it, dS^T += X^T Q (off the chain).
    wgmmaWait<0>();
    wgmmaSettle(keyProduct);
    wgmmaSettle(scoreProduct);
#pragma unroll
    for (int i = 0; i < 32; ++i)
      keyProduct[i] = pick(pair(toEnd, i / 4), i) * keyProduct[i] + args.scale * scoreProduct[i];
    uint32_t freshA[4][4];
#pragma unroll
    for (int s = 0; s < 4; ++s)
      accumulatorToA(keyProduct, s, freshA[s]);
    float weighted[32];
    wgmmaFence();
    wgmmaSwizzled<64, 4, 1>(weighted, freshA, at + R::kStageN, false);
    wgmmaCommit();
    wgmmaSwizzled<kK, 4, 1>(grad, scaledA, at + R::kStageQ, true);
    wgmmaCommit();
    wgmmaWait<1>();
    wgmmaSettle(weighted);

    // dR^T = W^T diag(beta) (dv), Y^T = -dR^T diag(e); dS^T += Y^T K.
    float residual[32];
#pragma unroll
    for (int i = 0; i < 32; ++i)
      residual[i] = pick(pair(betas, i / 4), i) * weighted[i];
    uint32_t updateA[4][4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      float y[8];
#pragma unroll
      for (int e = 0; e < 8; ++e)
        y[e] = -pick(pair(toStart, 2 * s + e / 4), e) * residual[8 * s + e];
      updateA[s][0] = packBf16(y[0], y[1]);
      updateA[s][1] = packBf16(y[2], y[3]);
      updateA[s][2] = packBf16(y[4], y[5]);
      updateA[s][3] = packBf16(y[6], y[7]);
    }
    wgmmaFence();
    wgmmaSwizzled<kK, 4, 1>(grad, updateA, at + R::kStageK, true);
    wgmmaCommit();

    // While the update runs: W (bf16) through the staging tile in 16-byte
    // rows, dv from registers, the chunk's real rows only.
    if (emit) {
      auto stagedAt = [&](int token, int column) {
        return staging + token * R::kLdOut + column;
      };
      stageOutputTransposed(weighted, 1.0f, group, tid, stagedAt);
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const int token = 8 * (i / 4) + pairColumn + i % 2;
        const int column = rowInGroup + 8 * ((i % 4) / 2);
        if (token < rows)
          args.dv[(chunkRow0 + token) * valueRow + head * kV + groupColumn0 + column] =
              Store::store(residual[i]);
      }
      warpgroupBarrier(group);
      storeStagedRows(ws.weighted, valueRow, chunkRow0, head * kV, rows, group, tid,
                      stagedAt);
    }
    wgmmaWait<0>();
    wgmmaSettle(grad);
  }

  if (tid % 128 == 0)
    bulkWaitAll(); // dS''s last stores read their boxes before the block ends
  if (Config::kHasInitialState && segment.startsSequence()) {
#pragma unroll
    for (int j = 0; j < kK / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        args.dInitialState[stateBase + stateOffset(j, e)] = grad[4 * j + e];
  }
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_DELTA_RULE_BACKWARD_WGMMA_CUH
