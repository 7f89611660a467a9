//===- delta_rule_backward_fused_wgmma.cuh - one-pass reverse backward -*- CUDA
//-*-===//
//
// The backward's reverse scan and chunk gradients in one warp-specialised
// kernel for sm_90a (K = V = 128); a Config selects it with
// `kFusedBackwardWgmma = true`. The reverse scan's dS' and W then pass
// between warpgroups through shared memory instead of the workspace: per
// chunk and value head 48 KiB that are neither written nor read back
// (docs/performance.md, "What bounds the backward").
//
// One block per (sequence or segment of a split chain, value head), walking
// the chunks from the last, four warpgroups:
//
//  - the carrier (warpgroup 2) holds dS^T (128 value rows x 128 keys, fp32,
//    two m64n128 accumulators) across the walk. Per chunk it stages dS' in
//    bf16 into the exchange tile dS' ([key][value], stmatrix.trans), decays
//    its state gradient, adds X^T Q (X^T = scale dO^T diag(e), A operands
//    by ldmatrix.trans from the dO tile) and, once W is in shared memory,
//    Y^T K (Y^T = -W^T diag(beta e), from the W tile the same way);
//  - two math warpgroups (0 and 1) run the chain that connects one chunk's
//    dS' to the next, each for 64 value rows: dVn^T = dS'^T K^T diag(f) +
//    scale dO^T P (A operands from the dS' and dO tiles, MN-major), W^T =
//    dVn^T N (A from registers), dv = beta W, W staged into the exchange
//    tile W ([token][value]); then the chunk's products of
//    delta_rule_backward_chunk_wgmma.cuh for this value head (T1, T2, T3,
//    the scores, E1, F, dq, dk, dg, dbeta), each warpgroup 64 key columns
//    or 32 token columns of them;
//  - the producer (warpgroup 3) copies the chunk's tiles by TMA (Q, K, dO,
//    Vn, S, N, P, G) into single buffers, Q, K and the gates doubled, each
//    with a `full` and an `empty` mbarrier, refilling a tile as its last
//    reader releases it (three threads in three warps, so that no copy
//    waits behind another's buffer), and 64 of its threads load the betas.
//    V is read only for dbeta's sum_v V o W, straight from global memory
//    under T3 (its 16 KiB of shared memory went to Q's second buffer).
//
// With bf16 gradients a whole chunk's dv (staged in E1 and F before the
// scores) and dq, dk (staged in the chunk's own Q and K tiles after their
// last reads) leave by TMA; otherwise, and for a sequence's partial last
// chunk, every thread stores its own.
//
// The algebra and its bf16 roundings are those of the two kernels it
// replaces (delta_rule_backward_wgmma.cuh, delta_rule_backward_chunk_wgmma.cuh):
// dS' rounded to bf16 once for every product that reads it, W once. One
// rounding differs: Y^T is built from the bf16 W tile, scaled by -beta e,
// where the reverse scan scales W's fp32 accumulator, so the bits differ
// while the precision is the same (the emulator tests hold both to the
// float64 reference). With GQA a block walks one value head, so dq and dk
// come per value head. With two value heads a key head and bf16 gradients
// (Qwen3-Next's and Qwen3.5's layers) the two heads' blocks form a
// thread-block cluster: each stages its dq and dk in bf16, and block 0 sums
// dq, block 1 dk, reading the peer's tile through distributed shared
// memory, and stores the key head's (cluster.cuh; two mbarriers per chunk
// hand the tiles over and back). Otherwise the partials go to the workspace
// in the gradients' type and deltaRuleKeyGradSumKernel sums them. Either
// way the sum is in fp32 over the bf16 (or fp32) partials in head order,
// rounded once, so the bits agree (no atomics).
//
// Warm-up chunks of a split chain (delta_rule_backward.cuh) run the chain
// and the carrier only; their S and Vn are not copied.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_DELTA_RULE_BACKWARD_FUSED_WGMMA_CUH
#define GDN_DEVICE_DELTA_RULE_BACKWARD_FUSED_WGMMA_CUH

#include "gdn/device/cluster.cuh"

// Included by delta_rule_backward.cuh after what it uses.

namespace gdn {
namespace device {

/// Optional Config member kFusedBackwardWgmma: true runs the backward's
/// reverse scan and chunk gradients as one warp-specialised kernel
/// (sm_90a, K = V = 128).
GDN_OPTIONAL_CONFIG_MEMBER(FusedBackwardWgmmaOf, kFusedBackwardWgmma, false)
/// Optional Config member kFusedClusterKeyGradSums (default true): see
/// FusedClusterKeyGradSums; false keeps the per-value-head partials and the
/// sum kernel (for comparison).
GDN_OPTIONAL_CONFIG_MEMBER(FusedClusterSumsAllowedOf, kFusedClusterKeyGradSums, true)

/// Whether the fused kernel runs as clusters of a key head's two value
/// heads that sum dq and dk through each other's shared memory: GQA with
/// two value heads a key head and bf16 gradients (staged in bf16 for the
/// TMA stores), unless the Config says not to.
template <class Config> struct FusedClusterKeyGradSums {
  static constexpr bool value =
      FusedBackwardWgmmaOf<Config>::value && FusedClusterSumsAllowedOf<Config>::value &&
      Config::kValueHeads == 2 * Config::kKeyHeads &&
      std::is_same_v<typename GradientOf<Config>::type, __nv_bfloat16>;
  /// Blocks a cluster: the launch's cluster dimension along x.
  static constexpr unsigned kBlocks = value ? 2 : 1;
};

/// The fused kernel's mbarriers: a `full` and an `empty` one per input
/// buffer, then the four hand-offs between the carrier and the math
/// warpgroups.
enum FusedBackwardBarrier : int {
  kFusedQ0 = 0, ///< Q of even local chunks (Q1: odd)
  kFusedQ1,
  kFusedK0, ///< K of even local chunks (K1: odd)
  kFusedK1,
  kFusedOutput,    ///< dO
  kFusedTransform, ///< N and P
  kFusedState,     ///< S (emitting chunks only)
  kFusedFresh,     ///< Vn (emitting chunks only)
  kFusedGates0,    ///< G and beta of even local chunks (Gates1: odd)
  kFusedGates1,
  kFusedInputs,
  // Hand-offs (after the inputs' full and empty barriers).
  kFusedStateGradReady = 2 * kFusedInputs, ///< carrier -> math: dS' staged
  kFusedStateGradFree,                     ///< math -> carrier: dS' read
  kFusedWeightedReady,                     ///< math -> carrier: W staged
  kFusedWeightedFree,                      ///< carrier -> math: W read
  // Cluster sums (FusedClusterKeyGradSums): both blocks' math warpgroups
  // arrive on both blocks' barriers.
  kFusedPartialsStaged, ///< this chunk's dq and dk staged in every block
  kFusedPartialsRead,   ///< every block done reading the peer's tile
  kFusedBarriers
};

/// Sizes, roles and the shared-memory layout of the fused kernel. The base
/// is aligned to 1024 bytes at run time (kBytes includes the slack).
template <class Config> struct FusedBackwardShape {
  using B = DeltaRuleBackwardShape<Config>;
  static constexpr int kChunk = 64, kK = B::kK, kV = B::kV;
  static constexpr int kGroup = B::kHV / B::kH;
  static_assert(kK == 128 && kV == 128,
                "delta rule backward (fused): kFusedBackwardWgmma needs K = V = 128 "
                "(two math warpgroups of 64 value rows; the carrier holds 128 x 128); "
                "for other head dims leave it unset (the reverse scan and the chunk "
                "kernel run instead)");
  static constexpr int kMathThreads = 256; // warpgroups 0, 1
  static constexpr int kCarrier = 256;     // warpgroup 2's first thread
  static constexpr int kProducer = 384;    // warpgroup 3's first thread
  static constexpr int kThreads = 512;
  static constexpr int kConsumerThreads = 384; // math + carrier
  // setmaxnreg per warpgroup, 512 registers a lane in all (4 x 128 at
  // launch): the carrier's 128 accumulators and the A fragments of its
  // updates; the math warpgroups' dq, dk and one product in flight.
  static constexpr int kCarrierRegisters = 192, kMathRegisters = 144;
  static constexpr int kProducerRegisters = 4 * 128 - kCarrierRegisters - 2 * kMathRegisters;
  static_assert(kProducerRegisters >= 24 && kProducerRegisters % 8 == 0,
                "delta rule backward (fused): setmaxnreg within the launch's registers");
  using Tile = Swizzle128Tile<kChunk>;  // token tiles: 64 rows
  using StateTile = Swizzle128Tile<kK>; // S and dS': K rows
  static constexpr uint32_t kKeyBytes = 2 * kChunk * kK;
  static constexpr uint32_t kValueBytes = 2 * kChunk * kV;
  static constexpr uint32_t kStateBytes = 2 * kK * kV;
  static constexpr uint32_t kScoreBytes = 2 * kChunk * kChunk;
  static constexpr size_t kQueries = 0;                          // two buffers
  static constexpr size_t kKeys = kQueries + 2 * size_t(kKeyBytes); // two buffers
  static constexpr size_t kOutput = kKeys + 2 * size_t(kKeyBytes);
  static constexpr size_t kFresh = kOutput + kValueBytes;
  static constexpr size_t kState = kFresh + kValueBytes;
  static constexpr size_t kInverse = kState + kStateBytes;
  static constexpr size_t kScores = kInverse + kScoreBytes;
  static constexpr size_t kStateGrad = kScores + kScoreBytes; // exchange: dS'
  static constexpr size_t kWeighted = kStateGrad + kStateBytes; // exchange: W
  static constexpr size_t kE1 = kWeighted + kValueBytes;
  static constexpr size_t kF = kE1 + kScoreBytes;
  static constexpr size_t kGates = kF + kScoreBytes; // two chunks' G
  static constexpr size_t kBetas = kGates + 2 * 4 * kChunk;
  static constexpr size_t kSums = kBetas + 2 * 4 * kChunk;
  static constexpr size_t kFactors = kSums + 4 * B::kSumRows * kChunk; // the carrier's
  static constexpr size_t kBarrierOffset = kFactors + 2 * 2 * 4 * kChunk;
  static constexpr size_t kBytes = kBarrierOffset + 8 * kFusedBarriers + 1024;
  static_assert(kF % 1024 == 0 && kBarrierOffset % 8 == 0, "aligned shared regions");
  static_assert(kBytes <= 227 * 1024, "delta rule backward (fused): shared memory");
  /// Arrivals that release each input buffer: every thread that reads it.
  __host__ __device__ static constexpr unsigned emptyCount(int buffer) {
    return buffer == kFusedQ0 || buffer == kFusedQ1 || buffer == kFusedK0 || buffer == kFusedK1 ||
                   buffer == kFusedOutput || buffer == kFusedGates0 ||
                   buffer == kFusedGates1
               ? kConsumerThreads
               : kMathThreads;
  }
};

/// The fused kernel's tensor maps (a kernel parameter): q, k per key head;
/// dO and Vn per value head; S per chunk; N and P per chunk tile. With bf16
/// gradients, 16-byte aligned, also the stores' maps: dv, and dq and dk (or
/// with GQA their per-value-head partials); `storesByTma` is then 1 and a
/// whole chunk's gradients leave by TMA from staged tiles (per-thread
/// stores otherwise, and for a sequence's partial last chunk).
struct FusedBackwardTensorMaps {
  CUtensorMap q, k, dO, fresh, states, inverse, scores;
  CUtensorMap dv, dq, dk;
  int storesByTma;
};

/// Encodes them (host only; args.workspace carved); the per-chunk maps
/// refused past 32-bit rows, as encodeChunkStateMap and encodeScanMaps.
template <class Config>
inline cudaError_t encodeFusedBackwardMaps(FusedBackwardTensorMaps &maps,
                                           const DeltaRuleBackwardArgs<Config> &args) {
  using B = DeltaRuleBackwardShape<Config>;
  const uint64_t rows = static_cast<uint64_t>(args.packing.bufferTokens);
  const uint64_t keys = uint64_t(B::kH) * B::kK, values = uint64_t(B::kHV) * B::kV;
  const uint64_t tiles =
      static_cast<uint64_t>(DeltaRuleWorkspace::slots(args.packing)) * B::kHV * 64;
  if (tiles > static_cast<uint64_t>(INT32_MAX))
    return cudaErrorInvalidValue;
  const DeltaRuleBackwardWorkspace &ws = args.workspace;
  cudaError_t error = encodeRowMajorMaps({{&maps.q, args.q, keys, rows},
                                          {&maps.k, args.k, keys, rows},
                                          {&maps.dO, args.dO, values, rows},
                                          {&maps.fresh, ws.fresh, values, rows},
                                          {&maps.inverse, ws.forward.inverse, 64, tiles},
                                          {&maps.scores, ws.forward.scores, 64, tiles}});
  if (error != cudaSuccess)
    return error;
  maps.storesByTma = 0;
  if constexpr (std::is_same_v<typename GradientOf<Config>::type, __nv_bfloat16>) {
    // Per-value-head dq and dk (GQA without cluster sums).
    constexpr bool kPartials = B::kHV != B::kH && !FusedClusterKeyGradSums<Config>::value;
    const void *dq = kPartials ? ws.queryGrads : args.dq, *dk = kPartials ? ws.keyGrads : args.dk;
    const uint64_t keyColumns = kPartials ? values / B::kV * B::kK : keys;
    auto aligned = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (aligned(args.dv) && aligned(dq) && aligned(dk)) {
      error = encodeRowMajorMaps({{&maps.dv, args.dv, values, rows},
                                  {&maps.dq, dq, keyColumns, rows},
                                  {&maps.dk, dk, keyColumns, rows}});
      if (error != cudaSuccess)
        return error;
      maps.storesByTma = 1;
    }
  }
  return encodeChunkStateMap<Config>(&maps.states, ws.states, args.packing);
}

/// bar.sync `id`, `count` threads (ids 1 .. 4 are warpgroupBarrier's).
__device__ __forceinline__ void namedBarrierSync(int id, int count) {
#ifdef GDN_DEVICE_EMULATION
  emulation::namedBarrier(id, count);
#else
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
#endif
}

/// The fused kernel's named barriers: the two math warpgroups; math and
/// carrier together.
constexpr int kFusedMathBarrier = 5, kFusedConsumerBarrier = 6;

template <class Config>
__global__ void __launch_bounds__(FusedBackwardShape<Config>::kThreads, 1)
    deltaChunkFusedBackwardKernel(DeltaRuleBackwardArgs<Config> args,
                                  const __grid_constant__ FusedBackwardTensorMaps maps) {
  using B = DeltaRuleBackwardShape<Config>;
  using F = FusedBackwardShape<Config>;
  using Element = typename Config::Element;
  using Gradient = typename GradientOf<Config>::type;
  using Store = gdn::device::Element<Gradient>;
  using Tile = typename F::Tile;
  using StateTile = typename F::StateTile;
  constexpr int kC = F::kChunk, kK = B::kK, kV = B::kV, kGroup = F::kGroup;
  constexpr int kHalf = 64; // value rows, key columns of a math warpgroup
  constexpr bool kClusterSums = FusedClusterKeyGradSums<Config>::value;
#if defined(__CUDA_ARCH__) && !GDN_WGMMA_AVAILABLE
  static_assert(!FusedBackwardWgmmaOf<Config>::value, GDN_WGMMA_NEEDS_SM90A);
#endif
  const PackingView &packing = args.packing;
  if (packingInvalid(args))
    return;
  // Block -> (segment slot, value head), heads fastest, as the wgmma
  // reverse scan: chunks [first, end) are the block's, the gradient runs
  // down from chunk stop - 1 (warmupStop).
  const int head = static_cast<int>(blockIdx.x % B::kHV);
  const ChainSegment segment(packing, blockIdx.x / B::kHV, args.reverseSegmentChunks);
  if (!segment.valid)
    return;
  const int32_t seq = segment.seq;
  const int keyHead = head / kGroup;
  const int thread = threadIdx.x;
  const int32_t length = packing.length(seq);
  const int64_t begin = packing.begin(seq);
  const int32_t chunks = segment.chunks;
  const int64_t slot0 = firstSlot(packing, seq);
  const int64_t keyRow = static_cast<int64_t>(B::kH) * kK;
  const int64_t valueRow = static_cast<int64_t>(B::kHV) * kV;
  const DeltaRuleBackwardWorkspace &ws = args.workspace;
  const int32_t first = segment.first;
  // Where value head `h`'s walk starts (its warm-up depends on its decay).
  auto stopOf = [&](int h) {
    return segment.endsSequence() ? chunks
                                  : warmupStop(ws.forward.transitionBound, slot0, B::kHV, h,
                                               segment.end, chunks, args.warmupLogBound);
  };
  const int32_t stop = stopOf(head);
  const bool fromFinal = stop == chunks; // else from zero after chunk stop - 1
  // With cluster sums, the peer's (value head head ^ 1: blocks run heads
  // fastest and HV is even, so the cluster rank is head % 2): its chunk c
  // sits in its tile buffer (peerStop - 1 - c) % 2, which differs from this
  // block's when their warm-ups differ in length.
  const int32_t peerStop = kClusterSums ? stopOf(head ^ 1) : stop;

  // Padding rows of this sequence's slot (from its first segment): zero dv,
  // dg and dbeta of this value head, and dq, dk of its key head (without
  // GQA; with cluster sums, the cluster's first block) or its
  // per-value-head partials (GQA otherwise).
  if (segment.startsSequence() && thread < F::kConsumerThreads) {
    const int64_t end = begin + length, padding = packing.slot(seq) - length;
    for (int64_t i = thread; i < padding * kV; i += F::kConsumerThreads)
      args.dv[(end + i / kV) * valueRow + head * kV + i % kV] = Store::store(0.0f);
    for (int64_t i = thread; i < padding; i += F::kConsumerThreads)
      args.dg[(end + i) * B::kHV + head] = args.dbeta[(end + i) * B::kHV + head] = 0.0f;
    for (int64_t i = thread; i < padding * kK; i += F::kConsumerThreads) {
      if constexpr (kGroup == 1 || kClusterSums) {
        if (head % kGroup != 0)
          break;
        const int64_t at = (end + i / kK) * keyRow + keyHead * kK + i % kK;
        args.dq[at] = args.dk[at] = Store::store(0.0f);
      } else {
        const int64_t at = ((end + i / kK) * B::kHV + head) * kK + i % kK;
        static_cast<Gradient *>(ws.queryGrads)[at] = static_cast<Gradient *>(ws.keyGrads)[at] =
            Store::store(0.0f);
      }
    }
  }

  extern __shared__ uint4 wgmmaShared[];
  char *base = alignSharedTo1024(wgmmaShared);
  uint64_t *full = reinterpret_cast<uint64_t *>(base + F::kBarrierOffset);
  uint64_t *empty = full + kFusedInputs;
  float *gateBuffers = reinterpret_cast<float *>(base + F::kGates);
  float *betaBuffers = reinterpret_cast<float *>(base + F::kBetas);
  auto queriesOf = [&](int local) { return base + F::kQueries + (local % 2) * F::kKeyBytes; };
  auto queryBuffer = [](int local) { return kFusedQ0 + local % 2; };
  char *const stateGrad = base + F::kStateGrad, *const weighted = base + F::kWeighted;
  auto keysOf = [&](int local) { return base + F::kKeys + (local % 2) * F::kKeyBytes; };

  if (thread == 0) {
    for (int b = 0; b < kFusedInputs; ++b) {
      const bool gates = b == kFusedGates0 || b == kFusedGates1;
      mbarrierInit(full + b, gates ? kC : 1); // the betas' 64 loaders
      mbarrierInit(empty + b, F::emptyCount(b));
    }
    mbarrierInit(full + kFusedStateGradReady, 128);
    mbarrierInit(full + kFusedStateGradFree, F::kMathThreads);
    mbarrierInit(full + kFusedWeightedReady, F::kMathThreads);
    mbarrierInit(full + kFusedWeightedFree, 128);
    if constexpr (kClusterSums) {
      // Each block's two math warpgroups arrive on both blocks' barriers.
      mbarrierInit(full + kFusedPartialsStaged, 2 * 2);
      mbarrierInit(full + kFusedPartialsRead, 2 * 2);
    }
  }
  // With cluster sums, the peer's barriers are initialised before anyone
  // arrives on them, and the peer has started.
  if constexpr (kClusterSums)
    clusterSync();
  else
    __syncthreads();

  // The walk: local chunk i = stop - 1 - c; emitting chunks (c < end) are
  // counted by e = end - 1 - c for the buffers only they fill.
  struct Chunk {
    int32_t c;
    int local, emitted, rows;
    bool emit;
    int64_t row0, tileIndex;
  };
  auto chunkAt = [&](int32_t c) {
    Chunk k;
    k.c = c;
    k.local = stop - 1 - c;
    k.emit = c < segment.end;
    k.emitted = segment.end - 1 - c;
    k.rows = length - c * kC < kC ? length - c * kC : kC;
    k.row0 = begin + static_cast<int64_t>(c) * kC;
    k.tileIndex = (slot0 + c) * B::kHV + head;
    return k;
  };

  if (thread >= F::kProducer) {
    //===------------------------------------------------------------===//
    // Producer: warps 0 and 1 load the betas and G; one thread of warp 2
    // copies K, N, P and dO, one of warp 3 S, Vn and Q, each in the order
    // the consumers release them, so that a copy waiting for its buffer
    // holds back no copy of another (one thread issuing everything kept
    // the next chunk's G behind this chunk's last release).
    //===------------------------------------------------------------===//
#if GDN_WGMMA_AVAILABLE
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(F::kProducerRegisters));
#endif
    const int p = thread - F::kProducer;
    const int role = p < kC ? 0 : p == 64 ? 1 : p == 96 ? 2 : -1;
    if (role < 0)
      return;
    // Waits until a buffer's previous fill was released (its `round`-th
    // use; the first finds it free).
    auto release = [&](int buffer, int round) {
      if (round >= 1)
        mbarrierWait(empty + buffer, (round - 1) & 1);
    };
    for (int32_t c = stop - 1; c >= first; --c) {
      const Chunk k = chunkAt(c);
      const int y = static_cast<int>(k.row0);
      const int tileRow = static_cast<int>(k.tileIndex * kC);
      // A token tile of `columns` columns from `map`, from column x0.
      auto tokenTile = [&](int buffer, char *at, const CUtensorMap *map, int x0, int columns) {
        mbarrierExpectBytes(full + buffer, 2 * kC * columns);
        for (int b = 0; b < columns / 64; ++b)
          tmaLoad2D(at + b * Tile::kBlockBytes, map, x0 + 64 * b, y, full + buffer);
      };
      if (role == 0) {
        const int gates = kFusedGates0 + k.local % 2;
        release(gates, k.local / 2);
        betaBuffers[(k.local % 2) * kC + p] =
            p < k.rows ? args.beta[(k.row0 + p) * B::kHV + head] : 0.0f;
        if (p != 0) {
          mbarrierArrive(full + gates);
          continue;
        }
        mbarrierExpectBytes(full + gates, 4 * kC);
        bulkLoad(gateBuffers + (k.local % 2) * kC, ws.forward.gateCumsum + k.tileIndex * kC,
                 4 * kC, full + gates);
      } else if (role == 1) {
        const int keyBuffer = kFusedK0 + k.local % 2;
        release(keyBuffer, k.local / 2);
        tokenTile(keyBuffer, keysOf(k.local), &maps.k, keyHead * kK, kK);
        release(kFusedTransform, k.local);
        mbarrierExpectBytes(full + kFusedTransform, 2 * F::kScoreBytes);
        tmaLoad2D(base + F::kInverse, &maps.inverse, 0, tileRow, full + kFusedTransform);
        tmaLoad2D(base + F::kScores, &maps.scores, 0, tileRow, full + kFusedTransform);
        release(kFusedOutput, k.local);
        tokenTile(kFusedOutput, base + F::kOutput, &maps.dO, head * kV, kV);
      } else {
        if (k.emit) {
          release(kFusedState, k.emitted);
          mbarrierExpectBytes(full + kFusedState, F::kStateBytes);
          for (int rb = 0; rb < kK / 64; ++rb)
            for (int cb = 0; cb < kV / 64; ++cb)
              tmaLoad2D(base + F::kState + cb * StateTile::kBlockBytes + rb * 64 * 128,
                        &maps.states, 64 * cb, static_cast<int>(k.tileIndex * kK + 64 * rb),
                        full + kFusedState);
          release(kFusedFresh, k.emitted);
          tokenTile(kFusedFresh, base + F::kFresh, &maps.fresh, head * kV, kV);
        }
        release(queryBuffer(k.local), k.local / 2);
        tokenTile(queryBuffer(k.local), queriesOf(k.local), &maps.q, keyHead * kK, kK);
      }
    }
    return;
  }

  // A partial last chunk (only the walk's first chunk can be one): TMA read
  // the rows past the sequence's end from what follows; every consumer
  // zeroes its share of them before anything reads the tiles.
  auto zeroPartialChunk = [&](const Chunk &k) {
    for (int b : {int(kFusedQ0), int(kFusedK0), int(kFusedOutput)})
      mbarrierWait(full + b, 0);
    zeroTileRowsFrom<kK>(queriesOf(0), k.rows, thread, F::kConsumerThreads);
    zeroTileRowsFrom<kK>(keysOf(0), k.rows, thread, F::kConsumerThreads);
    zeroTileRowsFrom<kV>(base + F::kOutput, k.rows, thread, F::kConsumerThreads);
    if (k.emit) {
      mbarrierWait(full + kFusedFresh, 0);
      zeroTileRowsFrom<kV>(base + F::kFresh, k.rows, thread, F::kConsumerThreads);
    }
    fenceSharedForAsyncProxy();
    namedBarrierSync(kFusedConsumerBarrier, F::kConsumerThreads);
  };

  if (thread >= F::kCarrier) {
    //===------------------------------------------------------------===//
    // Carrier: dS^T, value rows 64 h + (accumulator row) of grad[h].
    //===------------------------------------------------------------===//
#if GDN_WGMMA_AVAILABLE
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(F::kCarrierRegisters));
#endif
    const int tid = thread - F::kCarrier, warp = tid / 32, lane = tid % 32;
    const int rowInGroup = 16 * warp + lane / 4; // + 8 for e >= 2
    const int pairColumn = 2 * (lane % 4);
    float grad[2][kK / 2];
    const int64_t stateBase = (static_cast<int64_t>(seq) * B::kHV + head) * kK * kV;
    auto stateOffset = [&](int h, int j, int e) {
      const int row = 64 * h + rowInGroup + 8 * (e / 2);
      const int key = 8 * j + pairColumn + e % 2;
      return static_cast<int64_t>(key) * kV + row;
    };
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < kK / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          grad[h][4 * j + e] = fromFinal && args.dFinalState
                                   ? args.dFinalState[stateBase + stateOffset(h, j, e)]
                                   : 0.0f;
    auto stateGradAt = [&](int key, int column) {
      return reinterpret_cast<__nv_bfloat16 *>(stateGrad + StateTile::offset(key, column));
    };
    // A fragments of (tile^T diag(factor)) for value rows 64 h ..: tile is
    // dO or W ([token][value]); ldmatrix.trans of its 8 x 8 blocks, as the
    // wgmma reverse scan builds X^T.
    auto transposedScaled = [&](const char *tile, int h, const float *factor,
                                uint32_t (&a)[4][4]) {
      const int matrix = lane / 8, column = 64 * h + 16 * warp + 8 * (matrix % 2);
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        uint32_t raw[4];
        loadMatrices<true>(raw, reinterpret_cast<const Element *>(
                                    tile + Tile::offset(16 * s + 8 * (matrix / 2) + lane % 8,
                                                        column)));
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int token = 16 * s + 8 * (r / 2) + pairColumn;
          a[s][r] = packBf16(factor[token] * bf16BitsToFloat(raw[r] & 0xffffu),
                             factor[token + 1] * bf16BitsToFloat(raw[r] >> 16));
        }
      }
    };
    // Per token of the chunk, the factors of X^T (scale e) and Y^T (-beta
    // e), in two buffers: a thread writes chunk c - 1's while others may
    // still read chunk c's, and chunk c - 2's only after the barrier that
    // every carrier thread passes after its last read of chunk c's.
    float *const factorBuffers = reinterpret_cast<float *>(base + F::kFactors);
    for (int32_t c = stop - 1; c >= first; --c) {
      const Chunk k = chunkAt(c);
      if (k.rows < kC)
        zeroPartialChunk(k);
      const int gates = kFusedGates0 + k.local % 2;
      mbarrierWait(full + gates, (k.local / 2) & 1);
      const float *gate = gateBuffers + (k.local % 2) * kC;
      const float *betas = betaBuffers + (k.local % 2) * kC;
      // dS' of this chunk into the exchange tile once the math warpgroups
      // are done with the last one.
      if (k.local >= 1)
        mbarrierWait(full + kFusedStateGradFree, (k.local - 1) & 1);
      stageOutputTransposed<kK / 8>(grad[0], 1.0f, 0, tid, stateGradAt);
      stageOutputTransposed<kK / 8>(grad[1], 1.0f, 1, tid, stateGradAt);
      fenceSharedForAsyncProxy();
      mbarrierArrive(full + kFusedStateGradReady);
      const float chunkDecay = decay(gate[k.rows - 1]);
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int i = 0; i < kK / 2; ++i)
          grad[h][i] *= chunkDecay;
      float *scaleDecay = factorBuffers + (k.local % 2) * 2 * kC, *updateFactor = scaleDecay + kC;
      if (tid < kC) {
        const float e = decay(gate[tid]);
        scaleDecay[tid] = args.scale * e;
        updateFactor[tid] = -betas[tid] * e;
      }
      warpgroupBarrier(2);
      // dS^T += X^T Q.
      mbarrierWait(full + kFusedOutput, k.local & 1);
      mbarrierWait(full + queryBuffer(k.local), (k.local / 2) & 1);
      // Half by half: with both halves' A fragments built first, ptxas
      // no longer serialised the products (C7511) but spilled 164 bytes at
      // 192 registers, and the kernel took 1-2% longer (H100).
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t scaledA[4][4];
        transposedScaled(base + F::kOutput, h, scaleDecay, scaledA);
        wgmmaFence();
        wgmmaSwizzled<kK, 4, 1>(grad[h], scaledA, queriesOf(k.local), true);
        wgmmaCommit();
      }
      mbarrierArrive(empty + kFusedOutput);
      // dS^T += Y^T K once W is staged.
      mbarrierWait(full + kFusedWeightedReady, k.local & 1);
      mbarrierWait(full + kFusedK0 + k.local % 2, (k.local / 2) & 1);
      const char *keys = keysOf(k.local);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t updateA[4][4];
        transposedScaled(weighted, h, updateFactor, updateA);
        wgmmaFence();
        wgmmaSwizzled<kK, 4, 1>(grad[h], updateA, keys, true);
        wgmmaCommit();
      }
      wgmmaWait<0>();
      wgmmaSettle(grad[0]);
      wgmmaSettle(grad[1]);
      mbarrierArrive(full + kFusedWeightedFree);
      mbarrierArrive(empty + queryBuffer(k.local));
      mbarrierArrive(empty + kFusedK0 + k.local % 2);
      mbarrierArrive(empty + gates);
    }
    if (Config::kHasInitialState && segment.startsSequence()) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int j = 0; j < kK / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            args.dInitialState[stateBase + stateOffset(h, j, e)] = grad[h][4 * j + e];
    }
    return;
  }

  //===--------------------------------------------------------------===//
  // Math warpgroups 0 and 1.
  //===--------------------------------------------------------------===//
#if GDN_WGMMA_AVAILABLE
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(F::kMathRegisters));
#endif
  float *sums = reinterpret_cast<float *>(base + F::kSums);
  char *e1 = base + F::kE1, *mirrored = base + F::kF;
  // A math thread's indices, made per chunk from a thread index the
  // compiler cannot hoist (as the chunk kernel's Lanes: offsets kept across
  // the loop cost spills).
  struct Lanes {
    int tid, warp, lane, group, kc0, rowOf[2], pairColumn, rowInGroup;
    __device__ __forceinline__ Lanes()
        : tid(threadIndexOpaque()), warp(tid / 32), lane(tid % 32), group(warp / 4),
          kc0(kHalf * group), rowOf{16 * (warp % 4) + lane / 4, 16 * (warp % 4) + lane / 4 + 8},
          pairColumn(2 * (lane % 4)), rowInGroup(16 * (warp % 4) + lane / 4) {}
  };
  auto mathBarrier = [] { namedBarrierSync(kFusedMathBarrier, F::kMathThreads); };

  for (int32_t c = stop - 1; c >= first; --c) {
    const Chunk k = chunkAt(c);
    const int rows = k.rows;
    // A whole chunk's gradients leave by TMA where the maps allow it.
    const bool byTma = maps.storesByTma && rows == kC;
    if (rows < kC)
      zeroPartialChunk(k);
    const Lanes lanes;
    const int tid = lanes.tid, warp = lanes.warp, lane = lanes.lane, group = lanes.group;
    const int pairColumn = lanes.pairColumn;
    const int gates = kFusedGates0 + k.local % 2;
    mbarrierWait(full + gates, (k.local / 2) & 1);
    const float *gate = gateBuffers + (k.local % 2) * kC;
    const float *betas = betaBuffers + (k.local % 2) * kC;
    const float lastGate = gate[rows - 1];
    const char *keys = keysOf(k.local);
    const char *output = base + F::kOutput;

    //===---- The chain: dVn^T, W^T, dv for value rows 64 group .. ----===//
    float weightedT[32]; // W^T, then dv^T (kept for dv's staging below)
    {
      float keyProduct[32], scoreProduct[32];
      mbarrierWait(full + kFusedK0 + k.local % 2, (k.local / 2) & 1);
      mbarrierWait(full + kFusedOutput, k.local & 1);
      mbarrierWait(full + kFusedTransform, k.local & 1);
      mbarrierWait(full + kFusedStateGradReady, k.local & 1);
      wgmmaFence();
      // dS'^T K^T: A = dS'^T (the dS' tile's value block `group`, MN-major).
      wgmmaSwizzledOperands<kC, kK / 16, 1, 0>(keyProduct,
                                               stateGrad + group * StateTile::kBlockBytes,
                                               StateTile::kBlockBytes, keys,
                                               Tile::kBlockBytes, false);
      // dO^T P: A = dO^T (MN-major), B = P (MN-major).
      wgmmaSwizzledOperands<kC, kC / 16, 1, 1>(scoreProduct,
                                               output + group * Tile::kBlockBytes,
                                               Tile::kBlockBytes, base + F::kScores,
                                               Tile::kBlockBytes, false);
      wgmmaCommit();
      wgmmaWait<0>();
      wgmmaSettle(keyProduct);
      wgmmaSettle(scoreProduct);
      // Column 8 j + pairColumn + {0, 1} of the accumulators is that token.
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const int token = 8 * (i / 4) + pairColumn + i % 2;
        keyProduct[i] = decay(lastGate - gate[token]) * keyProduct[i] +
                        args.scale * scoreProduct[i];
      }
      uint32_t freshA[4][4];
#pragma unroll
      for (int s = 0; s < 4; ++s)
        accumulatorToA(keyProduct, s, freshA[s]);
      wgmmaFence();
      wgmmaSwizzled<64, 4, 1>(weightedT, freshA, base + F::kInverse, false);
      wgmmaCommit();
      wgmmaWait<0>();
      wgmmaSettle(weightedT);
      mbarrierArrive(empty + kFusedTransform);
      // W into the exchange tile once the carrier has read the last one.
      if (k.local >= 1)
        mbarrierWait(full + kFusedWeightedFree, (k.local - 1) & 1);
      stageOutputTransposed(weightedT, 1.0f, group, tid, [&](int token, int column) {
        return reinterpret_cast<__nv_bfloat16 *>(weighted + Tile::offset(token, column));
      });
      fenceSharedForAsyncProxy();
      mbarrierArrive(full + kFusedWeightedReady);
      if (k.emit && !byTma) {
        // dv = beta W, this warpgroup's value rows.
#pragma unroll
        for (int i = 0; i < 32; ++i) {
          const int token = 8 * (i / 4) + pairColumn + i % 2;
          const int column = kHalf * group + lanes.rowInGroup + 8 * ((i % 4) / 2);
          if (token < rows)
            args.dv[(k.row0 + token) * valueRow + head * kV + column] =
                Store::store(betas[token] * weightedT[i]);
        }
      }
    }
    // This thread is done with the chunk's Q, K, G and beta.
    auto releaseChunk = [&] {
      mbarrierArrive(empty + queryBuffer(k.local));
      mbarrierArrive(empty + kFusedK0 + k.local % 2);
      mbarrierArrive(empty + gates);
    };
    if (!k.emit) {
      // A warm-up chunk: nothing but the chain.
      mbarrierArrive(full + kFusedStateGradFree);
      mbarrierArrive(empty + kFusedOutput);
      releaseChunk();
      continue;
    }
    mathBarrier(); // both halves of W are staged
    if (byTma) {
      // dv = beta W staged in E1 and F (a [token][value] tile of two
      // 64-column blocks, this warpgroup's block `group`; both warpgroups
      // are past the last chunk's reads of them, and their own use starts
      // after the store has read them, below) and stored by TMA.
#pragma unroll
      for (int i = 0; i < 32; ++i)
        weightedT[i] *= betas[8 * (i / 4) + pairColumn + i % 2];
      stageOutputTransposed(weightedT, 1.0f, group, tid, [&](int token, int column) {
        return reinterpret_cast<__nv_bfloat16 *>(e1 + Tile::offset(token, column));
      });
      fenceSharedForAsyncProxy();
      warpgroupBarrier(group);
      if (tid % 128 == 0) {
        tmaStore2D(&maps.dv, head * kV + kHalf * group, static_cast<int>(k.row0),
                   e1 + group * Tile::kBlockBytes);
        bulkCommit();
      }
    }

    //===---- The chunk's products (delta_rule_backward_chunk_wgmma.cuh) ----===//
    // In an order that keeps few accumulators alive: the scores first
    // (nothing else held), then T1 and T2 as dq and dk, then T3.
    const int kc0 = lanes.kc0;
    const int(&rowOf)[2] = lanes.rowOf;
    const unsigned parity = k.emitted & 1;
    const char *queries = queriesOf(k.local);
    mbarrierWait(full + queryBuffer(k.local), (k.local / 2) & 1);
    mbarrierWait(full + kFusedFresh, parity);
    const char *fresh = base + F::kFresh;
    float rowBeta[2];
#pragma unroll
    for (int half = 0; half < 2; ++half)
      rowBeta[half] = betas[rowOf[half]];

    // The scores, token columns 32 group .. + 31, into E1, F and the sums.
    {
      const int column0 = 32 * group;
      float qk[16], kk[16], dp[16], wv[16];
      const char *keyRows = keys + column0 * 128;
      const char *freshRows = fresh + column0 * 128;
      wgmmaFence();
      wgmmaSwizzledOperands<32, kK / 16, 0, 0>(qk, queries, Tile::kBlockBytes, keyRows,
                                               Tile::kBlockBytes, false);
      wgmmaSwizzledOperands<32, kK / 16, 0, 0>(kk, keys, Tile::kBlockBytes, keyRows,
                                               Tile::kBlockBytes, false);
      wgmmaSwizzledOperands<32, kV / 16, 0, 0>(dp, output, Tile::kBlockBytes, freshRows,
                                               Tile::kBlockBytes, false);
      wgmmaSwizzledOperands<32, kV / 16, 0, 0>(wv, weighted, Tile::kBlockBytes, freshRows,
                                               Tile::kBlockBytes, false);
      wgmmaCommit();
      wgmmaWait<0>();
      wgmmaSettle(qk);
      wgmmaSettle(kk);
      wgmmaSettle(dp);
      wgmmaSettle(wv);
      if (byTma) {
        // dv's store has read E1 and F.
        if (tid % 128 == 0)
          bulkWaitRead<0>();
        mathBarrier();
      }
      maskScores<Element>(qk, kk, dp, wv, gate, rowOf, rowBeta, column0, pairColumn, lane,
                          warp, args.scale, e1, mirrored, sums);
      fenceSharedForAsyncProxy(); // E1 and F for the products below
    }

    auto storeRowSums = [&](int sumRow, const float (&value)[2]) {
      storeQuadRowSums(sums, sumRow, value, rowOf, lane);
    };
    auto rowDot = [&](const char *x, const float (&t)[kHalf / 2], float (&out)[2]) {
      rowDotWithTile<Element, kHalf>(x, t, rowOf, kc0, pairColumn, out);
    };
    const char *state = base + F::kState;
    const char *stateB = state + kc0 * 128; // rows kc0 .. of S
    const char *stateGradB = stateGrad + kc0 * 128;
    float dq[kHalf / 2], dk[kHalf / 2];
    float rowG[2] = {0.0f, 0.0f}, rowBetaR[2] = {0.0f, 0.0f}, rowT[2] = {0.0f, 0.0f};

    // T1 = dO S^T -> dq = scale diag(e) T1; T2 = W S^T -> dk = -diag(e beta) T2.
    mbarrierWait(full + kFusedState, parity);
    wgmmaFence();
    wgmmaSwizzledOperands<kHalf, kV / 16, 0, 0>(dq, output, Tile::kBlockBytes, stateB,
                                                StateTile::kBlockBytes, false);
    wgmmaCommit();
    wgmmaSwizzledOperands<kHalf, kV / 16, 0, 0>(dk, weighted, Tile::kBlockBytes, stateB,
                                                StateTile::kBlockBytes, false);
    wgmmaCommit();
    wgmmaWait<1>();
    wgmmaSettle(dq);
    mbarrierArrive(empty + kFusedOutput); // dO's last read
    {
      float qt[2] = {0.0f, 0.0f};
      rowDot(queries, dq, qt);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float e = decay(gate[rowOf[half]]);
        rowG[half] += args.scale * e * qt[half];
#pragma unroll
        for (int j = 0; j < kHalf / 8; ++j) {
          dq[4 * j + 2 * half] *= args.scale * e;
          dq[4 * j + 2 * half + 1] *= args.scale * e;
        }
      }
    }
    wgmmaWait<0>();
    wgmmaSettle(dk);
    {
      float kt[2] = {0.0f, 0.0f};
      rowDot(keys, dk, kt);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float e = decay(gate[rowOf[half]]);
        const float u = e * kt[half];
        rowG[half] -= rowBeta[half] * u;
        rowBetaR[half] -= u;
#pragma unroll
        for (int j = 0; j < kHalf / 8; ++j) {
          dk[4 * j + 2 * half] *= -e * rowBeta[half];
          dk[4 * j + 2 * half + 1] *= -e * rowBeta[half];
        }
      }
    }

    // <dS', S> over the whole K x V tile: per-warp partials.
    stateDotPartial<kK * kV>(state, stateGrad, tid, F::kMathThreads, lane, warp, sums);
    mbarrierArrive(empty + kFusedState);

    // T3 = Vn dS'^T -> dk += diag(f) T3; under it, this warpgroup's half of
    // sum_v V o W.
    {
      float t3[kHalf / 2];
      wgmmaFence();
      wgmmaSwizzledOperands<kHalf, kV / 16, 0, 0>(t3, fresh, Tile::kBlockBytes, stateGradB,
                                                  StateTile::kBlockBytes, false);
      wgmmaCommit();
      {
        constexpr int kPieces = kV / 2 / 8 / 4;
#pragma unroll
        for (int half = 0; half < 2; ++half)
#pragma unroll
          for (int p = 0; p < kPieces; ++p) {
            const int column = kV / 2 * group + 8 * (lane % 4 + 4 * p);
            const int offset = Tile::offset(rowOf[half], column);
            const uint4 v = rowOf[half] < rows
                                ? *reinterpret_cast<const uint4 *>(
                                      args.v + (k.row0 + rowOf[half]) * valueRow + head * kV + column)
                                : make_uint4(0, 0, 0, 0);
            const uint4 w = *reinterpret_cast<const uint4 *>(weighted + offset);
            const uint32_t vw[4] = {v.x, v.y, v.z, v.w}, ww[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int x = 0; x < 4; ++x)
              rowBetaR[half] +=
                  bf16BitsToFloat(vw[x] & 0xffffu) * bf16BitsToFloat(ww[x] & 0xffffu) +
                  bf16BitsToFloat(vw[x] >> 16) * bf16BitsToFloat(ww[x] >> 16);
          }
      }
      wgmmaWait<0>();
      wgmmaSettle(t3);
      mbarrierArrive(full + kFusedStateGradFree); // dS' is read: <dS', S>, T3
      mbarrierArrive(empty + kFusedFresh);
      float kt[2] = {0.0f, 0.0f};
      rowDot(keys, t3, kt);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float f = decay(lastGate - gate[rowOf[half]]);
        rowT[half] = f * kt[half];
#pragma unroll
        for (int j = 0; j < kHalf / 8; ++j) {
          dk[4 * j + 2 * half] += f * t3[4 * j + 2 * half];
          dk[4 * j + 2 * half + 1] += f * t3[4 * j + 2 * half + 1];
        }
      }
    }
    storeRowSums(kSumRowG + group, rowG);
    storeRowSums(kSumRowBetaR + group, rowBetaR);
    storeRowSums(kSumRowT + group, rowT);
    mathBarrier(); // E1, F and every partial sum are complete

    // dq += E1 K; dk += E1^T Q + F K.
    {
      const char *keyColumns = keys + (kc0 / 64) * Tile::kBlockBytes + 2 * (kc0 % 64);
      const char *queryColumns = queries + (kc0 / 64) * Tile::kBlockBytes + 2 * (kc0 % 64);
      wgmmaFence();
      wgmmaSwizzledOperands<kHalf, kC / 16, 0, 1>(dq, e1, Tile::kBlockBytes, keyColumns,
                                                  Tile::kBlockBytes, true);
      wgmmaSwizzledOperands<kHalf, kC / 16, 1, 1>(dk, e1, Tile::kBlockBytes, queryColumns,
                                                  Tile::kBlockBytes, true);
      wgmmaSwizzledOperands<kHalf, kC / 16, 0, 1>(dk, mirrored, Tile::kBlockBytes, keyColumns,
                                                  Tile::kBlockBytes, true);
      wgmmaCommit();
    }
    // dg and dbeta under the products.
    chunkGateGradients(sums, tid, warp, lane, rows, decay(lastGate), F::kMathThreads,
                       mathBarrier, [&](int t, float dg, float dbeta) {
                         args.dg[(k.row0 + t) * B::kHV + head] = dg;
                         args.dbeta[(k.row0 + t) * B::kHV + head] = dbeta;
                       });
    wgmmaWait<0>();
    wgmmaSettle(dq);
    wgmmaSettle(dk);

    // dq and dk of this value head: the gradients themselves without GQA,
    // with cluster sums summed with the peer's, else partials (in the
    // gradients' type) for deltaRuleKeyGradSumKernel. Staged (TMA stores,
    // cluster sums) in this warpgroup's block of the chunk's Q and K tiles,
    // whose last readers are done (this warpgroup's products above; the
    // carrier's, which release W after them).
    auto stageKeyGrads = [&] {
      mbarrierWait(full + kFusedWeightedFree, k.local & 1);
#pragma unroll
      for (int j = 0; j < kHalf / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int offset = Tile::offset(rowOf[half], kc0 + 8 * j + pairColumn);
          *reinterpret_cast<uint32_t *>(const_cast<char *>(queries) + offset) =
              packBf16(dq[4 * j + 2 * half], dq[4 * j + 2 * half + 1]);
          *reinterpret_cast<uint32_t *>(const_cast<char *>(keys) + offset) =
              packBf16(dk[4 * j + 2 * half], dk[4 * j + 2 * half + 1]);
        }
    };
    if constexpr (kClusterSums) {
      stageKeyGrads();
      warpgroupBarrier(group);
      if (tid % 128 == 0)
        for (unsigned r = 0; r < 2; ++r)
          mbarrierArrivePeer(full + kFusedPartialsStaged, r);
      mbarrierWaitCluster(full + kFusedPartialsStaged, k.emitted & 1);
      // Block 0 sums dq, block 1 dk: this warpgroup's 64 columns of its own
      // tile and of the peer's, in head order (block 0's value head first),
      // in fp32, rounded once, written over its own (only it reads those).
      const unsigned rank = clusterRank();
      const int peerLocal = peerStop - 1 - c;
      char *const sumTile = const_cast<char *>(rank == 0 ? queries : keys);
      char *const mine = sumTile + group * Tile::kBlockBytes;
      const char *const theirs = peerShared(
          (rank == 0 ? queriesOf(peerLocal) : keysOf(peerLocal)) + group * Tile::kBlockBytes,
          rank ^ 1u);
      const uint4 *first = reinterpret_cast<const uint4 *>(rank == 0 ? mine : theirs);
      const uint4 *second = reinterpret_cast<const uint4 *>(rank == 0 ? theirs : mine);
      for (int v = tid % 128; v < int(Tile::kBlockBytes / 16); v += 128) {
        const uint4 a = first[v], b = second[v];
        const uint32_t aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
        uint32_t sum[4];
#pragma unroll
        for (int x = 0; x < 4; ++x)
          sum[x] = packBf16(bf16BitsToFloat(aw[x] & 0xffffu) + bf16BitsToFloat(bw[x] & 0xffffu),
                            bf16BitsToFloat(aw[x] >> 16) + bf16BitsToFloat(bw[x] >> 16));
        reinterpret_cast<uint4 *>(mine)[v] = make_uint4(sum[0], sum[1], sum[2], sum[3]);
      }
      fenceSharedForAsyncProxy();
      warpgroupBarrier(group);
      if (tid % 128 == 0) {
        // The peer's tile is read: both blocks may release theirs.
        for (unsigned r = 0; r < 2; ++r)
          mbarrierArrivePeer(full + kFusedPartialsRead, r);
        if (byTma) {
          tmaStore2D(rank == 0 ? &maps.dq : &maps.dk, keyHead * kK + kc0,
                     static_cast<int>(k.row0), mine);
          bulkCommit();
          bulkWaitRead<0>();
        }
      }
      if (!byTma) {
        // The sequence's rows only, a pair a thread at a time.
        Gradient *const to = rank == 0 ? args.dq : args.dk;
        for (int i = tid % 128; i < rows * (kHalf / 2); i += 128) {
          const int row = i / (kHalf / 2), column = kc0 + 2 * (i % (kHalf / 2));
          const uint32_t pair =
              *reinterpret_cast<const uint32_t *>(sumTile + Tile::offset(row, column));
          storeGradientPair(to + (k.row0 + row) * keyRow + keyHead * kK + column,
                            bf16BitsToFloat(pair & 0xffffu), bf16BitsToFloat(pair >> 16));
        }
      }
      // Before this block's tiles are refilled: the peer has read them.
      mbarrierWaitCluster(full + kFusedPartialsRead, k.emitted & 1);
    } else if (byTma) {
      stageKeyGrads();
      fenceSharedForAsyncProxy();
      warpgroupBarrier(group);
      if (tid % 128 == 0) {
        const int x = (kGroup == 1 ? keyHead : head) * kK + kc0, y = static_cast<int>(k.row0);
        tmaStore2D(&maps.dq, x, y, queries + group * Tile::kBlockBytes);
        tmaStore2D(&maps.dk, x, y, keys + group * Tile::kBlockBytes);
        bulkCommit();
        bulkWaitRead<0>();
      }
    } else {
#pragma unroll
      for (int j = 0; j < kHalf / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = rowOf[half];
          if (row >= rows)
            continue;
          const int column = kc0 + 8 * j + pairColumn;
          const float *q2 = dq + 4 * j + 2 * half, *k2 = dk + 4 * j + 2 * half;
          if constexpr (kGroup == 1) {
            const int64_t at = (k.row0 + row) * keyRow + keyHead * kK + column;
            storeGradientPair(args.dq + at, q2[0], q2[1]);
            storeGradientPair(args.dk + at, k2[0], k2[1]);
          } else {
            const int64_t at = ((k.row0 + row) * B::kHV + head) * kK + column;
            storeGradientPair(static_cast<Gradient *>(ws.queryGrads) + at, q2[0], q2[1]);
            storeGradientPair(static_cast<Gradient *>(ws.keyGrads) + at, k2[0], k2[1]);
          }
        }
    }
    releaseChunk();
  }
  if (thread % 128 == 0)
    bulkWaitAll(); // the last stores have completed before the block ends
}

/// Four consecutive partials as floats (fp32 or bf16 storage).
__device__ __forceinline__ float4 loadFour(const float *p) {
  return *reinterpret_cast<const float4 *>(p);
}
__device__ __forceinline__ float4 loadFour(const __nv_bfloat16 *p) {
  const uint2 bits = *reinterpret_cast<const uint2 *>(p);
  return make_float4(bf16BitsToFloat(bits.x & 0xffffu), bf16BitsToFloat(bits.x >> 16),
                     bf16BitsToFloat(bits.y & 0xffffu), bf16BitsToFloat(bits.y >> 16));
}

/// dq and dk of every row of the pack from the fused kernel's per-value-head
/// partials: the sum over each key head's value heads in head order, in
/// fp32, one thread per four keys (GQA only; padding rows' partials are
/// zero).
template <class Config>
__global__ void deltaRuleKeyGradSumKernel(DeltaRuleBackwardArgs<Config> args) {
  using B = DeltaRuleBackwardShape<Config>;
  using Gradient = typename GradientOf<Config>::type;
  constexpr int kGroup = B::kHV / B::kH, kQuads = B::kK / 4;
  const PackingView &packing = args.packing;
  if (packing.numSeqs <= 0 || packingInvalid(args))
    return;
  const int64_t rows = packing.cuPadded ? packing.cuPadded[packing.numSeqs]
                                        : packing.cuSeqlens[packing.numSeqs];
  const int64_t total = rows * B::kH * kQuads;
  const Gradient *queryGrads = static_cast<const Gradient *>(args.workspace.queryGrads);
  const Gradient *keyGrads = static_cast<const Gradient *>(args.workspace.keyGrads);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / (B::kH * kQuads);
    const int keyHead = static_cast<int>(i / kQuads % B::kH), quad = static_cast<int>(i % kQuads);
    float4 q = make_float4(0.0f, 0.0f, 0.0f, 0.0f), k = q;
#pragma unroll
    for (int m = 0; m < kGroup; ++m) {
      const int64_t at = (row * B::kHV + keyHead * kGroup + m) * B::kK + 4 * quad;
      const float4 pq = loadFour(queryGrads + at), pk = loadFour(keyGrads + at);
      q = make_float4(q.x + pq.x, q.y + pq.y, q.z + pq.z, q.w + pq.w);
      k = make_float4(k.x + pk.x, k.y + pk.y, k.z + pk.z, k.w + pk.w);
    }
    const int64_t to = (row * B::kH + keyHead) * B::kK + 4 * quad;
    storeGradientPair(args.dq + to, q.x, q.y);
    storeGradientPair(args.dq + to + 2, q.z, q.w);
    storeGradientPair(args.dk + to, k.x, k.y);
    storeGradientPair(args.dk + to + 2, k.z, k.w);
  }
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_DELTA_RULE_BACKWARD_FUSED_WGMMA_CUH
