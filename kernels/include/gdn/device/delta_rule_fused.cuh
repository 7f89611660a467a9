//===- delta_rule_fused.cuh - the delta-rule forward as one kernel -*- CUDA
//-*-===//
//
// The forward of delta_rule.cuh (same inputs, outputs and function) as one
// warp-specialised kernel for sm_90a: the prepare kernel's work (G, K K^T,
// Q K^T, the inverse of I + L, M and P) runs in a producer warpgroup of the
// scan's block, so that M and P never leave shared memory and q and k are
// read once. A Config selects it with `kFusedForward = true` (with
// kScanWgmma; V tile 64 or 128). Included by delta_rule.cuh after the
// definitions it shares.
//
// One block per (sequence or segment, value head, V tile) with one consumer
// warpgroup per 64 columns of the tile (the wgmma scan of
// delta_rule_wgmma.cuh, unchanged in its arithmetic) and one producer
// warpgroup. Three stages of {Q, K, V, M, P, G} in shared memory; per chunk
// c (the block's l-th):
//
//   producer: wait for c's Q, K, V (TMA); G by a shuffle scan; K K^T and
//             Q K^T on wgmma from shared memory, 32 columns at a time; L
//             (fp32) and P; X = (I + L)^-1 by blocks
//             (invertUnitLowerBlocked); M = X diag(beta); arrive on
//             `produced`.
//   consumers: wait for `full` and `produced`, run the chunk as the wgmma
//             scan does, stage O^T in the V tile they no longer need, store
//             o, arrive on `consumed`; their first thread then issues the
//             copies of chunk c + 3 into the stage.
//
// The producer computes chunk c + 1 while the consumers compute chunk c.
// Its arithmetic is the prepare kernel's, with the same roundings (M, P to
// bf16, G in fp32), so the results are those of the two-kernel forward up
// to the order of K K^T's and Q K^T's sums.
//
// Split chains need each earlier chunk's transition bound, which no
// prepare kernel wrote here: a segment's block computes the bounds of the
// chunks it walks back over from g, beta and k (warmupStartFromInputs).
//
// Experimental: correct, but 1.5-1.6x slower than the two kernels on the H200
// (0.654 against 0.417 ms at gqa16x32 8192x4): its one producer warpgroup is
// still the longer path, about 10300 cycles per chunk against the consumers'
// 8000 (docs/delta-rule.md, "The fused forward"; utils/fused-phase-profile.py
// measures the phases). Nothing selects it by default.
//
// With kFusedInverse = false the producer makes P alone: the prepare kernel
// (without P) runs first and writes M, G and the bounds, which the block copies
// with Q, K and V; the consumers take 224 registers, stage O^T in the
// producer's unused L region, release each stage as soon as its products are
// done, and the producer issues the refills (docs/delta-rule.md, "The fused
// block with a producer of P alone"). It is what gdn-select-kernels picks
// (scores = "producer") for every group at V tile 128, whole or split chains
// (segments warm up from the prepare kernel's transition bounds).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_DELTA_RULE_FUSED_CUH
#define GDN_DEVICE_DELTA_RULE_FUSED_CUH

#include "gdn/device/delta_rule_wgmma.cuh"

namespace gdn {
namespace device {

/// Shared-memory layout of the fused forward: the wgmma scan's stages (M, P
/// and G written by the producer instead of copied), then the producer's
/// fp32 L (the inverse works in place), betas, the consumers' decays and the
/// mbarriers. The base is aligned to 1024 bytes at run time.
template <class Config> struct DeltaRuleFusedShape {
  using Scan = DeltaRuleWgmmaShape<Config>;
  static constexpr int kChunk = 64;
  static constexpr int kStages = 3;
  static constexpr int kConsumers = Scan::kWarpgroups;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  // false: the producer makes P alone (kFusedInverse).
  static constexpr bool kInverse = FusedInverseOf<Config>::value;
  // Registers per thread after setmaxnreg (with two consumer warpgroups;
  // with one, 256 threads have 255 each anyway): the consumers hold the
  // state (K / 2 accumulators of S^T) and the chunk's products, the
  // producer K K^T and Q K^T 32 columns at a time (see its loop).
  // setmaxnreg moves registers only within what the block got at launch
  // (168 per thread by the launch bounds): 2 x consumer + producer <= 3 x
  // 168, or the consumers' request waits forever. The consumers' chunk
  // wants 224 or more: with the producer idle, 224 ran the block at the
  // wgmma scan's speed (0.29 against 0.28 ms at gqa16x32 8192x4) and 208
  // about 25% slower. A producer of P alone fits in the 56 left; the whole
  // prepare work needs 88 (at 56 ptxas serialises every wgmma, C7512).
  static constexpr int kLaunchRegisters = 65536 / (128 * 3) / 8 * 8;
  static constexpr int kConsumerRegisters = kInverse ? 208 : 224;
  static constexpr int kProducerRegisters =
      3 * kLaunchRegisters - 2 * kConsumerRegisters;
  static constexpr int kLdL = kChunk + 4;
  static constexpr size_t kLower = kStages * Scan::kStageBytes;
  static constexpr size_t kBetas = kLower + 4 * kChunk * kLdL;
  static constexpr size_t kWarpTotals = kBetas + 4 * kChunk;
  static constexpr size_t kWarpSums = kWarpTotals + 16;
  static constexpr size_t kDecays = kWarpSums + 4 * (kThreads / 32);
  static constexpr size_t kBarriers = kDecays + kConsumers * 2 * 4 * kChunk;
  static constexpr size_t kBytes = kBarriers + 3 * 8 * kStages + 1024;
  static_assert(kDecays % 16 == 0 && kBarriers % 8 == 0,
                "fused forward: aligned shared regions");
  static_assert(kBytes <= 227 * 1024, "delta rule (fused): shared memory");
  static_assert(kProducerRegisters % 8 == 0 && kProducerRegisters >= 24 &&
                    2 * kConsumerRegisters + kProducerRegisters <=
                        3 * kLaunchRegisters,
                "delta rule (fused): setmaxnreg within the launch's registers");
};

/// Barrier of the producer warpgroup (id after the consumers' 1 ..
/// kConsumers).
template <int kConsumers> __device__ __forceinline__ void producerBarrier() {
#ifdef GDN_DEVICE_EMULATION
  emulation::namedBarrier(kConsumers + 1, 128);
#else
  asm volatile("bar.sync %0, 128;\n" ::"n"(kConsumers + 1) : "memory");
#endif
}

/// threadIdx.x through a volatile asm: a value the compiler cannot hoist
/// out of a loop.
__device__ __forceinline__ int threadIndexOpaque() {
#ifdef GDN_DEVICE_EMULATION
  return static_cast<int>(threadIdx.x);
#else
  int index;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(index));
  return index;
#endif
}

/// warmupStart for a block that has no workspace bounds: chunk c's bound,
/// the sum over its tokens of g_t + logExpansion(beta_t |k_t|^2), is
/// computed from the inputs as the block walks back (one chunk at a time;
/// warm-ups are usually a chunk or two). Every thread of the block calls
/// it and gets the same chunk (sums in a fixed order through `warpSums`,
/// kThreads / 32 floats of shared memory).
template <class Config, int kThreads>
__device__ __forceinline__ int32_t warmupStartFromInputs(
    const DeltaRuleArgs<Config> &args, int64_t begin, int32_t length, int head,
    int keyHead, int32_t first, float limit, float *warpSums) {
  using S = DeltaRuleShape<Config>;
  constexpr int kWarps = kThreads / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float sum = 0.0f;
  for (int32_t c = first - 1; c >= 0; --c) {
    const int rows = length - c * 64 < 64 ? length - c * 64 : 64;
    float part = 0.0f;
    for (int t = warp; t < rows; t += kWarps) {
      const int64_t row = begin + static_cast<int64_t>(c) * 64 + t;
      const __nv_bfloat16 *key = args.k + row * S::kH * S::kK + keyHead * S::kK;
      float norm2 = 0.0f;
#pragma unroll
      for (int d = lane; d < S::kK; d += 32) {
        const float x = __bfloat162float(key[d]);
        norm2 += x * x;
      }
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2)
        norm2 += __shfl_xor_sync(0xffffffffu, norm2, offset);
      part += args.g[row * S::kHV + head] +
              logExpansion(args.beta[row * S::kHV + head] * norm2);
    }
    if (lane == 0)
      warpSums[warp] = part;
    __syncthreads();
    float bound = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      bound += warpSums[w];
    __syncthreads(); // read before the next chunk overwrites them
    sum += bound;
    if (sum <= limit)
      return c;
  }
  return 0;
}

/// One chunk of the wgmma scan for the calling warpgroup (`group`; all its
/// threads call it, `tid` being the thread's index in the block): from the
/// chunk's tiles staged at `at` (DeltaRuleWgmmaShape's stage layout: Q, K,
/// V, M, P, G) and its `rows` tokens, `state` (S^T of the warpgroup's 64
/// value columns) advances past the chunk and `out` receives the chunk's
/// O^T, not yet scaled. `decays` (2 x 64 floats of the warpgroup) takes
/// exp(G_t) and exp(G_last - G_t); a barrier of the warpgroup publishes
/// them, and the caller orders this chunk's reads of them before the next
/// chunk's writes.
///
/// The same instructions as deltaChunkScanWgmmaKernel's loop body, which keeps
/// its own copy: calling this function from the scan made the scan 2.3% slower
/// on the H200 (0.2665 against 0.2605 ms at gqa16x32 8192x4, three A/B rounds;
/// the SASS differs in a few address computations). Change the two together,
/// with two measured exceptions: here V^T's ldmatrix loads are issued right
/// after the two products (0.2-0.5% faster at every default row, H200; issued
/// just before the S K^T wait instead, 0.6-1.2% slower); R's Gamma pairs are
/// loaded before the S K^T wait, and the update's decays and the state's decay
/// come before the Vn wait. The scan keeps the old order, untimed with these
/// changes.
template <class Config>
__device__ __forceinline__ void
wgmmaScanChunk(float (&state)[DeltaRuleShape<Config>::kK / 2], float (&out)[32],
               const char *at, int rows, float *decays, int group, int tid) {
  using W = DeltaRuleWgmmaShape<Config>;
  using Element = typename Config::Element;
  constexpr int kC = W::kChunk, kK = W::kK;
  const int warp = tid / 32, lane = tid % 32;
  const int pairColumn = 2 * (lane % 4); // + 8 j, + 1
  // First tile column of this warp's 16 accumulator rows.
  const int transposeColumn = 64 * group + 16 * (warp % 4);
  const float *gate = reinterpret_cast<const float *>(at + W::kStageG);

  // S^T in bf16 as the A operand of the two K-deep products.
  uint32_t stateA[kK / 16][4];
#pragma unroll
  for (int s = 0; s < kK / 16; ++s)
    accumulatorToA(state, s, stateA[s]);
  // Written by their first product (scale-d = 0 ignores the old value).
  float keyProduct[32];
  wgmmaFence();
  wgmmaSwizzled<64, kK / 16, 0>(keyProduct, stateA, at + W::kStageK, false);
  wgmmaCommit();
  wgmmaSwizzled<64, kK / 16, 0>(out, stateA, at + W::kStageQ, false);
  wgmmaCommit();

  // V^T in the accumulator layout, read while the products run:
  // ldmatrix.trans of V's 8 x 8 blocks (tokens x columns), two column
  // tiles j per load (16 registers held across the wait; ptxas: 8 more
  // spill bytes in the kernel).
  uint32_t valuePairs[4][4];
#pragma unroll
  for (int j = 0; j < 8; j += 2) {
    const int matrix = lane / 8;
    loadMatrices<true>(
        valuePairs[j / 2],
        reinterpret_cast<const Element *>(
            at + W::kStageV +
            W::Tile::offset(8 * (j + matrix / 2) + lane % 8,
                            transposeColumn + 8 * (matrix % 2))));
  }

  // The decays of the chunk's tokens while the products run, one per
  // thread of the warpgroup (each thread then reads its 16 tokens, 8 j +
  // pairColumn + {0, 1}).
  const float lastGate = gate[rows - 1];
  float *toStart = decays;
  const float *toEnd = toStart + kC;
  {
    const int token = tid % kC;
    toStart[tid % 128] =
        tid % 128 < kC ? decay(gate[token]) : decay(lastGate - gate[token]);
  }
  warpgroupBarrier(group);

  // R = V^T - SK diag(Gamma) (the chain waits only for S K^T). Each thread's
  // tokens come in adjacent pairs: one 8-byte load per pair, issued before the
  // wait so that R's arithmetic does not wait for them (0.2-0.8% faster at the
  // gqa16x32 shapes in two calls, bits equal, H200; 8 more spill bytes).
  float2 startPair[8];
#pragma unroll
  for (int j = 0; j < 8; ++j)
    startPair[j] =
        *reinterpret_cast<const float2 *>(toStart + 8 * j + pairColumn);
  wgmmaWait<1>();
  wgmmaSettle(keyProduct);
  // R from V^T's pairs (loaded above).
#pragma unroll
  for (int j = 0; j < 8; j += 2) {
    const uint32_t *values = valuePairs[j / 2];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int i = 4 * j + e; // accumulator element (tile j + e / 4)
      const uint32_t pair = values[e / 2];
      const float value = bf16BitsToFloat(e % 2 ? pair >> 16 : pair & 0xffffu);
      const float2 pair2 = startPair[j + e / 4];
      keyProduct[i] = value - (e % 2 ? pair2.y : pair2.x) * keyProduct[i];
    }
  }
  uint32_t residualA[4][4];
#pragma unroll
  for (int s = 0; s < 4; ++s)
    accumulatorToA(keyProduct, s, residualA[s]);
  float fresh[32];
  wgmmaFence();
  wgmmaSwizzled<64, 4, 0>(fresh, residualA, at + W::kStageM, false);
  wgmmaCommit();
  // Under Vn's product: the update's decays exp(G_last - G) (pairs as
  // startPair's) and the state's decay, which no pending product reads
  // (-0.2 to -0.7% at the gqa16x32 shapes in two calls, bits equal, H200;
  // 44 more spill bytes).
  float2 endPair[8];
#pragma unroll
  for (int j = 0; j < 8; ++j)
    endPair[j] = *reinterpret_cast<const float2 *>(toEnd + 8 * j + pairColumn);
  const float chunkDecay = decay(lastGate);
#pragma unroll
  for (int i = 0; i < kK / 2; ++i)
    state[i] *= chunkDecay;
  wgmmaWait<0>();
  wgmmaSettle(out);
  wgmmaSettle(fresh);

  // The state update first (the chain), then O += Vn P^T.
  uint32_t freshA[4][4], decayedA[4][4];
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    accumulatorToA(fresh, s, freshA[s]);
    const float2 low = endPair[2 * s], high = endPair[2 * s + 1];
    const float scales[4] = {low.x, low.y, high.x, high.y};
    float decayed[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      decayed[e] = fresh[8 * s + e] * scales[2 * (e / 4) + e % 2];
    decayedA[s][0] = packBf16(decayed[0], decayed[1]);
    decayedA[s][1] = packBf16(decayed[2], decayed[3]);
    decayedA[s][2] = packBf16(decayed[4], decayed[5]);
    decayedA[s][3] = packBf16(decayed[6], decayed[7]);
  }
#pragma unroll
  for (int i = 0; i < 32; ++i)
    out[i] *= i % 2 ? startPair[i / 4].y : startPair[i / 4].x;
  wgmmaFence();
  wgmmaSwizzled<kK, 4, 1>(state, decayedA, at + W::kStageK, true);
  wgmmaSwizzled<64, 4, 0>(out, freshA, at + W::kStageP, true);
  wgmmaCommit();
  wgmmaWait<0>();
  wgmmaSettle(state);
  wgmmaSettle(out);
}

template <class Config>
__global__ void __launch_bounds__(DeltaRuleFusedShape<Config>::kThreads, 1)
    deltaRuleFusedKernel(DeltaRuleArgs<Config> args,
                         const __grid_constant__ DeltaRuleTensorMaps maps) {
  using S = DeltaRuleShape<Config>;
  using W = DeltaRuleWgmmaShape<Config>;
  using F = DeltaRuleFusedShape<Config>;
  using Element = typename Config::Element;
  using Tile = typename W::Tile;
  constexpr int kC = S::kChunk, kK = S::kK, kVt = S::kVt;
  constexpr int kStages = F::kStages, kConsumers = F::kConsumers;
  constexpr bool kInverse = F::kInverse;
#if defined(__CUDA_ARCH__) && !GDN_WGMMA_AVAILABLE
  static_assert(!FusedForwardOf<Config>::value,
                "the fused delta-rule forward needs sm_90a: compile with "
                "-gencode=arch=compute_90a,code=sm_90a, or leave "
                "kFusedForward out (the two kernels with kScanWgmma = false "
                "run on sm_80+)");
#endif
  const PackingView &packing = args.packing;
  if (packingInvalid(args)) {
    fillOutputsWithNaN<Config, F::kThreads>(args);
    return;
  }
  const ScanSegment<Config> segment(packing, blockIdx.x, args.segmentChunks);
  if (!segment.valid)
    return;
  const ScanUnit<Config> &unit = segment.unit;
  const int32_t seq = segment.seq;
  const int head = unit.head, keyHead = unit.keyHead, column0 = unit.column0;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int32_t length = packing.length(seq);
  const int64_t begin = packing.begin(seq);
  const int32_t end = segment.end;

  extern __shared__ uint4 fusedShared[];
  char *base = alignSharedTo1024(fusedShared);
  uint64_t *full = reinterpret_cast<uint64_t *>(base + F::kBarriers);
  uint64_t *produced = full + kStages, *consumed = produced + kStages;

  const int64_t slot0 = firstSlot(packing, seq);
  // Chunks start .. first - 1 only warm the state up (no output). Without
  // the inverse in the block, the prepare kernel wrote the bounds.
  int32_t start;
  if constexpr (kInverse)
    start = segment.first == 0
                ? 0
                : warmupStartFromInputs<Config, F::kThreads>(
                      args, begin, length, head, keyHead, segment.first,
                      args.warmupLogBound,
                      reinterpret_cast<float *>(base + F::kWarpSums));
  else {
    // Launched as a dependent of the prepare kernel (kProgrammaticLaunch):
    // a segment that warms up reads its bounds first. Otherwise start is 0,
    // and only the producer's copies of M and G wait (below).
    if (segment.first > 0)
      waitForPrerequisiteGrid();
    start = warmupStart(args.workspace.transitionBound, slot0, S::kHV, head,
                        segment.first, args.warmupLogBound);
  }
  if (segment.first == 0)
    zeroPaddingRows<Config, F::kThreads>(args, seq, head, column0);
  if (tid == 0) {
    tmaPrefetchDescriptor(&maps.q);
    tmaPrefetchDescriptor(&maps.k);
    tmaPrefetchDescriptor(&maps.v);
    tmaPrefetchDescriptor(&maps.o);
    if (!kInverse)
      tmaPrefetchDescriptor(&maps.transform);
    for (int s = 0; s < kStages; ++s) {
      mbarrierInit(full + s, 1);
      mbarrierInit(produced + s, 1);
      mbarrierInit(consumed + s, 4 * kConsumers); // one per warp
    }
  }
  __syncthreads();

  // One warp copies chunk c's Q, K (one TMA box per 64 columns) and V
  // tile into stage `stage`, and without the inverse in the block also the
  // prepare kernel's M (a box) and G (a bulk copy): one elected lane issues
  // the copies, from coordinates broadcast from lane 0 (warpUniform; with
  // per-thread coordinates a refill took about 800 cycles of the producer's
  // chunk instead of 380, and the forward was 0.3-0.5% slower, H200). The
  // producer's first warp fills every stage first. Each stage is refilled
  // once every consumer warp has released it, by the warp off the longer
  // path: a consumer's first warp when the producer does the whole prepare
  // work (issued by the producer, the forward was 15% slower), the
  // producer's when it makes P alone (issued by a consumer, that thread's
  // wait held its warpgroup back: 13% slower with the producer idle).
  // (In two parts: the inputs, and the prepare kernel's M and G, which the
  // first chunks' copies wait for apart.) The lambdas are the elected
  // lane's part.
  const int rowOrigin = warpUniform(static_cast<int>(begin));
  const int tileRowOrigin =
      warpUniform(static_cast<int>((slot0 * S::kHV + head) * kC));
  const int keyColumn = warpUniform(keyHead * kK);
  const int valueColumn = warpUniform(head * S::kV + column0);
  auto fetchWorkspace = [&](int32_t c, int stage) {
    if constexpr (!kInverse) {
      char *at = base + stage * W::kStageBytes;
      uint64_t *barrier = full + stage;
      const int tileRow = tileRowOrigin + c * S::kHV * kC;
      tmaLoad2D(at + W::kStageM, &maps.transform, 0, tileRow, barrier);
      bulkLoad(at + W::kStageG, args.workspace.gateCumsum + tileRow, 4 * kC,
               barrier);
    }
  };
  auto fetchInputs = [&](int32_t c, int stage) {
    char *at = base + stage * W::kStageBytes;
    uint64_t *barrier = full + stage;
    const int row0 = rowOrigin + c * kC;
    // Every byte of the stage, M's and G's included.
    mbarrierExpectBytes(barrier, 2 * 2 * kC * kK + 2 * kC * kVt +
                                     (kInverse ? 0 : 2 * kC * kC + 4 * kC));
#pragma unroll
    for (int b = 0; b < kK / 64; ++b) {
      tmaLoad2D(at + W::kStageQ + b * Tile::kBlockBytes, &maps.q,
                keyColumn + 64 * b, row0, barrier);
      tmaLoad2D(at + W::kStageK + b * Tile::kBlockBytes, &maps.k,
                keyColumn + 64 * b, row0, barrier);
    }
#pragma unroll
    for (int b = 0; b < kVt / 64; ++b)
      tmaLoad2D(at + W::kStageV + b * Tile::kBlockBytes, &maps.v,
                valueColumn + 64 * b, row0, barrier);
  };
  // By the whole (converged) warp.
  auto fetchByWarp = [&](int32_t c, int stage) {
    if (electOneLane()) {
      fetchInputs(c, stage);
      fetchWorkspace(c, stage);
    }
    __syncwarp();
  };
  if (warp / 4 == kConsumers) {
    // The producer warpgroup.
#if GDN_WGMMA_AVAILABLE
    if constexpr (kConsumers > 1)
      asm volatile(
          "setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(F::kProducerRegisters));
#endif
    float *lower = reinterpret_cast<float *>(base + F::kLower);
    float *betas = reinterpret_cast<float *>(base + F::kBetas);
    float *warpTotals = reinterpret_cast<float *>(base + F::kWarpTotals);
    if (warp == 4 * kConsumers) {
      // The first chunks' inputs while the prepare kernel may still run,
      // then its M and G once its grid has ended.
      const bool elected = electOneLane();
      if (elected)
        for (int s = 0; s < kStages && start + s < end; ++s)
          fetchInputs(start + s, s);
      if (!kInverse)
        waitForPrerequisiteGrid();
      if (elected)
        for (int s = 0; s < kStages && start + s < end; ++s)
          fetchWorkspace(start + s, s);
      __syncwarp();
    }
    // g (threads 0 .. 63) and beta (64 .. 127) of chunk c's rows, loaded a
    // chunk ahead; rows past the end: g = 0 keeps G at G_last, beta = 0
    // zeroes M's column.
    auto loadGateOrBeta = [&](int32_t c, int p) {
      const int r = p % kC;
      const int64_t row = begin + static_cast<int64_t>(c) * kC + r;
      if (r >= length - c * kC)
        return 0.0f;
      return p < kC ? args.g[row * S::kHV + head]
                    : args.beta[row * S::kHV + head];
    };
    float gateOrBeta = kInverse && start < end
                           ? loadGateOrBeta(start, tid - 128 * kConsumers)
                           : 0.0f;
    int stage = 0;
    unsigned phase = 0;
    // The loop's bounds broadcast from lane 0: ptxas then knows them
    // uniform and keeps the loop counter in a uniform register. Otherwise
    // it spilled the counter and `end`, and reloaded them from local
    // memory at the top of every chunk, where the branch and the next g
    // and beta addresses waited for them (part of about 1100 cycles there
    // in a 9000-cycle chunk; without the reloads the forward was 2-4%
    // faster, H200).
    const int32_t first = __shfl_sync(0xffffffffu, start, 0),
                  last = __shfl_sync(0xffffffffu, end, 0);
    for (int32_t c = first; c < last; ++c) {
      // The thread's index, read anew each chunk so that the compiler
      // derives its many addresses here instead of holding (and, in the
      // producer's few registers, spilling) them across the loop.
      const unsigned pBits = threadIndexOpaque() - 128 * kConsumers;
      const int p = pBits, pWarp = pBits / 32, lane = pBits % 32;
      const int rows = length - c * kC < kC ? length - c * kC : kC;
      const int r = p % kC;
      const float value = gateOrBeta;
      if (kInverse && c + 1 < last)
        gateOrBeta = loadGateOrBeta(c + 1, p);
      char *at = base + stage * W::kStageBytes;
      mbarrierWait(full + stage, phase);
      if (rows < kC) {
        // TMA read past the sequence end: zero those rows of Q and K (the
        // consumers zero V's).
        zeroTileRowsFrom<kK>(at + W::kStageQ, rows, p, 128);
        zeroTileRowsFrom<kK>(at + W::kStageK, rows, p, 128);
        fenceSharedForAsyncProxy();
      }
      if constexpr (!kInverse) {
        // P alone: Q K^T 32 key columns at a time, gated and masked with
        // the prepare kernel's G (copied with the chunk) into the stage.
        const float *gate = reinterpret_cast<const float *>(at + W::kStageG);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          float scores[16];
          wgmmaFence();
          wgmmaSwizzledShared<kK / 16>(
              scores, at + W::kStageQ,
              at + W::kStageK + Tile::offset(32 * half, 0), false);
          wgmmaCommit();
          wgmmaWait<0>();
          wgmmaSettle(scores);
          gateChunkScores<4>([&](int n, int e) { return scores[4 * n + e]; },
                             gate, rows, pWarp, lane, 32 * half,
                             [&](int i, int j, float p0, float p1) {
                               *reinterpret_cast<uint32_t *>(
                                   at + W::kStageP + Tile::offset(i, j)) =
                                   packBf16(p0, p1);
                             });
        }
      } else {
        // G: an inclusive shuffle scan per warp, then warp 1 adds warp 0's
        // total (the prepare kernel's order).
        float cumulative = value;
#pragma unroll
        for (int offset = 1; offset < 32; offset *= 2) {
          const float before = __shfl_up_sync(0xffffffffu, cumulative, offset);
          if (lane >= offset)
            cumulative += before;
        }
        if (lane == 31 && pWarp == 0)
          warpTotals[0] = cumulative;
        if (p >= kC)
          betas[r] = value;
        producerBarrier<kConsumers>();
        if (pWarp == 1)
          cumulative += warpTotals[0];
        float *gate = reinterpret_cast<float *>(at + W::kStageG);
        if (p < kC)
          gate[p] = cumulative;

        // K K^T and Q K^T back to back for 32 of their columns at a time,
        // each half then gated (gateChunkProducts). With all 64 columns in
        // flight, the 64 accumulators did not fit the producer's registers
        // and ptxas serialised every wgmma of the kernel (warning C7512),
        // the consumers' too.
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const char *keyRows = at + W::kStageK + Tile::offset(32 * half, 0);
          float keys[16], scores[16];
          wgmmaFence();
          wgmmaSwizzledShared<kK / 16>(keys, at + W::kStageK, keyRows, false);
          wgmmaSwizzledShared<kK / 16>(scores, at + W::kStageQ, keyRows, false);
          wgmmaCommit();
          if (half == 0)
            producerBarrier<kConsumers>(); // G whole
          wgmmaWait<0>();
          wgmmaSettle(keys);
          wgmmaSettle(scores);
          gateChunkProducts<F::kLdL, 4>(
              [&](int n, int e) { return keys[4 * n + e]; },
              [&](int n, int e) { return scores[4 * n + e]; }, gate, betas,
              rows, pWarp, lane, 32 * half, lower,
              [&](int i, int j, float p0, float p1) {
                *reinterpret_cast<uint32_t *>(
                    at + W::kStageP + Tile::offset(i, j)) = packBf16(p0, p1);
              });
        }
        producerBarrier<kConsumers>(); // L whole
        invertUnitLowerBlocked<1, F::kLdL, kC * F::kLdL, 128, false,
                               PrepareInverseTf32Of<Config>::value>(
            lower, p, [] { producerBarrier<kConsumers>(); });
        // M = X diag(beta): thread p writes columns 2 (p % 32) .. + 1 of rows
        // p / 32 + 4 i (a warp writes one 128-byte row at a time).
        {
          const int column = 2 * lane;
          const float b0 = betas[column], b1 = betas[column + 1];
#pragma unroll 4
          for (int i = pWarp; i < kC; i += 4) {
            float2 x =
                *reinterpret_cast<const float2 *>(lower + i * F::kLdL + column);
            // X's lower triangle (its upper blocks hold intermediates).
            x.x = column <= i ? x.x : 0.0f;
            x.y = column < i ? x.y : 0.0f;
            *reinterpret_cast<uint32_t *>(at + W::kStageM +
                                          Tile::offset(i, column)) =
                packBf16(x.x * b0, x.y * b1);
          }
        }
      }
      fenceSharedForAsyncProxy(); // M, P, G and zeroed rows, for wgmma
      producerBarrier<kConsumers>();
      if (p == 0)
        mbarrierArrive(produced + stage);
      // Chunk c + kStages - 1 into chunk c - 1's stage (see fetchByWarp).
      if (!kInverse && pWarp == 0 && c > first && c + kStages - 1 < last) {
        const int previous = stage == 0 ? kStages - 1 : stage - 1;
        mbarrierWait(consumed + previous, stage == 0 ? phase ^ 1u : phase);
        fetchByWarp(c + kStages - 1, previous);
      }
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1u;
      }
    }
    return;
  }

  // The consumer warpgroups: the wgmma scan's chunk, fed by the producer.
#if GDN_WGMMA_AVAILABLE
  if constexpr (kConsumers > 1)
    asm volatile(
        "setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(F::kConsumerRegisters));
#endif
  const int group = warp / 4;          // this thread's warpgroup
  const int groupColumn0 = 64 * group; // its columns within the tile

  float state[kK / 2];
  const int64_t stateBase =
      (static_cast<int64_t>(seq) * S::kHV + head) * kK * S::kV + column0 +
      groupColumn0;
  // Accumulator element 4 j + e of this thread: S^T row (value column)
  // 16 (warp % 4) + lane / 4 + 8 (e / 2), key 8 j + 2 (lane % 4) + e % 2.
  auto stateOffset = [&](int j, int e) {
    const int row = 16 * (warp % 4) + lane / 4 + 8 * (e / 2);
    const int key = 8 * j + 2 * (lane % 4) + e % 2;
    return stateBase + key * S::kV + row;
  };
#pragma unroll
  for (int j = 0; j < kK / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      state[4 * j + e] = Config::kHasInitialState && start == 0
                             ? args.initialState[stateOffset(j, e)]
                             : 0.0f;

  int stage = 0;
  unsigned phase = 0;
  // Without the inverse the producer's L region is free: O^T is staged
  // there, and each warp releases the stage as soon as the chunk's products
  // are done, so that the producer's refill and the next P do not wait for
  // o's stores, and whole chunks of o leave by TMA (gqa16x32 8192x4:
  // 0.450-0.462 -> 0.435-0.444 ms in four calls on the H200; with
  // per-thread stores, no gain: docs/performance.md). With the
  // inverse, O^T goes into the V tile the consumers have read, and the
  // stage is released after o's stores.
  constexpr bool kOwnStaging = !kInverse;
  static_assert(!kOwnStaging || 2 * kC * kVt <= 4 * kC * F::kLdL,
                "fused forward: O^T fits the producer's L region");
  for (int32_t c = start; c < end; ++c) {
    // Thread-derived offsets anew each chunk (see the producer's loop)
    // where the consumers have 208 registers. With 224, as they are: re-read
    // each chunk, the block was 4% slower (the producer idle).
    const int tid = kInverse ? threadIndexOpaque() : int(threadIdx.x),
              lane = tid % 32;
    const int rows = length - c * kC < kC ? length - c * kC : kC;
    char *at = base + stage * W::kStageBytes;
    mbarrierWait(full + stage, phase);
    if (rows < kC) {
      // Rows of this warpgroup's V columns past the sequence end (read
      // through ldmatrix: a warpgroup barrier publishes the zeros).
      zeroTileRowsFrom<64>(at + W::kStageV + group * Tile::kBlockBytes, rows,
                           tid % 128, 128);
      warpgroupBarrier(group);
    }
    mbarrierWait(produced + stage, phase);
    float out[32];
    wgmmaScanChunk<Config>(state, out, at, rows,
                           reinterpret_cast<float *>(base + F::kDecays) +
                               group * 2 * kC,
                           group, tid);
    // This warp is done with the stage (its generic accesses ordered
    // before the next TMA write into it).
    auto release = [&] {
      fenceSharedForAsyncProxy();
      __syncwarp();
      if (lane == 0)
        mbarrierArrive(consumed + stage);
    };
    if (kOwnStaging)
      release();

    if (c >= segment.first) {
      // O^T into this warpgroup's 64 columns of the staging tile (every
      // warp of the group is past its reads of the tile: the barrier; with
      // the staging tile apart, the previous chunk's store has read it),
      // then to o.
      char *staging = kOwnStaging ? base + F::kLower : at + W::kStageV;
      auto staged = [&](int row, int column) {
        return reinterpret_cast<Element *>(staging + Tile::offset(row, column));
      };
      if (kOwnStaging && tid % 128 == 0)
        bulkWaitRead<0>();
      warpgroupBarrier(group);
      stageOutputTransposed(out, args.scale, group, tid, staged);
      if (rows == kC) {
        // A whole chunk: the warpgroup's 64 x 64 box as one TMA store (in
        // the V tile, its source read before the stage is released; in the
        // staging tile, before the next chunk's O^T, above).
        fenceSharedForAsyncProxy();
        warpgroupBarrier(group);
        if (tid % 128 == 0) {
          tmaStore2D(&maps.o, head * S::kV + column0 + 64 * group,
                     static_cast<int>(begin) + c * kC,
                     staging + group * Tile::kBlockBytes);
          bulkCommit();
          if (!kOwnStaging)
            bulkWaitRead<0>();
        }
      } else {
        // The last chunk's real rows alone (a box would write the rows of
        // the next sequence).
        warpgroupBarrier(group);
        storeStagedRows(args.o, static_cast<int64_t>(S::kHV) * S::kV,
                        begin + static_cast<int64_t>(c) * kC,
                        head * S::kV + column0, rows, group, tid, staged);
      }
    } else {
      // The decays are read: the next chunk's may overwrite them.
      warpgroupBarrier(group);
    }
    if (!kOwnStaging)
      release();
    if (kInverse && warp == 0 && c + kStages < end) {
      // Chunk c + kStages into this stage once every consumer warp is done
      // with it (see fetchByWarp; the producer finished with it before
      // `produced`).
      mbarrierWait(consumed + stage, phase);
      fetchByWarp(c + kStages, stage);
    }
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
  if (threadIdx.x % 128 == 0)
    bulkWaitAll(); // o's stores complete before the block ends
  if (Config::kHasFinalState && segment.endsSequence()) {
#pragma unroll
    for (int j = 0; j < kK / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        args.finalState[stateOffset(j, e)] = state[4 * j + e];
  }
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_DELTA_RULE_FUSED_CUH
