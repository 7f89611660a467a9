//===- delta_rule_prepare.cuh - the delta-rule prepare kernel ----*- CUDA
//-*-===//
//
// The first of delta_rule.cuh's two forward kernels, fully parallel over
// (chunk, pair of value heads): per chunk G (the cumulative gate), K K^T and
// Q K^T on the tensor cores, the gates, betas and masks (gateChunkProducts),
// the inverse of I + L by 16 x 16 blocks in tf32 (invertUnitLowerBlocked),
// M = (I + L)^-1 diag(beta) and P to the workspace, and for split launches
// each chunk's transition bound
// (docs/delta-rule.md, "Algorithm" and "Split chains"). prepareChunk takes
// its Q and K products from an `Operands` policy: PrepareOperandsMma here
// (cp.async and mma.sync, any target from sm_80), PrepareOperandsTma in
// delta_rule_wgmma.cuh (TMA and wgmma, sm_90a). The gating and the inverse
// serve the wgmma scan's and the fused block's producers too. Included by
// delta_rule.cuh after the definitions it shares (shapes, arguments,
// workspace, slots).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_DELTA_RULE_PREPARE_CUH
#define GDN_DEVICE_DELTA_RULE_PREPARE_CUH

namespace gdn {
namespace device {

/// Where element (r, c) of a 16 x 16 fp32 tile with row stride `ld` lies.
struct RowMajorTile {
  int ld;
  __device__ __forceinline__ int operator()(int r, int c) const {
    return r * ld + c;
  }
};

/// A 16 x 16 fp32 tile as two bf16 A fragments, hi + lo = the value to
/// about 16 bits (lo is the bf16 of what hi's rounding left).
template <class Layout>
__device__ __forceinline__ void loadSplitA(const float *tile, Layout at,
                                           int lane, FragmentA &hi,
                                           FragmentA &lo) {
  const int g = lane >> 2, t = lane & 3;
  // Adjacent pairs: 8-byte loads.
  auto pair = [&](int r, int c) {
    return *reinterpret_cast<const float2 *>(tile + at(r, c));
  };
  const float2 v01 = pair(g, 2 * t), v23 = pair(g + 8, 2 * t),
               v45 = pair(g, 2 * t + 8), v67 = pair(g + 8, 2 * t + 8);
  const float v[8] = {v01.x, v01.y, v23.x, v23.y, v45.x, v45.y, v67.x, v67.y};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    hi.r[k] = packBf16(v[2 * k], v[2 * k + 1]);
    lo.r[k] = packBf16(v[2 * k] - bf16BitsToFloat(hi.r[k] & 0xffffu),
                       v[2 * k + 1] - bf16BitsToFloat(hi.r[k] >> 16));
  }
}

/// The B fragments (16 x 8, k x n) of columns n0 .. n0 + 7 of an fp32
/// 16 x 16 tile, split as loadSplitA.
template <class Layout>
__device__ __forceinline__ void loadSplitB(const float *tile, Layout at, int n0,
                                           int lane, FragmentB &hi,
                                           FragmentB &lo) {
  const int g = lane >> 2, t = lane & 3;
  const float v[4] = {tile[at(2 * t, n0 + g)], tile[at(2 * t + 1, n0 + g)],
                      tile[at(2 * t + 8, n0 + g)], tile[at(2 * t + 9, n0 + g)]};
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    hi.r[k] = packBf16(v[2 * k], v[2 * k + 1]);
    lo.r[k] = packBf16(v[2 * k] - bf16BitsToFloat(hi.r[k] & 0xffffu),
                       v[2 * k + 1] - bf16BitsToFloat(hi.r[k] >> 16));
  }
}

/// acc[n] += A B for the two 8-column halves of a 16 x 16 x 16 product of
/// fp32 tiles, to about fp32 accuracy: hi hi + hi lo + lo hi (the lo lo
/// term is below 2^-16 of the product).
template <class LayoutA, class LayoutB>
__device__ __forceinline__ void
accumulateSplit(Accumulator (&acc)[2], const float *a, LayoutA atA,
                const float *b, LayoutB atB, int lane) {
  FragmentA aHi, aLo;
  loadSplitA(a, atA, lane, aHi, aLo);
#pragma unroll
  for (int n = 0; n < 2; ++n) {
    FragmentB bHi, bLo;
    loadSplitB(b, atB, 8 * n, lane, bHi, bLo);
    mma16816(acc[n], aHi, bHi);
    mma16816(acc[n], aHi, bLo);
    mma16816(acc[n], aLo, bHi);
  }
}

/// acc[n] += A B as accumulateSplit, in tf32 (mma.m16n8k8, operands rounded
/// to 10 mantissa bits, about 2^-11 relative; M's own bf16 rounding is
/// 2^-9): two depth-8 steps of four products where the split takes six
/// depth-16 products and the conversions of hi and lo. Within a step the
/// mma's depth index t stands for column 2t of A (row 2t of B) and t + 4
/// for column 2t + 1: the same eight terms, A's two values of a row are
/// adjacent (one 8-byte load), and at row stride 68 B's scalar loads of
/// rows 2t and 2t + 1 fall in 32 different banks each (8t + g and 8t + g +
/// 4, mod 32).
template <class LayoutA, class LayoutB>
__device__ __forceinline__ void
accumulateTf32(Accumulator (&acc)[2], const float *a, LayoutA atA,
               const float *b, LayoutB atB, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int step = 0; step < 2; ++step) {
    const int k = 8 * step + 2 * t;
    const float2 top = *reinterpret_cast<const float2 *>(a + atA(g, k));
    const float2 bottom = *reinterpret_cast<const float2 *>(a + atA(g + 8, k));
    FragmentATf32 fa;
    fa.r[0] = toTf32(top.x);
    fa.r[1] = toTf32(bottom.x);
    fa.r[2] = toTf32(top.y);
    fa.r[3] = toTf32(bottom.y);
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      FragmentBTf32 fb;
      fb.r[0] = toTf32(b[atB(k, 8 * n + g)]);
      fb.r[1] = toTf32(b[atB(k + 1, 8 * n + g)]);
      mmaTf32(acc[n], fa, fb);
    }
  }
}

/// acc[n] += A B of 16 x 16 fp32 tiles by tf32 or split-bf16 products.
template <bool kTf32, class LayoutA, class LayoutB>
__device__ __forceinline__ void
accumulateBlock(Accumulator (&acc)[2], const float *a, LayoutA atA,
                const float *b, LayoutB atB, int lane) {
  if constexpr (kTf32)
    accumulateTf32(acc, a, atA, b, atB, lane);
  else
    accumulateSplit(acc, a, atA, b, atB, lane);
}

/// Stores a 16 x 16 accumulator pair into a tile laid out by `at`, times
/// `factor`.
template <class Layout>
__device__ __forceinline__ void storeAccumulators(float *tile, Layout at,
                                                  const Accumulator (&acc)[2],
                                                  float factor, int lane) {
#pragma unroll
  for (int n = 0; n < 2; ++n)
#pragma unroll
    for (int e = 0; e < 4; e += 2) // columns e, e + 1: one 8-byte store
      *reinterpret_cast<float2 *>(
          tile +
          at(accumulatorRow(lane, e), 8 * n + accumulatorColumn(lane, e))) =
          make_float2(factor * acc[n].c[e], factor * acc[n].c[e + 1]);
}

/// exp(G_i - G_j) where j <= i < rows, else 0: the gate of element (i, j)
/// of a chunk's products, evaluated only where it is used (above the
/// diagonal it could overflow).
__device__ __forceinline__ float maskedDecay(float rowGate, float columnGate,
                                             int i, int j, int rows) {
  return j <= i && i < rows ? decay(rowGate - columnGate) : 0.0f;
}

/// The gating of one warp's 16 rows of a chunk's K K^T and Q K^T (the
/// prepare kernel's and the fused producer's): L_ij = beta_i exp(G_i -
/// G_j) (K K^T)_ij for j < i and P_ij = exp(G_i - G_j) (Q K^T)_ij for j <=
/// i, both zero elsewhere and on rows from `rows` on. The products come in
/// the m16n8 accumulator layout of mma.sync's tiles and wgmma's m64nN
/// (`key(n, e)`, `score(n, e)`: row 16 warp + lane / 4 + 8 (e / 2), column
/// firstColumn + 8 n + 2 (lane % 4) + e % 2, for the kTiles 8-column tiles
/// n). exp is evaluated once per element, and only where j <= i (above the
/// diagonal it could overflow). L goes to `lower` (fp32, row stride kLdL)
/// in pairs, except in the tiles wholly above the warp's 16 rows, which
/// are left as they were (invertUnitLowerBlocked keeps its intermediates
/// there); `storeScores(i, j, p_ij, p_ij+1)` takes P's, zeros included.
///
/// G and beta are read into registers first: read through `gate` and
/// `betas` inside the loop, the compiler reloaded them after every store
/// into `lower` (it cannot rule out that they alias), a dependent shared
/// load per element.
template <int kLdL, int kTiles, class KeyAt, class ScoreAt, class StoreScores>
__device__ __forceinline__ void
gateChunkProducts(KeyAt key, ScoreAt score, const float *gate,
                  const float *betas, int rows, int warp, int lane,
                  int firstColumn, float *lower, StoreScores storeScores) {
  const unsigned laneBits = lane; // lane / 4 and lane % 4 without sign fix-ups
  const int row0 = 16 * warp + laneBits / 4,
            column0 = firstColumn + 2 * (laneBits % 4);
  const float rowGate[2] = {gate[row0], gate[row0 + 8]};
  const float rowBeta[2] = {betas[row0], betas[row0 + 8]};
  float2 columnGate[kTiles];
#pragma unroll
  for (int n = 0; n < kTiles; ++n)
    columnGate[n] = *reinterpret_cast<const float2 *>(gate + 8 * n + column0);
#pragma unroll
  for (int n = 0; n < kTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      const int i = row0 + 8 * (e / 2), j = 8 * n + column0;
      if (firstColumn + 8 * n >= 16 * warp + 16) {
        // A tile wholly above the warp's 16 rows (a warp-uniform branch):
        // no exps, and L's zeros are not stored (those 16 x 16 blocks hold
        // the inverse's intermediates, and it never reads L there; 1.5-2.5%
        // of the forward, H200). P's are, as 0 x (Q K^T)_ij
        // like the masked elements below (-0 where the product is
        // negative: the bits the exps gave).
        storeScores(i, j, 0.0f * score(n, e), 0.0f * score(n, e + 1));
        continue;
      }
      const float columns[2] = {columnGate[n].x, columnGate[n].y};
      float d[2], l[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        d[half] = maskedDecay(rowGate[e / 2], columns[half], i, j + half, rows);
        l[half] =
            j + half < i ? rowBeta[e / 2] * d[half] * key(n, e + half) : 0.0f;
      }
      *reinterpret_cast<float2 *>(lower + i * kLdL + j) =
          make_float2(l[0], l[1]);
      storeScores(i, j, d[0] * score(n, e), d[1] * score(n, e + 1));
    }
}

/// gateChunkProducts' P alone, for the wgmma scan that computes Q K^T
/// itself: P_ij = exp(G_i - G_j) (Q K^T)_ij for j <= i < rows, zero
/// elsewhere, in the same layout and through the same `storeScores`.
template <int kTiles, class ScoreAt, class StoreScores>
__device__ __forceinline__ void
gateChunkScores(ScoreAt score, const float *gate, int rows, int warp, int lane,
                int firstColumn, StoreScores storeScores) {
  const unsigned laneBits = lane;
  const int row0 = 16 * warp + laneBits / 4,
            column0 = firstColumn + 2 * (laneBits % 4);
  const float rowGate[2] = {gate[row0], gate[row0 + 8]};
#pragma unroll
  for (int n = 0; n < kTiles; ++n) {
    const float2 columns =
        *reinterpret_cast<const float2 *>(gate + 8 * n + column0);
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      const int i = row0 + 8 * (e / 2), j = 8 * n + column0;
      storeScores(i, j,
                  maskedDecay(rowGate[e / 2], columns.x, i, j, rows) *
                      score(n, e),
                  maskedDecay(rowGate[e / 2], columns.y, i, j + 1, rows) *
                      score(n, e + 1));
    }
  }
}

/// X = (I + L)^-1 in place for the kHeads 64 x 64 strictly lower L of the
/// block (fp32, row stride kLdL, head h at lower + h * kLowerSize; zero on
/// and above the diagonal). By 16 x 16 blocks: the diagonal blocks D_I =
/// (I + L_II)^-1 by fp32 forward substitution (one thread per column of a
/// block: 16 rows instead of 64), then by doubling, [[A, 0], [C, B]]^-1 =
/// [[A^-1, 0], [-B^-1 C A^-1, B^-1]], from 16 to 32 to 64 rows, on the
/// tensor cores in tf32 (kTf32, accumulateTf32) or split bf16
/// (accumulateSplit): four barriers and six dependent products (block rows
/// one at a time took eight and nine).
/// The D blocks and the 16 x 16 sums between the steps go in the six
/// blocks above the diagonal, which L leaves unused: no scratch memory, and
/// at row stride kLdL the B fragments' scalar loads are free of the 4-way
/// bank conflicts a plain 16 x 16 scratch had. (The A fragments' and the
/// accumulators' float2 keep a two-way conflict within each half-warp at
/// any such stride; made conflict-free, the kernel was no faster: a gtest
/// counts the wavefronts, docs/performance.md has the measurement.)
/// **Above X's diagonal blocks the result holds
/// those values, not zeros**: readers of X take its lower triangle only.
/// Every thread of the block calls it (it has barriers); the products of
/// head h go to its kThreads / 32 / kHeads warps. `tid` is the thread's
/// index among the kThreads that call it and `barrier` their barrier (the
/// whole block's in the prepare kernel, a warpgroup's in the fused
/// forward). kDiagonalFromRegisters: the D blocks go into X from the
/// solving threads' registers (true) or are copied from their upper blocks
/// (false, for callers short of registers).
template <int kHeads, int kLdL, int kLowerSize, int kThreads,
          bool kDiagonalFromRegisters, bool kTf32, class Barrier>
__device__ __forceinline__ void invertUnitLowerBlocked(float *lower, int tid,
                                                       Barrier barrier) {
  const unsigned t = tid; // indices without signed division's fix-ups
  const int lane = t % 32;
  // Diagonal blocks: thread (h, I, column) solves one column of D_I.
  const bool solves = tid < 64 * kHeads;
  // (Head (t / 64) % kHeads: in range for the threads that do not solve.)
  float *diagonalBlock = lower + (t / 64) % kHeads * kLowerSize +
                         16 * ((t % 64) / 16) * (kLdL + 1);
  const int column = t % 16;
  // Block (i, j) of head h, and the upper block of slot 0 .. 5: (0, 1),
  // (0, 2), (0, 3), (1, 2), (1, 3), (2, 3). D_I goes to slot I: the two
  // blocks a warp solves lie in opposite bank halves (16 j apart mod 32),
  // so their row stores do not conflict.
  auto blockOf = [&](int h, int i, int j) {
    return lower + h * kLowerSize + 16 * i * kLdL + 16 * j;
  };
  auto upper = [&](int h, int slot) {
    const int i = slot < 3 ? 0 : slot < 5 ? 1 : 2;
    return blockOf(h, i, slot < 3 ? slot + 1 : slot < 5 ? slot - 1 : 3);
  };
  float x[16];
  if (solves) {
    const float *l = diagonalBlock;
    // Row r's L in 16-byte broadcasts (a quarter of the loads; the terms
    // in the same order, j = 0 .. r - 1).
    static_assert(kLdL % 4 == 0, "the inverse reads rows of L as float4");
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      float sum = r == column ? 1.0f : 0.0f;
#pragma unroll
      for (int j4 = 0; j4 < r; j4 += 4) {
        const float4 q = *reinterpret_cast<const float4 *>(l + r * kLdL + j4);
        const float row[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int k = 0; k < 4 && j4 + k < r; ++k)
          sum -= row[k] * x[j4 + k];
      }
      x[r] = sum;
    }
    float *d = upper((t / 64) % kHeads, (t % 64) / 16);
#pragma unroll
    for (int r = 0; r < 16; ++r)
      d[r * kLdL + column] = x[r];
  }
  barrier();
  // X_II = D_I (L_II is no longer read), while the 16 -> 32 step below
  // reads the D blocks from their upper blocks: one barrier for both.
  if constexpr (kDiagonalFromRegisters) {
    // From the registers that solved it: a warp's two blocks are 16 banks
    // apart, no conflicts. (The copy from a scratch, as below, had two-way
    // conflicts: 3% of the prepare kernel's samples; this took the kernel
    // from 0.255 to 0.237 ms together with two other changes. A fused
    // producer, with fewer registers, spilled x across the barrier.)
    if (solves) {
#pragma unroll
      for (int r = 0; r < 16; ++r)
        diagonalBlock[r * kLdL + column] = x[r];
    }
  } else {
    for (unsigned i = t; i < kHeads * 4 * 256; i += kThreads) {
      const int h = i / 1024, block = (i % 1024) / 256, r = (i % 256) / 16,
                c = i % 16;
      blockOf(h, block, block)[r * kLdL + c] = upper(h, block)[r * kLdL + c];
    }
  }
  // The warps of each head (two with two heads in 128 threads, four with
  // one), and this warp's head and rank among them.
  constexpr int kHeadWarps = kThreads / 32 / kHeads;
  static_assert(kHeadWarps >= 2, "the inverse needs two warps per head");
  const int h = t / (32 * kHeadWarps), rank = (t / 32) % kHeadWarps;
  auto block = [&](int i, int j) { return blockOf(h, i, j); };
  const RowMajorTile rowMajor{kLdL};
  // 16 -> 32: X_10 = -D_1 (L_10 D_0) and X_32 = -D_3 (L_32 D_2), one warp
  // each, over L_10 and L_32 (read only by that warp).
  if (rank < 2) {
    const int low = 2 * rank;
    Accumulator acc[2];
    acc[0].fill(0.0f);
    acc[1].fill(0.0f);
    float *sum = upper(h, 4 + rank); // slots 4 and 5
    accumulateBlock<kTf32>(acc, block(low + 1, low), rowMajor, upper(h, low),
                           rowMajor, lane);
    storeAccumulators(sum, rowMajor, acc, 1.0f, lane);
    __syncwarp();
    acc[0].fill(0.0f);
    acc[1].fill(0.0f);
    accumulateBlock<kTf32>(acc, upper(h, low + 1), rowMajor, sum, rowMajor,
                           lane);
    storeAccumulators(block(low + 1, low), rowMajor, acc, -1.0f, lane);
  }
  barrier();
  // 32 -> 64: with X_lo = [[D_0, 0], [X_10, D_1]] and X_hi likewise, the
  // lower-left 32 x 32 block is -X_hi (L_hi,lo X_lo). First T_IJ = sum_{J
  // <= K <= 1} L_IK X_KJ for I = 2, 3 and J = 0, 1 (tile 2 (I - 2) + J, in
  // slot tile: the D blocks are no longer read)... Tiles with j = 0 take
  // two products, those with j = 1 one: with two warps per head, tiles 0
  // and 3 go to one and 1 and 2 to the other (n ^ n / 2), three products
  // each instead of four and two.
  for (int n = rank; n < 4; n += kHeadWarps) {
    const int tile = kHeadWarps == 2 ? n ^ (n >> 1) : n;
    const int i = 2 + tile / 2, j = tile % 2;
    Accumulator acc[2];
    acc[0].fill(0.0f);
    acc[1].fill(0.0f);
    for (int k = j; k < 2; ++k)
      accumulateBlock<kTf32>(acc, block(i, k), rowMajor, block(k, j), rowMajor,
                             lane);
    storeAccumulators(upper(h, tile), rowMajor, acc, 1.0f, lane);
  }
  barrier(); // every L_hi,lo read; the sums are whole
  // ... then X_IJ = -sum_{2 <= K <= I} X_IK T_KJ over L_IJ.
  for (int tile = rank; tile < 4; tile += kHeadWarps) {
    const int i = 2 + tile / 2, j = tile % 2;
    Accumulator acc[2];
    acc[0].fill(0.0f);
    acc[1].fill(0.0f);
    for (int k = 2; k <= i; ++k)
      accumulateBlock<kTf32>(acc, block(i, k), rowMajor,
                             upper(h, 2 * (k - 2) + j), rowMajor, lane);
    storeAccumulators(block(i, j), rowMajor, acc, -1.0f, lane);
  }
  barrier();
}

/// The prepare kernel's Q and K and their products, the mma.sync way (any
/// target from sm_80): cp.async into rows padded by 16 bytes, then K K^T
/// and Q K^T through ldmatrix fragments, each warp its 16 rows. The
/// interface prepareChunk expects of its `Operands` (the TMA and wgmma
/// counterpart is PrepareOperandsTma, delta_rule_wgmma.cuh):
/// - issue(): start the copies of the chunk's `rows` rows (every thread
///   calls it; rows from `rows` on must read as zero);
/// - beforeBarrier() / afterBarrier(): around the block barrier that
///   follows, make the copies visible to every thread;
/// - products(): K K^T (and Q K^T with kStoreScores) for this warp's rows;
/// - key(n, e), score(n, e): element e of 8-column tile n of them, in
///   mma.sync's m16n8 accumulator layout.
template <class Config, bool kStoreScores> struct PrepareOperandsMma {
  using S = DeltaRuleShape<Config>;
  using Element = typename Config::Element;
  Element *qs, *ks;
  Accumulator kk[8], qk[8];

  __device__ __forceinline__ explicit PrepareOperandsMma(char *base)
      : qs(reinterpret_cast<Element *>(base + S::kPrepareQ)),
        ks(reinterpret_cast<Element *>(base + S::kPrepareK)) {}
  __device__ __forceinline__ void issue(const DeltaRuleArgs<Config> &args,
                                        int64_t row0, int keyHead, int rows) {
    const int64_t keyRow = static_cast<int64_t>(S::kH) * S::kK;
    if (kStoreScores)
      stageRows<S::kK, S::kThreads>(
          qs, S::kLdK, args.q + row0 * keyRow + keyHead * S::kK, keyRow, rows);
    stageRows<S::kK, S::kThreads>(
        ks, S::kLdK, args.k + row0 * keyRow + keyHead * S::kK, keyRow, rows);
    commitAsyncCopies();
  }
  __device__ __forceinline__ void beforeBarrier() { waitAsyncCopies<0>(); }
  __device__ __forceinline__ void afterBarrier(int, int) {}
  __device__ __forceinline__ void products(int warp, int lane) {
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      kk[n].fill(0.0f);
      qk[n].fill(0.0f);
    }
#pragma unroll
    for (int step = 0; step < S::kK / 16; ++step) {
      const FragmentA ak =
          loadA(ks + 16 * warp * S::kLdK + 16 * step, S::kLdK, lane);
      FragmentB b[8];
      loadBTransposed(ks + 16 * step, S::kLdK, lane, b);
#pragma unroll
      for (int n = 0; n < 8; ++n)
        mma16816(kk[n], ak, b[n]);
      if (kStoreScores) {
        const FragmentA aq =
            loadA(qs + 16 * warp * S::kLdK + 16 * step, S::kLdK, lane);
#pragma unroll
        for (int n = 0; n < 8; ++n)
          mma16816(qk[n], aq, b[n]);
      }
    }
  }
  __device__ __forceinline__ float key(int n, int e) const {
    return kk[n].c[e];
  }
  __device__ __forceinline__ float score(int n, int e) const {
    return qk[n].c[e];
  }
};

/// The prepare kernel's work for the block's chunk, with Q, K and their
/// products from `operands` (PrepareOperandsMma above, or the TMA and wgmma
/// PrepareOperandsTma) and the shared memory at `base` (DeltaRuleShape's
/// prepare layout). kStoreScores false: no Q K^T and no P (the wgmma scan
/// computes P itself, `kWgmmaScanScores`); Q is not read, and the
/// workspace's P is left alone.
template <class Config, bool kStoreScores, class Operands>
__device__ __forceinline__ void prepareChunk(const DeltaRuleArgs<Config> &args,
                                             Operands &operands, char *base) {
  using S = DeltaRuleShape<Config>;
  using Element = typename Config::Element;
  constexpr int kC = S::kChunk, kHeads = S::kPrepareHeads;
  const PackingView &packing = args.packing;
  if (packing.numSeqs <= 0 || packingInvalid(args))
    return;
  const int64_t slot = blockIdx.x;
  const int head0 = blockIdx.y * kHeads; // value heads head0 .. + kHeads - 1
  const int32_t seq = slotSequence(packing, slot);
  const int64_t chunk = slot - firstSlot(packing, seq);
  const int32_t length = packing.length(seq);
  if (chunk * kC >= length)
    return; // a slot no chunk uses (the slot count is an upper bound)
  const int64_t remaining = length - chunk * kC;
  const int rows = remaining < kC ? static_cast<int>(remaining) : kC;
  const int64_t row0 = packing.begin(seq) + chunk * kC;
  const int keyHead = head0 / (S::kHV / S::kH); // shared by the kHeads heads
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  // Per value head h of the block: lower + h * kLowerSize, gate + h * kC, ...
  float *lower = reinterpret_cast<float *>(base + S::kPrepareL);
  float *gate = reinterpret_cast<float *>(base + S::kPrepareG);
  float *betas = reinterpret_cast<float *>(base + S::kPrepareBeta);
  Element *tile = reinterpret_cast<Element *>(base + S::kPrepareTile);
  constexpr int kLowerSize = kC * S::kLdL, kTileSize = kC * S::kLdC;

  // Rows past the end: g = 0 keeps G at G_last, beta = 0 zeroes M's column.
  // Thread tid holds g of row tid % 64 of head tid / 64: a head's rows are
  // two warps. Loaded before Q and K's copies are issued, which hide their
  // latency (issued after them, the wait for beta was 7% of the kernel's
  // warp samples).
  float cumulative = 0.0f, beta = 0.0f;
  if (tid < kC * kHeads) {
    const int r = tid % kC, h = tid / kC;
    const int64_t at = (row0 + r) * S::kHV + head0 + h;
    cumulative = r < rows ? args.g[at] : 0.0f;
    beta = r < rows ? args.beta[at] : 0.0f;
  }
  operands.issue(args, row0, keyHead, rows);
  if (tid < kC * kHeads)
    betas[tid] = beta;
  // The cumsum: an inclusive scan within each warp (five shuffles, a
  // fixed order, so deterministic), then the second warp of a head adds the
  // first one's total. (Was 64 serial adds from shared memory per row: 8%
  // of the kernel's warp samples.)
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const float before = __shfl_up_sync(0xffffffffu, cumulative, offset);
    if (lane >= offset)
      cumulative += before;
  }
  float *warpTotals = reinterpret_cast<float *>(base + S::kPrepareWarpTotals);
  if (lane == 31)
    warpTotals[warp] = cumulative;
  operands.beforeBarrier();
  __syncthreads();
  if (warp % 2 == 1)
    cumulative += warpTotals[warp - 1];
  if (tid < kC * kHeads)
    gate[tid] = cumulative;
  operands.afterBarrier(rows, tid);
  __syncthreads();

  // K K^T and Q K^T for this warp's 16 rows, once for the kHeads value
  // heads that share the key head.
  operands.products(warp, lane);
  if (S::kPrepareSharedLower)
    __syncthreads(); // every warp is done with Q and K: L overwrites them
  // Only split chains read the transition bounds (3% of this kernel).
  const bool bounds = args.segmentChunks > 0;
  // |k_i|^2 of this thread's rows 16 warp + lane / 4 + 8 half, from the
  // diagonal of K K^T: element 2 half + b of 8-column tile 2 warp + half,
  // where b = lane / 4 - 2 (lane % 4) is 0 or 1 (8 lanes of the warp; the
  // others keep 0, whose log expansion is 0). Selects by the warp (uniform)
  // with indices known at compile time, so kk stays in registers. (With a
  // compare per accumulator element, 32 per thread, and the shuffles
  // below always run, the bounds cost the kernel about 3%, now 0-2%:
  // docs/performance.md.)
  static_assert(S::kThreads == 128, "the bounds take 16 rows per warp");
  float keyNorm2[2] = {0.0f, 0.0f};
  if (bounds) {
    const int diagonal = lane / 4 - 2 * (lane % 4);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float norm2 = 0.0f;
#pragma unroll
      for (int w = 0; w < 4; ++w)
        if (warp == w)
          norm2 = diagonal == 0 ? operands.key(2 * w + half, 2 * half)
                                : operands.key(2 * w + half, 2 * half + 1);
      keyNorm2[half] = diagonal == 0 || diagonal == 1 ? norm2 : 0.0f;
    }
  }
  // Gates, beta and masks per value head.
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    gateChunkProducts<S::kLdL, 8>(
        [&](int n, int e) { return operands.key(n, e); },
        [&](int n, int e) { return operands.score(n, e); }, gate + h * kC,
        betas + h * kC, rows, warp, lane, 0, lower + h * kLowerSize,
        [&](int i, int j, float p0, float p1) {
          if (kStoreScores)
            *reinterpret_cast<uint32_t *>(tile + h * kTileSize + i * S::kLdC +
                                          j) = packBf16(p0, p1);
        });
    // The log expansions of the warp's 16 rows, summed in a fixed order
    // (deterministic). Rows past the end have k = 0 and beta = 0.
    if (!bounds)
      continue;
    const int row = 16 * warp + lane / 4;
    float expansion = logExpansion(betas[h * kC + row] * keyNorm2[0]) +
                      logExpansion(betas[h * kC + row + 8] * keyNorm2[1]);
    // Rows expand only where beta |k|^2 > 2 (never for the layer's
    // l2-normalised keys and sigmoid betas): the sum is 0 without shuffles.
    if (__any_sync(0xffffffffu, expansion != 0.0f)) {
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2)
        expansion += __shfl_xor_sync(0xffffffffu, expansion, offset);
    }
    if (lane == 0)
      reinterpret_cast<float *>(base + S::kPrepareExpansion)[4 * h + warp] =
          expansion;
  }
  __syncthreads();
  const int64_t tileIndex0 = slot * S::kHV + head0;
  auto storeTiles = [&](Element *to) {
    for (int i = tid; i < kHeads * kC * kC / 8; i += S::kThreads) {
      const int h = i / (kC * kC / 8), within = i % (kC * kC / 8);
      const int row = within / (kC / 8), column = (within % (kC / 8)) * 8;
      *reinterpret_cast<uint4 *>(to + (tileIndex0 + h) * kC * kC + row * kC +
                                 column) =
          *reinterpret_cast<const uint4 *>(tile + h * kTileSize +
                                           row * S::kLdC + column);
    }
  };
  if (kStoreScores)
    storeTiles(args.workspace.scores);
  if (tid < kC * kHeads)
    args.workspace.gateCumsum[tileIndex0 * kC + tid] = gate[tid];
  if (bounds && tid < kHeads) {
    // log of the bound on the chunk's transition's norm: G_last plus the
    // rows' log expansions (the transition is the product of the rows'
    // exp(g_t) (I - beta_t k_t k_t^T)).
    const float *sums =
        reinterpret_cast<const float *>(base + S::kPrepareExpansion) + 4 * tid;
    args.workspace.transitionBound[tileIndex0 + tid] =
        gate[tid * kC + kC - 1] + ((sums[0] + sums[1]) + (sums[2] + sums[3]));
  }

  // M = X diag(beta) with X = (I + L)^-1: rows and columns past the end
  // come out zero (L is zero there, X is the identity, beta is zero).
  if (PrepareBlockedInverseOf<Config>::value) {
    // X by blocks, in place over L (its upper blocks hold the inverse's
    // intermediates: M takes the lower triangle).
    invertUnitLowerBlocked<kHeads, S::kLdL, kLowerSize, S::kThreads, true,
                           PrepareInverseTf32Of<Config>::value>(
        lower, tid, [] { __syncthreads(); });
    {
      // Columns c, c + 1 of every kRowGroups-th row per thread: a warp
      // reads a whole row of X and writes M's row to the workspace, 128
      // contiguous bytes per instruction, two values per thread (one per
      // thread took twice the loads, conversions and stores). Staged in
      // shared memory and copied out 16 bytes at a time, M cost two more
      // shared accesses per value and a barrier.
      constexpr int kRowGroups = S::kThreads / (32 * kHeads);
      const int c = 2 * (tid % 32), h = (tid / 32) % kHeads,
                group = tid / (32 * kHeads);
      const float b0 = betas[h * kC + c], b1 = betas[h * kC + c + 1];
      Element *transform =
          args.workspace.transform + (tileIndex0 + h) * kC * kC + c;
      Element *inverse =
          args.workspace.inverse
              ? args.workspace.inverse + (tileIndex0 + h) * kC * kC + c
              : nullptr;
#pragma unroll 8 // loads in flight: the loop waits on their latency
      for (int i = group; i < kC; i += kRowGroups) {
        // Only where X's lower triangle has values: in rows 0 .. 31 the
        // half-warp of columns 32 .. 63 loads nothing, one shared-memory
        // wavefront of the row's two (the kernel's L1 is its busiest unit;
        // bits equal, and the forward 0.0-0.2% faster on every default row
        // in three rounds on the H200, at the edge of the noise:
        // docs/performance.md).
        float2 x = make_float2(0.0f, 0.0f);
        if (c <= i)
          x = *reinterpret_cast<const float2 *>(lower + h * kLowerSize +
                                                i * S::kLdL + c);
        x.y = c < i ? x.y : 0.0f;
        *reinterpret_cast<uint32_t *>(transform + i * kC) =
            packBf16(x.x * b0, x.y * b1);
        if (inverse)
          *reinterpret_cast<uint32_t *>(inverse + i * kC) = packBf16(x.x, x.y);
      }
    }
  } else if (tid < kC * kHeads) {
    // (I + L) X = I by forward substitution, one thread per column c of X
    // and value head (all 128 threads busy when two heads share the
    // block); the rows of L are broadcasts. Fully unrolled so that X stays
    // in registers. Each row reads L in 16-byte broadcasts into four
    // independent partial sums: a quarter of the shared-memory
    // instructions and of the dependent FMA chain of a scalar loop.
    const int c = tid % kC, h = tid / kC;
    const float *hLower = lower + h * kLowerSize;
    float x[kC];
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      const float *row = hLower + i * S::kLdL;
      float part[4] = {i == c ? 1.0f : 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int j = 0; j + 4 <= i; j += 4) {
        const float4 l = *reinterpret_cast<const float4 *>(row + j);
        part[0] -= l.x * x[j];
        part[1] -= l.y * x[j + 1];
        part[2] -= l.z * x[j + 2];
        part[3] -= l.w * x[j + 3];
      }
#pragma unroll
      for (int j = i & ~3; j < i; ++j)
        part[j & 3] -= row[j] * x[j];
      x[i] = (part[0] + part[1]) + (part[2] + part[3]);
    }
    const float b = betas[h * kC + c];
    // M's column c (the 64 threads of a head write 128 bytes per row).
    Element *transform = args.workspace.transform + (tileIndex0 + h) * kC * kC;
#pragma unroll
    for (int i = 0; i < kC; ++i)
      transform[i * kC + c] = __float2bfloat16_rn(x[i] * b);
    if (args.workspace.inverse) {
      // The backward's N: column c of every row; the 64 threads of a head
      // write 128 consecutive bytes per row.
      Element *inverse = args.workspace.inverse + (tileIndex0 + h) * kC * kC;
#pragma unroll
      for (int i = 0; i < kC; ++i)
        inverse[i * kC + c] = __float2bfloat16_rn(x[i]);
    }
  }
}

/// The prepare kernel of the mma.sync path (any target from sm_80; the
/// backward's forward pass runs it too).
template <class Config, bool kStoreScores = true>
__global__ void __launch_bounds__(
    DeltaRuleShape<Config>::kThreads,
    kStoreScores ? DeltaRuleShape<Config>::kPrepareBlocksPerSM
                 : DeltaRuleShape<Config>::kPrepareBlocksPerSMWithoutScores)
    deltaChunkPrepareKernel(DeltaRuleArgs<Config> args) {
  extern __shared__ uint4 shared[];
  char *base = reinterpret_cast<char *>(shared);
  PrepareOperandsMma<Config, kStoreScores> operands(base);
  prepareChunk<Config, kStoreScores>(args, operands, base);
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_DELTA_RULE_PREPARE_CUH
