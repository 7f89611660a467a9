//===- delta_rule_wgmma.cuh - the delta-rule scan on wgmma -------*- CUDA
//-*-===//
//
// The scan of delta_rule.cuh (same inputs, workspace, outputs and function)
// for sm_90a, on warpgroup products (wgmma.cuh). Included by delta_rule.cuh
// after the definitions it shares; a Config selects it with
// `kScanWgmma = true` (V tile 64 or 128).
//
// One block per (sequence or segment of a split chain, value head, V tile;
// delta_rule.cuh's ScanSegment) with one warpgroup per 64
// columns of the tile. A warpgroup keeps its 64 columns of the state
// transposed, S^T (64 x K fp32), as the accumulator of a 64 x K product, so
// that every product of the chunk has V as its M dimension: the warpgroups
// never exchange data, and each product's result, converted to bf16 in
// registers, is the A operand of the next (S, R, Vnew never go to shared
// memory). B operands are the chunk's tiles in shared memory, copied by TMA
// (tma.cuh) with 128-byte swizzling, two or three chunks in flight. Per
// chunk, with Gamma_t = exp(G_t) and rows of the transposed tiles being
// value columns:
//
//   SK   = S^T K^T,  O = S^T Q^T                   (K-major B, k = K)
//   R    = V^T - SK diag(Gamma)
//   Vn   = R M^T                                   (K-major B, k = 64)
//   O    = scale (O diag(Gamma) + Vn P^T)          (K-major B)
//   S^T  = exp(G_last) S^T + Vn diag(exp(G_last - G)) K   (MN-major B)
//
// which is the scan's algebra transposed. P comes from the prepare kernel
// or, with kWgmmaScanScores, from the scan itself: Q K^T on wgmma, 32 key
// columns per product (each of two warpgroups one half; one warpgroup
// both), gated and masked into a shared tile. The bf16
// roundings are those of the mma.sync scan (S, R, Vnew, decayed Vnew, o), so
// the precision is the same; the sums run in another order, so the bits are
// not.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_DELTA_RULE_WGMMA_CUH
#define GDN_DEVICE_DELTA_RULE_WGMMA_CUH

#include "gdn/device/grid_dependency.cuh"
#include "gdn/device/tma.cuh"
#include "gdn/device/wgmma.cuh"

namespace gdn {
namespace device {

/// Optional Config member kScanWgmma: true runs the scan on wgmma (sm_90a).
GDN_OPTIONAL_CONFIG_MEMBER(ScanWgmmaOf, kScanWgmma, false)
/// Optional Config member kWgmmaStages: chunks in flight (2 or 3; default
/// 0, three where they fit in shared memory, else two).
GDN_OPTIONAL_CONFIG_MEMBER(WgmmaStagesOf, kWgmmaStages, 0)
/// Optional Config member kFusedForward: true runs the forward as one
/// warp-specialised kernel (sm_90a; needs kScanWgmma; delta_rule_fused.cuh).
GDN_OPTIONAL_CONFIG_MEMBER(FusedForwardOf, kFusedForward, false)
/// Optional Config member kFusedInverse (with kFusedForward): true
/// (default), the fused block's producer does all of the prepare kernel's
/// work; false, it makes P alone, and the prepare kernel (without P) still
/// makes M, G and the transition bounds, which the block copies by TMA.
GDN_OPTIONAL_CONFIG_MEMBER(FusedInverseOf, kFusedInverse, true)
/// Optional Config member kProgrammaticLaunch (sm_90a two-kernel forward):
/// true (default), the scan or fused block is launched as a programmatic
/// dependent of the prepare kernel (grid_dependency.cuh): its launch, set-up
/// and first input copies overlap the prepare kernel's last blocks, and it
/// waits for the prepare kernel's grid before reading the workspace; false,
/// plain stream order.
GDN_OPTIONAL_CONFIG_MEMBER(ProgrammaticLaunchOf, kProgrammaticLaunch, true)
/// Optional Config member kPrepareDelayCycles, for tests only (default 0):
/// the TMA prepare kernel's blocks of the last value-head pair spin that
/// many cycles before their work, after letting the dependent scan launch.
/// A scan block that read the workspace before waiting for the prepare
/// kernel's grid would then read what was there before (delta_rule_bench's
/// check fills it with NaN bytes).
GDN_OPTIONAL_CONFIG_MEMBER(PrepareDelayOf, kPrepareDelayCycles, 0)
/// Whether the forward is the fused block alone (no prepare kernel, no
/// workspace).
template <class Config>
struct FusedOnlyOf
    : std::integral_constant<bool, FusedForwardOf<Config>::value &&
                                       FusedInverseOf<Config>::value> {};
/// Optional Config member kWgmmaScanScores: true, the scan computes P =
/// gated, masked Q K^T per chunk on wgmma from the Q and K it stages anyway
/// (the prepare kernel then reads no Q and writes no P); false, it copies
/// the prepare kernel's P. Default: true at V tile 128 where the prepare
/// kernel's block holds one value head. There its Q K^T serves one head,
/// and moving it into the scan saved 10% of the forward (mha32, H200).
/// Where a block holds two heads of a GQA group, it shares one Q K^T
/// between them; the scan then needs one per head, and the forward was
/// 4-8% slower (gqa16x32). At V tile 64 one warpgroup makes all of P: the
/// scan spilled and the forward was 20-34% slower (mha32). Both stay
/// false. (gdn-select-kernels applies the same rule; generated configs
/// state the choice.)
GDN_OPTIONAL_CONFIG_MEMBER(WgmmaScanScoresOf, kWgmmaScanScores,
                           DeltaRuleShape<C>::kPrepareHeads == 1 &&
                               DeltaRuleShape<C>::kVt == 128)

/// Whether the forward's scan computes P itself: the wgmma scan with
/// kWgmmaScanScores, or the fused block whose producer makes P alone
/// (kFusedInverse false). The prepare kernel then skips P, and the
/// workspace holds none. (The fused forward alone has no prepare kernel.)
template <class Config>
struct ScanComputesScoresOf
    : std::integral_constant<bool,
                             ScanWgmmaOf<Config>::value &&
                                 (FusedForwardOf<Config>::value
                                      ? !FusedInverseOf<Config>::value
                                      : WgmmaScanScoresOf<Config>::value)> {};

/// Shared-memory layout of the wgmma scan: kStages stages of {Q, K, V, M,
/// P (64-column blocks of 128-byte-swizzled rows, as TMA writes them), G},
/// then the output staging tile, the decays and the stages' mbarriers. The
/// base is aligned to 1024 bytes at run time (kBytes includes the slack).
template <class Config> struct DeltaRuleWgmmaShape {
  using Base = DeltaRuleShape<Config>;
  static constexpr int kChunk = 64, kK = Base::kK, kVt = Base::kVt;
  static_assert(kVt == 64 || kVt == 128,
                "delta rule (wgmma): the V tile is 64 or 128 columns, one "
                "warpgroup per 64");
  static constexpr int kWarpgroups = kVt / 64;
  static constexpr int kThreads = 128 * kWarpgroups;
  using Tile = Swizzle128Tile<kChunk>; // every staged tile: 64 rows
  static constexpr size_t kStageQ = 0;
  static constexpr size_t kStageK = kStageQ + 2 * kChunk * kK;
  static constexpr size_t kStageV = kStageK + 2 * kChunk * kK;
  static constexpr size_t kStageM = kStageV + 2 * kChunk * kVt;
  // The scan's consumers compute P (not the fused block, whose producer
  // writes P into the stage).
  static constexpr bool kScoresInScan =
      ScanComputesScoresOf<Config>::value && !FusedForwardOf<Config>::value;
  static constexpr size_t kStageP = kStageM + 2 * kChunk * kChunk;
  static constexpr size_t kStageG =
      kStageP + (kScoresInScan ? 0 : 2 * kChunk * kChunk);
  static constexpr unsigned kStageCopyBytes =
      static_cast<unsigned>(kStageG + 4 * kChunk);
  static constexpr size_t kStageBytes = (kStageCopyBytes + 1023) / 1024 * 1024;
  static constexpr int kLdOut = kVt + 8; // output staging rows
  // The chunk's P when the scan computes it (one tile, not staged: it is
  // made and used within the chunk).
  static constexpr size_t kScoreBytes = kScoresInScan ? 2 * kChunk * kChunk : 0;
  static constexpr size_t kTail = kScoreBytes + 2 * kChunk * kLdOut +
                                  kWarpgroups * 2 * 4 * kChunk + 8 * 3 + 1024;
  // Chunks in flight: three by default where they fit (the copies of two
  // chunks overlap the products of one), else two.
  static constexpr int kStages =
      WgmmaStagesOf<Config>::value != 0
          ? WgmmaStagesOf<Config>::value
          : (3 * kStageBytes + kTail <= 227 * 1024 ? 3 : 2);
  static_assert(kStages == 2 || kStages == 3,
                "delta rule (wgmma): 2 or 3 chunks in flight");
  static constexpr size_t kScores = kStages * kStageBytes; // 1024-aligned
  static constexpr size_t kOutput = kScores + kScoreBytes;
  // Per warpgroup, the chunk's decays exp(G_t) and exp(G_last - G_t).
  static constexpr size_t kDecays = kOutput + 2 * kChunk * kLdOut;
  static constexpr size_t kBarriers = kDecays + kWarpgroups * 2 * 4 * kChunk;
  static constexpr size_t kBytes = kBarriers + 8 * kStages + 1024;
  static_assert(kBarriers % 8 == 0, "mbarriers are 8-byte aligned");
  static_assert(kBytes <= 227 * 1024, "delta rule (wgmma): shared memory");
};

/// zeroTileRowsFrom with every thread of a kThreads-thread block.
template <int kColumns, int kThreads>
__device__ __forceinline__ void zeroRowsFrom(char *tile, int from) {
  zeroTileRowsFrom<kColumns>(tile, from, threadIdx.x, kThreads);
}

/// How the wgmma path's kernels refuse a target without wgmma (a string
/// literal, as static_assert needs; nvcc-examples.test checks it).
#define GDN_WGMMA_NEEDS_SM90A                                                  \
  "the wgmma scan (scan = \"wgmma\") needs sm_90a: compile with "              \
  "-gencode=arch=compute_90a,code=sm_90a, or select kernels with "             \
  "--gdn-select-kernels=\"wgmma=false\""

/// The tensor maps the sm_90a kernels copy their tiles with (a kernel
/// parameter): q, k and v, the workspace's M and P for the wgmma scan, and
/// o for the fused block's stores of whole chunks.
struct DeltaRuleTensorMaps {
  CUtensorMap q, k, v, transform, scores, o;
};

/// The prepare kernel's Q and K and their products on sm_90a (prepareChunk's
/// `Operands`, see PrepareOperandsMma): one thread copies them as 64 x 64
/// boxes of `maps` (128-byte swizzled, where the padded tiles lie, from a
/// 1024-byte aligned base), counted on one mbarrier, and the block (one
/// warpgroup) runs K K^T and Q K^T on wgmma straight from the boxes: with
/// Q K^T, 32 key columns per product (both halves in flight); without it,
/// K K^T as one N = 64 product. Two halves read K's A operand twice, 16 KiB
/// more shared-memory reads per block in a kernel whose L1 is its busiest
/// unit (92% under ncu): one product made the prepare kernel 2-9% and the
/// forward 0.9-1.9% faster at every default row (bits equal, H200;
/// docs/performance.md). Per-thread cp.async into padded rows wrote
/// shared memory in 2.6 times the wavefronts its bytes needed, and the
/// ldmatrix fragments of mma.sync read K four times over (ncu;
/// docs/performance.md).
template <class Config, bool kStoreScores> struct PrepareOperandsTma {
  using S = DeltaRuleShape<Config>;
  using Tile = Swizzle128Tile<64>;
  static constexpr int kBoxes = S::kK / 64; // per tile
  static_assert(2 * kBoxes * Tile::kBlockBytes <= S::kPrepareQKEnd,
                "the boxes fit where the padded Q and K tiles lie");
  const DeltaRuleTensorMaps &maps;
  char *queries, *keyBoxes;
  uint64_t *copied; // after the layout's last byte (prepareTmaBytes)
  // Accumulator element 4 n + e of 8-column tile n (see key()); with Q K^T
  // each half of 32 columns is a product of its own.
  float keys[32], scores[2][16];

  __device__ __forceinline__ PrepareOperandsTma(const DeltaRuleTensorMaps &maps,
                                                char *base)
      : maps(maps), queries(base), keyBoxes(base + kBoxes * Tile::kBlockBytes),
        copied(reinterpret_cast<uint64_t *>(base +
                                            S::prepareBytes(kStoreScores))) {}
  /// The other threads wait on the mbarrier after the block barrier that
  /// follows (which orders its initialisation before their waits).
  __device__ __forceinline__ void issue(const DeltaRuleArgs<Config> &,
                                        int64_t row0, int keyHead, int) {
    if (threadIdx.x != 0)
      return;
    mbarrierInit(copied, 1);
    mbarrierExpectBytes(copied,
                        (kStoreScores ? 2 : 1) * kBoxes * Tile::kBlockBytes);
#pragma unroll
    for (int b = 0; b < kBoxes; ++b) {
      const int x = keyHead * S::kK + 64 * b, y = static_cast<int>(row0);
      tmaLoad2D(keyBoxes + b * Tile::kBlockBytes, &maps.k, x, y, copied);
      if (kStoreScores)
        tmaLoad2D(queries + b * Tile::kBlockBytes, &maps.q, x, y, copied);
    }
  }
  __device__ __forceinline__ void beforeBarrier() {}
  /// Rows past the sequence's end hold what follows it: zeroed, and the
  /// zeros ordered before wgmma's reads (a barrier must follow).
  __device__ __forceinline__ void afterBarrier(int rows, int tid) {
    mbarrierWait(copied, 0);
    if (rows < 64) {
      zeroTileRowsFrom<S::kK>(keyBoxes, rows, tid, S::kThreads);
      if (kStoreScores)
        zeroTileRowsFrom<S::kK>(queries, rows, tid, S::kThreads);
      fenceSharedForAsyncProxy();
    }
  }
  __device__ __forceinline__ void products(int, int) {
    wgmmaFence();
    if constexpr (kStoreScores) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const char *keyRows = keyBoxes + Tile::offset(32 * half, 0);
        wgmmaSwizzledShared<S::kK / 16>(keyHalf(half), keyBoxes, keyRows,
                                        false);
        wgmmaSwizzledShared<S::kK / 16>(scores[half], queries, keyRows, false);
      }
    } else {
      wgmmaSwizzledShared<S::kK / 16>(keys, keyBoxes, keyBoxes, false);
    }
    wgmmaCommit();
    wgmmaWait<0>();
    wgmmaSettle(keys);
    if constexpr (kStoreScores) {
      wgmmaSettle(scores[0]);
      wgmmaSettle(scores[1]);
    }
  }
  /// wgmma's accumulators: warp w's rows 16 w .., 8-column tile n at 4 n
  /// (mma.sync's m16n8 layout), the same elements in one m64n64 product
  /// as in two m64n32 halves.
  __device__ __forceinline__ float key(int n, int e) const {
    return keys[4 * n + e];
  }
  /// Columns 32 half .. + 31 of K K^T as one m64n32 product's accumulators.
  __device__ __forceinline__ float (&keyHalf(int half))[16] {
    return *reinterpret_cast<float(*)[16]>(keys + 16 * half);
  }
  __device__ __forceinline__ float score(int n, int e) const {
    return scores[n / 4][4 * (n % 4) + e];
  }
};

/// The prepare kernel of the wgmma path (kScanWgmma, sm_90a): Q and K by
/// TMA, K K^T and Q K^T on wgmma (PrepareOperandsTma); the rest is
/// prepareChunk's, as in deltaChunkPrepareKernel.
template <class Config, bool kStoreScores = true>
__global__ void __launch_bounds__(
    DeltaRuleShape<Config>::kThreads,
    kStoreScores ? DeltaRuleShape<Config>::kPrepareBlocksPerSM
                 : DeltaRuleShape<Config>::kPrepareBlocksPerSMWithoutScores)
    deltaChunkPrepareTmaKernel(DeltaRuleArgs<Config> args,
                               const __grid_constant__ DeltaRuleTensorMaps
                                   maps) {
#if defined(__CUDA_ARCH__) && !GDN_WGMMA_AVAILABLE
  // (The scan's message: the scan's choice brings this kernel.)
  static_assert(!ScanWgmmaOf<Config>::value, GDN_WGMMA_NEEDS_SM90A);
#endif
  // The scan's blocks may launch once every block of this grid has started
  // (they wait for this grid's end before they read the workspace).
  allowDependentLaunch();
  if constexpr (PrepareDelayOf<Config>::value > 0) {
    if (blockIdx.y == gridDim.y - 1) {
      const long long begin = clock64();
      while (clock64() - begin < PrepareDelayOf<Config>::value) {
      }
    }
  }
  extern __shared__ uint4 prepareShared[];
  char *base = alignSharedTo1024(prepareShared);
  PrepareOperandsTma<Config, kStoreScores> operands(maps, base);
  prepareChunk<Config, kStoreScores>(args, operands, base);
}

/// Barrier of the 128 threads of warpgroup `group` (ids 1.. ; 0 is
/// __syncthreads).
__device__ __forceinline__ void warpgroupBarrier(int group) {
#ifdef GDN_DEVICE_EMULATION
  emulation::namedBarrier(group + 1, 128);
#else
  asm volatile("bar.sync %0, 128;\n" ::"r"(group + 1) : "memory");
#endif
}

/// kSave: the backward's forward pass (as deltaChunkScanKernel's): no o and
/// no final states, no Q or P copied or multiplied; S at every chunk start
/// and Vnew, in the bf16 the chunk's products read, to args.savedStates (by
/// TMA through maps.o: encodeRecomputationMaps) and args.savedNew.
template <class Config, bool kSave = false>
__global__ void __launch_bounds__(DeltaRuleWgmmaShape<Config>::kThreads, 1)
    deltaChunkScanWgmmaKernel(DeltaRuleArgs<Config> args,
                              const __grid_constant__ DeltaRuleTensorMaps maps) {
  using S = DeltaRuleShape<Config>;
  using W = DeltaRuleWgmmaShape<Config>;
  using Element = typename Config::Element;
  constexpr int kC = S::kChunk, kK = S::kK, kVt = S::kVt;
#if defined(__CUDA_ARCH__) && !GDN_WGMMA_AVAILABLE
  static_assert(!ScanWgmmaOf<Config>::value, GDN_WGMMA_NEEDS_SM90A);
#endif
  const PackingView &packing = args.packing;
  if (packingInvalid(args)) {
    if (kSave)
      return; // the backward's last kernel writes NaN over the gradients
    fillOutputsWithNaN<Config, W::kThreads>(args);
    return;
  }
  const ScanSegment<Config> segment(packing, blockIdx.x, args.segmentChunks);
  if (!segment.valid)
    return;
  const ScanUnit<Config> &unit = segment.unit;
  const int32_t seq = segment.seq;
  const int head = unit.head, keyHead = unit.keyHead, column0 = unit.column0;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int group = warp / 4;               // this thread's warpgroup
  const int groupColumn0 = 64 * group;      // its columns within the tile
  const int rowInGroup = 16 * (warp % 4) + lane / 4; // + 8 for e >= 2
  const int pairColumn = 2 * (lane % 4);             // + 8 j, + 1
  // First tile column of this warp's 16 accumulator rows.
  const int transposeColumn = groupColumn0 + 16 * (warp % 4);
  const int32_t length = packing.length(seq);
  const int64_t begin = packing.begin(seq);
  const int64_t slot0 = firstSlot(packing, seq);
  const int64_t valueRow = static_cast<int64_t>(S::kHV) * S::kV;
  // Launched as a dependent of the prepare kernel (kProgrammaticLaunch):
  // everything below reads its workspace.
  waitForPrerequisiteGrid();
  // Chunks start .. first - 1 only warm the state up (no output).
  const int32_t start =
      warmupStart(args.workspace.transitionBound, slot0, S::kHV, head,
                  segment.first, args.warmupLogBound);
  const int32_t end = segment.end;

  if (!kSave && segment.first == 0)
    zeroPaddingRows<Config, W::kThreads>(args, seq, head, column0);

  extern __shared__ uint4 wgmmaShared[];
  // 128-byte swizzling repeats every 1024 bytes of address: align the
  // base so that TMA's pattern and wgmma's agree. Rounded through an
  // integer, which leaves the scan's few generic accesses as generic loads
  // and stores: alignSharedTo1024 (LDS/STS) made this kernel 1.7% slower on
  // the H200 (0.2755 against 0.2800 ms at gqa16x32 8192x4, two A/B rounds
  // in one call; the fused kernel, with many more such accesses, uses it).
  char *base = reinterpret_cast<char *>(
      (reinterpret_cast<uintptr_t>(wgmmaShared) + 1023) & ~uintptr_t(1023));
  Element *staging = reinterpret_cast<Element *>(base + W::kOutput);
  // The chunk's P when the scan computes it: written by generic stores of
  // every thread, so through a pointer that keeps the shared address space
  // (the same address as base + kScores: the shared window's generic base
  // is aligned far beyond 1024 bytes).
  char *scoreTile = alignSharedTo1024(wgmmaShared) + W::kScores;
  uint64_t *full = reinterpret_cast<uint64_t *>(base + W::kBarriers);
  // Stages and mbarrier phases go by the block's own chunk count (chunk c is
  // its (c - start)-th), whatever chunk it starts from.
  auto stage = [&](int c) {
    return base + ((c - start) % W::kStages) * W::kStageBytes;
  };
  // kSave: warpgroup g stages S in stage g's Q region, which kSave never
  // copies into: K / 64 boxes of 64 keys x its 64 columns (Swizzle128Tile,
  // as TMA stores them through maps.o, the saved states' map).
  static_assert(!kSave || W::kStages >= W::kWarpgroups,
                "delta rule (wgmma, kSave): a stage's Q region per warpgroup");
  char *stateStaging = base + group * W::kStageBytes + W::kStageQ;
  auto stateStagingAt = [&](int key, int column) {
    return reinterpret_cast<__nv_bfloat16 *>(
        stateStaging + (key / 64) * W::Tile::kBlockBytes +
        W::Tile::offset(key % 64, column - groupColumn0));
  };

  // S^T of this warpgroup's 64 columns: accumulator element (r, k) is
  // S[k][groupColumn0 + r].
  float state[kK / 2];
  const int64_t stateBase =
      (static_cast<int64_t>(seq) * S::kHV + head) * kK * S::kV + column0 +
      groupColumn0;
  // Where accumulator element 4 j + e of this thread lives in a [N, HV, K,
  // V] state tensor.
  auto stateOffset = [&](int j, int e) {
    const int row = rowInGroup + 8 * (e / 2);
    const int key = 8 * j + pairColumn + e % 2;
    return stateBase + key * S::kV + row;
  };
#pragma unroll
  for (int j = 0; j < kK / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      state[4 * j + e] = Config::kHasInitialState && start == 0
                             ? args.initialState[stateOffset(j, e)]
                             : 0.0f;

  // Thread 0 issues the copies of chunk c into its stage: one TMA box per
  // 64 columns of Q, K, V, M and P, one bulk copy of G, all completing on
  // the stage's mbarrier (kSave: no Q, no P).
  constexpr bool kCopiesP = !W::kScoresInScan && !kSave;
  constexpr unsigned kCopyBytes =
      W::kStageCopyBytes - (kSave ? 2 * kC * kK : 0) - (kSave && !W::kScoresInScan ? 2 * kC * kC : 0);
  auto fetch = [&](int32_t c) {
    char *at = stage(c);
    uint64_t *barrier = full + (c - start) % W::kStages;
    const int row0 = static_cast<int>(begin) + c * kC;
    const int tileRow = static_cast<int>(((slot0 + c) * S::kHV + head) * kC);
    mbarrierExpectBytes(barrier, kCopyBytes);
#pragma unroll
    for (int b = 0; b < kK / 64; ++b) {
      if (!kSave)
        tmaLoad2D(at + W::kStageQ + b * W::Tile::kBlockBytes, &maps.q,
                  keyHead * kK + 64 * b, row0, barrier);
      tmaLoad2D(at + W::kStageK + b * W::Tile::kBlockBytes, &maps.k,
                keyHead * kK + 64 * b, row0, barrier);
    }
#pragma unroll
    for (int b = 0; b < kVt / 64; ++b)
      tmaLoad2D(at + W::kStageV + b * W::Tile::kBlockBytes, &maps.v,
                head * S::kV + column0 + 64 * b, row0, barrier);
    tmaLoad2D(at + W::kStageM, &maps.transform, 0, tileRow, barrier);
    if (kCopiesP)
      tmaLoad2D(at + W::kStageP, &maps.scores, 0, tileRow, barrier);
    bulkLoad(at + W::kStageG, args.workspace.gateCumsum + tileRow, 4 * kC,
             barrier);
  };
  if (tid == 0) {
    for (int s = 0; s < W::kStages; ++s)
      mbarrierInit(full + s, 1);
  }
  __syncthreads();
  if (tid == 0)
    for (int c = start; c < start + W::kStages - 1 && c < end; ++c)
      fetch(c);

  // A warm-up chunk (c < first) runs the whole chunk but stores no O: its
  // products are the same instructions (a wgmma in a divergent path would
  // be serialized by ptxas), and warm-ups are a chunk or two.
  for (int32_t c = start; c < end; ++c) {
    const int32_t local = c - start;
    mbarrierWait(full + local % W::kStages, (local / W::kStages) & 1);
    const int rows = length - c * kC < kC ? length - c * kC : kC;
    if (rows < kC) {
      // TMA read past the sequence end: zero those rows of Q, K, V (for
      // wgmma, whose reads go through the async proxy, the fence below).
      char *at = stage(c);
      if (!kSave)
        zeroRowsFrom<kK, W::kThreads>(at + W::kStageQ, rows);
      zeroRowsFrom<kK, W::kThreads>(at + W::kStageK, rows);
      zeroRowsFrom<kVt, W::kThreads>(at + W::kStageV, rows);
      fenceSharedForAsyncProxy();
    }
    // (kSave: the previous chunk's S has left the staging boxes.)
    if (kSave && tid % 128 == 0)
      bulkWaitRead<0>();
    // Chunk c is whole for every thread, and every warpgroup is done with
    // chunk c - 1: its stage and the output staging tile may be reused.
    __syncthreads();
    if (tid == 0 && c + W::kStages - 1 < end)
      fetch(c + W::kStages - 1);

    // (delta_rule_fused.cuh's wgmmaScanChunk is a copy of the chunk from
    // here to the state's settle, less the kScoresInScan branches: its
    // producer makes P. Change the two together.)
    const char *at = stage(c);
    const float *gate = reinterpret_cast<const float *>(at + W::kStageG);

    // S^T in bf16 as the A operand of the two K-deep products.
    uint32_t stateA[kK / 16][4];
#pragma unroll
    for (int s = 0; s < kK / 16; ++s)
      accumulatorToA(state, s, stateA[s]);
    if (kSave && c >= segment.first) {
      // S at the chunk's start, the bf16 of stateA, as [key][column] into
      // this warpgroup's staging boxes (stmatrix.trans; element (r, k) of
      // S^T is S[k][column r]), stored by TMA after the decays' barrier
      // below. Staged before the products: an operand of a wgmma in flight
      // may not be read.
      stageOutputTransposed<kK / 8>(state, 1.0f, group, tid, stateStagingAt);
      fenceSharedForAsyncProxy();
    }
    // Written by their first product (scale-d = 0 ignores the old value).
    float keyProduct[32], out[32];
    wgmmaFence();
    wgmmaSwizzled<64, kK / 16, 0>(keyProduct, stateA, at + W::kStageK, false);
    wgmmaCommit();
    if (!kSave) {
      wgmmaSwizzled<64, kK / 16, 0>(out, stateA, at + W::kStageQ, false);
      wgmmaCommit();
    }

    // The decays of the chunk's tokens while the products run, one per
    // thread of the warpgroup (each thread then reads its 16 tokens, 8 j +
    // pairColumn + {0, 1}).
    const float lastGate = gate[rows - 1];
    float *toStart = reinterpret_cast<float *>(base + W::kDecays) +
                     group * 2 * kC;
    const float *toEnd = toStart + kC;
    {
      const int token = tid % kC;
      toStart[tid % 128] = tid % 128 < kC ? decay(gate[token])
                                          : decay(lastGate - gate[token]);
    }
    warpgroupBarrier(group);
    if (kSave && c >= segment.first && tid % 128 == 0) {
      // The warpgroup's S, staged above, to [slot][HV][K][V].
      const int stateRow = static_cast<int>(((slot0 + c) * S::kHV + head) * kK);
#pragma unroll
      for (int b = 0; b < kK / 64; ++b)
        tmaStore2D(&maps.o, column0 + groupColumn0, stateRow + 64 * b,
                   stateStaging + b * W::Tile::kBlockBytes);
      bulkCommit();
    }

    // R = V^T - SK diag(Gamma) (the chain waits only for S K^T). Each
    // thread's tokens come in adjacent pairs: one 8-byte load per pair.
    wgmmaWait<kSave ? 0 : 1>();
    wgmmaSettle(keyProduct);
    float2 startPair[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
      startPair[j] =
          *reinterpret_cast<const float2 *>(toStart + 8 * j + pairColumn);
    // V^T in the accumulator layout: ldmatrix.trans of V's 8 x 8 blocks
    // (tokens x columns), two column tiles j per load.
#pragma unroll
    for (int j = 0; j < 8; j += 2) {
      const int matrix = lane / 8;
      uint32_t values[4];
      loadMatrices<true>(
          values, reinterpret_cast<const Element *>(
                      at + W::kStageV +
                      W::Tile::offset(8 * (j + matrix / 2) + lane % 8,
                                      transposeColumn + 8 * (matrix % 2))));
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
    wgmmaWait<0>();
    if (!kSave)
      wgmmaSettle(out);
    wgmmaSettle(fresh);

    // P's product when the scan computes it: the tokens x tokens Q K^T, 32
    // key columns per warpgroup and product. It does not depend on the
    // state; issued here, where the chain holds the fewest registers, it
    // runs while Vn is converted. (Issued with the chunk's first products
    // it spilled, and the scan was 17% slower than here; a whole P per
    // warpgroup, which spares the block barrier below, 28%: H200,
    // gqa16x32 with kWgmmaScanScores.)
    constexpr bool kScores = W::kScoresInScan && !kSave;
    constexpr int kScoreHalves = kScores ? 2 / W::kWarpgroups : 0;
    float scores[kScoreHalves > 0 ? kScoreHalves : 1][16];
    if (kScores) {
      wgmmaFence();
#pragma unroll
      for (int half = 0; half < kScoreHalves; ++half)
        wgmmaSwizzledShared<kK / 16>(
            scores[half], at + W::kStageQ,
            at + W::kStageK +
                W::Tile::offset(32 * (group * kScoreHalves + half), 0),
            false);
      wgmmaCommit();
    }

    // The state update first (the chain), then O += Vn P^T.
    uint32_t freshA[4][4], decayedA[4][4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      accumulatorToA(fresh, s, freshA[s]);
      const float2 low = *reinterpret_cast<const float2 *>(
                       toEnd + 16 * s + pairColumn),
                   high = *reinterpret_cast<const float2 *>(
                       toEnd + 16 * s + 8 + pairColumn);
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
    const float chunkDecay = decay(lastGate);
#pragma unroll
    for (int i = 0; i < kK / 2; ++i)
      state[i] *= chunkDecay;
#pragma unroll
    for (int i = 0; i < 32 && !kSave; ++i)
      out[i] *= i % 2 ? startPair[i / 4].y : startPair[i / 4].x;
    wgmmaFence();
    wgmmaSwizzled<kK, 4, 1>(state, decayedA, at + W::kStageK, true);
    if (kScores) {
      // While the state's product runs: P gated and masked
      // (gateChunkScores) into its tile, in the swizzled layout the P^T
      // product reads; then every warpgroup's columns must be in.
      wgmmaCommit();
      wgmmaWait<1>();
#pragma unroll
      for (int half = 0; half < kScoreHalves; ++half) {
        wgmmaSettle(scores[half]);
        gateChunkScores<4>(
            [&](int n, int e) { return scores[half][4 * n + e]; }, gate, rows,
            warp % 4, lane, 32 * (group * kScoreHalves + half),
            [&](int i, int j, float p0, float p1) {
              *reinterpret_cast<uint32_t *>(scoreTile + W::Tile::offset(i, j)) =
                  packBf16(p0, p1);
            });
      }
      fenceSharedForAsyncProxy();
      __syncthreads();
      wgmmaFence();
    }
    if (!kSave)
      wgmmaSwizzled<64, 4, 0>(
          out, freshA, W::kScoresInScan ? scoreTile : at + W::kStageP, true);
    wgmmaCommit();
    wgmmaWait<0>();
    wgmmaSettle(state);
    if (!kSave)
      wgmmaSettle(out);
    if (c < segment.first)
      continue; // every thread alike

    // O^T (kSave: Vnew^T) to the staging tile as [token][column], then this
    // warpgroup's 64 columns of the real rows to o (savedNew) in 16-byte
    // pieces.
    auto stagedAt = [&](int row, int column) {
      return staging + row * W::kLdOut + column;
    };
    if constexpr (kSave)
      stageOutputTransposed(fresh, 1.0f, group, tid, stagedAt);
    else
      stageOutputTransposed(out, args.scale, group, tid, stagedAt);
    warpgroupBarrier(group);
    storeStagedRows(kSave ? args.savedNew : args.o, valueRow,
                    begin + static_cast<int64_t>(c) * kC, head * S::kV + column0, rows,
                    group, tid, stagedAt);
  }
  if (kSave && tid % 128 == 0)
    bulkWaitAll(); // S's last stores read their boxes before the block ends
  if (Config::kHasFinalState && !kSave && segment.endsSequence()) {
#pragma unroll
    for (int j = 0; j < kK / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        args.finalState[stateOffset(j, e)] = state[4 * j + e];
  }
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_DELTA_RULE_WGMMA_CUH
