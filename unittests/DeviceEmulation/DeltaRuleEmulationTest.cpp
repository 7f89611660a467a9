//===- DeltaRuleEmulationTest.cpp - the delta-rule kernels on host threads ===//
//
// Three layers, each checked against something independent of the layer
// above it:
// - the mma.sync fragment helpers of mma.cuh (ldmatrix and plain loads,
//   packing, accumulator coordinates) against a plain matrix product,
//   through the emulator's warp-collective mma and ldmatrix, which follow
//   the PTX ISA layouts;
// - the chunked algebra the kernels implement (fused WY form), as a float64
//   model, against the token-by-token recurrence of docs/spec.md;
// - the real kernel bodies of delta_rule.cuh (K = V = 64 and one K = V =
//   128 case) on packs with lengths 0, 1, 63, 64, 65, 130, alignment
//   padding, GQA, with and without initial and final states, against the
//   float64 recurrence on the same bf16 inputs (relative RMS <= 5e-3), and
//   packed results against each sequence run alone, bit for bit; and NaN
//   everywhere when the packing status records a violation.
//
//===----------------------------------------------------------------------===//

#include "DeltaRuleProblem.h"
#include "DeviceEmulator.h"

#include "gdn/device/delta_rule.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace gdn::device {
extern uint4 shared[]; // the emulated dynamic shared memory (DeviceEmulator)
} // namespace gdn::device

using namespace gdn::device;
using namespace gdn::device::testing;

namespace {

using bf16 = __nv_bfloat16;


//===----------------------------------------------------------------------===//
// mma fragments
//===----------------------------------------------------------------------===//

/// One warp multiplies A (16 x 16) and A' (the transpose of a stored
/// 16 x 16 Kt) by two B tiles (16 x 8 each, stored transposed) through the
/// fragment helpers, loading from shared memory with ldmatrix or with plain
/// loads; every product must match a plain one.
template <bool kLdmatrix> void checkFragmentHelpers() {
  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  constexpr int kLd = 24; // 48-byte rows: 16-byte aligned, as ldmatrix needs
  std::vector<bf16> a(16 * kLd), bT(16 * kLd), kt(16 * kLd);
  for (auto *m : {&a, &bT, &kt})
    for (auto &x : *m)
      x = __float2bfloat16_rn(normal(random));
  float init[16][16], product[16][16], productT[16][16];
  for (auto &row : init)
    for (float &x : row)
      x = normal(random);
  emulation::runGrid(dim3{1, 1, 1}, 32, [&] {
    // The operands in (emulated) shared memory: ldmatrix reads only there.
    bf16 *base = reinterpret_cast<bf16 *>(shared);
    bf16 *sa = base, *sb = base + 16 * kLd, *sk = base + 32 * kLd;
    if (threadIdx.x == 0) {
      std::memcpy(sa, a.data(), a.size() * 2);
      std::memcpy(sb, bT.data(), bT.size() * 2);
      std::memcpy(sk, kt.data(), kt.size() * 2);
    }
    __syncthreads();
    const int lane = threadIdx.x;
    FragmentB b[2];
    loadBTransposed<2, kLdmatrix>(sb, kLd, lane, b);
    const FragmentA fa = loadA<kLdmatrix>(sa, kLd, lane);
    const FragmentA ft = loadATransposed<kLdmatrix>(sk, kLd, lane);
    for (int n = 0; n < 2; ++n) {
      Accumulator d, dT;
      for (int e = 0; e < 4; ++e)
        d.c[e] = dT.c[e] =
            init[accumulatorRow(lane, e)][8 * n + accumulatorColumn(lane, e)];
      mma16816(d, fa, b[n]);
      mma16816(dT, ft, b[n]);
      for (int e = 0; e < 4; ++e) {
        const int row = accumulatorRow(lane, e);
        const int column = 8 * n + accumulatorColumn(lane, e);
        product[row][column] = d.c[e];
        productT[row][column] = dT.c[e];
      }
    }
  });
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double want = init[i][j], wantT = init[i][j];
      for (int k = 0; k < 16; ++k) {
        const double b = __bfloat162float(bT[j * kLd + k]);
        want += __bfloat162float(a[i * kLd + k]) * b;
        wantT += __bfloat162float(kt[k * kLd + i]) * b;
      }
      EXPECT_NEAR(product[i][j], want, 1e-4) << i << "," << j;
      EXPECT_NEAR(productT[i][j], wantT, 1e-4) << i << "," << j;
    }
}

TEST(DeltaRuleEmulation, MmaFragmentHelpers) {
  checkFragmentHelpers<true>();
  checkFragmentHelpers<false>();
  // packBf16 puts the lower index in the low half.
  const uint32_t packed = packBf16(1.0f, -2.0f);
  EXPECT_EQ(packed & 0xffffu, 0x3f80u);
  EXPECT_EQ(packed >> 16, 0xc000u);
}

//===----------------------------------------------------------------------===//
// Inputs and the float64 recurrence
//===----------------------------------------------------------------------===//

/// The chunked form the kernels implement, in float64 (one sequence, one
/// head, the sequence's rows given by pointers).
void chunkedModel(const Problem &p, int seq, int head, double scale,
                  std::vector<double> &o, std::vector<double> &s) {
  const int kh = head / (p.hv / p.h), dk = p.dk, dv = p.dv;
  const size_t stateAt = (size_t(seq) * p.hv + head) * dk * dv;
  s.assign(p.state0.begin() + stateAt, p.state0.begin() + stateAt + dk * dv);
  o.assign(size_t(p.lengths[seq]) * dv, 0.0);
  for (int c0 = 0; c0 < p.lengths[seq]; c0 += 64) {
    const int rows = std::min(64, p.lengths[seq] - c0);
    auto at = [&](const std::vector<float> &x, int r, int heads, int head_,
                  int dim, int i) {
      return double(
          x[((size_t(p.cuPadded[seq] + c0 + r)) * heads + head_) * dim + i]);
    };
    std::vector<double> G(rows), beta(rows);
    double sum = 0;
    for (int r = 0; r < rows; ++r) {
      sum += at(p.g, r, p.hv, head, 1, 0);
      G[r] = sum;
      beta[r] = at(p.beta, r, p.hv, head, 1, 0);
    }
    auto dot = [&](const std::vector<float> &a, int r,
                   const std::vector<float> &b, int c) {
      double x = 0;
      for (int i = 0; i < dk; ++i)
        x += at(a, r, p.h, kh, dk, i) * at(b, c, p.h, kh, dk, i);
      return x;
    };
    // M = (I + L)^-1 diag(beta) by forward substitution.
    std::vector<double> m(size_t(rows) * rows, 0.0);
    for (int c = 0; c < rows; ++c)
      for (int i = 0; i < rows; ++i) {
        double x = i == c ? 1.0 : 0.0;
        for (int j = 0; j < i; ++j)
          x -= beta[i] * std::exp(G[i] - G[j]) * dot(p.k, i, p.k, j) *
               m[size_t(j) * rows + c];
        m[size_t(i) * rows + c] = x;
      }
    // R = V - diag(exp G) K S; Vnew = M diag(beta) R.
    std::vector<double> r(size_t(rows) * dv), fresh(size_t(rows) * dv, 0.0);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < dv; ++j) {
        double ks = 0;
        for (int a = 0; a < dk; ++a)
          ks += at(p.k, i, p.h, kh, dk, a) * s[size_t(a) * dv + j];
        r[size_t(i) * dv + j] =
            at(p.v, i, p.hv, head, dv, j) - std::exp(G[i]) * ks;
      }
    for (int i = 0; i < rows; ++i)
      for (int c = 0; c < rows; ++c)
        for (int j = 0; j < dv; ++j)
          fresh[size_t(i) * dv + j] +=
              m[size_t(i) * rows + c] * beta[c] * r[size_t(c) * dv + j];
    // O = scale (diag(exp G) Q S + P Vnew).
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < dv; ++j) {
        double qs = 0, pv = 0;
        for (int a = 0; a < dk; ++a)
          qs += at(p.q, i, p.h, kh, dk, a) * s[size_t(a) * dv + j];
        for (int c = 0; c <= i; ++c)
          pv += std::exp(G[i] - G[c]) * dot(p.q, i, p.k, c) *
                fresh[size_t(c) * dv + j];
        o[size_t(c0 + i) * dv + j] = scale * (std::exp(G[i]) * qs + pv);
      }
    // S = exp(G_last) S + K^T diag(exp(G_last - G)) Vnew.
    const double last = G[rows - 1];
    for (double &x : s)
      x *= std::exp(last);
    for (int i = 0; i < rows; ++i)
      for (int a = 0; a < dk; ++a)
        for (int j = 0; j < dv; ++j)
          s[size_t(a) * dv + j] += at(p.k, i, p.h, kh, dk, a) *
                                   std::exp(last - G[i]) *
                                   fresh[size_t(i) * dv + j];
  }
}

/// The wavefronts one warp-wide shared access takes (each lane's `words`
/// consecutive 4-byte words from `offset(lane)`; lanes that read the same
/// word share it). The hardware serves 128 bytes of requests at a time:
/// 4-byte accesses by the whole warp, 8-byte ones by half-warps, 16-byte
/// ones by quarter-warps; each group takes the most words any bank serves
/// in it. (Counted over the whole warp, 8-byte accesses looked
/// conflict-free where ncu measured two-way conflicts.)
template <class Offset> int wavefronts(Offset offset, int words) {
  const int groupLanes = 32 / words;
  int total = 0;
  for (int first = 0; first < 32; first += groupLanes) {
    std::vector<std::vector<int>> bank(32);
    for (int lane = first; lane < first + groupLanes; ++lane)
      for (int w = 0; w < words; ++w) {
        const int word = offset(lane) + w;
        auto &hits = bank[word % 32];
        if (std::find(hits.begin(), hits.end(), word) == hits.end())
          hits.push_back(word);
      }
    size_t most = 0;
    for (const auto &hits : bank)
      most = std::max(most, hits.size());
    total += int(most);
  }
  return total;
}

TEST(DeltaRuleEmulation, ChunkedAlgebraMatchesRecurrence) {
  std::mt19937 random(11);
  Problem p = makeProblem(1, 2, 16, 8, {1, 63, 64, 65, 150}, {2, 0, 1, 0, 3},
                          true, random);
  std::vector<double> o, final;
  recurrence(p, 0.25, o, final);
  double worst = 0;
  for (int seq = 0; seq < int(p.lengths.size()); ++seq)
    for (int head = 0; head < p.hv; ++head) {
      std::vector<double> co, cs;
      chunkedModel(p, seq, head, 0.25, co, cs);
      for (int t = 0; t < p.lengths[seq]; ++t)
        for (int j = 0; j < p.dv; ++j)
          worst = std::max(
              worst,
              std::fabs(
                  co[size_t(t) * p.dv + j] -
                  o[((size_t(p.cuPadded[seq] + t)) * p.hv + head) * p.dv + j]));
      const size_t at = (size_t(seq) * p.hv + head) * p.dk * p.dv;
      for (size_t i = 0; i < cs.size(); ++i)
        worst = std::max(worst, std::fabs(cs[i] - final[at + i]));
    }
  EXPECT_LT(worst, 1e-10);
}

//===----------------------------------------------------------------------===//
// The kernels
//===----------------------------------------------------------------------===//

template <int H, int HV, int D, int Vt, bool Initial, bool Final, int DV = D>
struct Config {
  using Element = __nv_bfloat16;
  static constexpr int kKeyHeads = H, kValueHeads = HV, kHeadDimK = D,
                       kHeadDimV = DV, kValueTile = Vt;
  static constexpr bool kHasInitialState = Initial, kHasFinalState = Final;
};
/// The scan's optional knobs: one stage, and a column-group count other
/// than the default.
template <int H, int HV, int D, int Vt, bool Initial, bool Final, int Groups>
struct SingleStageConfig : Config<H, HV, D, Vt, Initial, Final> {
  static constexpr int kScanStages = 1, kScanColumnGroups = Groups;
};

/// The first version's layouts: transposed scan B tiles, the prepare
/// kernel's L apart from Q and K.
template <class Base> struct FirstVersionConfig : Base {
  static constexpr bool kScanRowMajorTiles = false,
                        kPrepareSharedLower = false;
};

template <class Base> struct TwoGroupConfig : Base {
  static constexpr int kScanColumnGroups = 2;
};

struct KernelResult {
  std::vector<float> o, final;
  std::vector<float> transitionBound; ///< the prepare kernel's, [slots][HV]
  /// The prepare kernel's M and G, [slots][HV][64][64] and [slots][HV][64].
  std::vector<float> transform, gateCumsum;
  bool scoresInWorkspace = false;
};

/// Chain splitting of a run (DeltaRuleArgs' fields of the same names).
struct Split {
  int32_t segmentChunks = 0;
  float warmupLogBound = kDefaultWarmupLogBound;
};

/// Runs prepare and scan on `p` in the emulator. kPrepareScores false: the
/// prepare kernel alone, without P (what it runs for a wgmma scan that
/// computes P), in a workspace sized without it. A Config with kScanWgmma
/// runs the sm_90a pair instead (the TMA prepare kernel, then the wgmma
/// scan, with the tensor maps launchDeltaRule encodes), P in the workspace
/// unless the scan computes it.
template <class C, bool kPrepareScores = !ScanComputesScoresOf<C>::value>
KernelResult runKernels(const Problem &p, float scale,
                        const gdn_status_t *status = nullptr,
                        Split split = {}) {
  const int n = static_cast<int>(p.lengths.size());
  const bool padded = p.cuPadded != p.cu;
  std::vector<bf16> q(p.q.size()), k(p.k.size()), v(p.v.size());
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = __float2bfloat16_rn(p.q[i]);
    k[i] = __float2bfloat16_rn(p.k[i]);
  }
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = __float2bfloat16_rn(p.v[i]);
  // Output rows start as a sentinel (not zero), so padding rows that no
  // thread writes are caught.
  std::vector<bf16> o(std::max<size_t>(size_t(p.tokens) * p.hv * p.dv, 8),
                      __float2bfloat16_rn(777.0f));
  std::vector<float> final(std::max<size_t>(p.state0.size(), 1), 777.0f);

  PackingView packing{p.cu.data(), padded ? p.cuPadded.data() : nullptr, n,
                      p.tokens};
  std::vector<uint4> workspace(
      DeltaRuleWorkspace::bytes(packing, C::kValueHeads, kPrepareScores) / 16 +
      1);
  DeltaRuleArgs<C> args = {};
  args.q = q.data();
  args.k = k.data();
  args.v = v.data();
  args.g = p.g.data();
  args.beta = p.beta.data();
  args.initialState = C::kHasInitialState ? p.state0.data() : nullptr;
  args.finalState = C::kHasFinalState ? final.data() : nullptr;
  args.o = o.data();
  args.scale = scale;
  args.packing = packing;
  args.status = status;
  args.workspace = DeltaRuleWorkspace::carve(workspace.data(), packing,
                                             C::kValueHeads, kPrepareScores);
  args.segmentChunks = split.segmentChunks;
  args.warmupLogBound = split.warmupLogBound;

  using S = DeltaRuleShape<C>;
  emulation::setCopyOwnership(false);
  emulation::setCopySource(q.data(), q.data() + q.size());
  emulation::addCopySource(k.data(), k.data() + k.size());
  emulation::addCopySource(v.data(), v.data() + v.size());
  emulation::addCopySource(workspace.data(),
                           workspace.data() + workspace.size());
  const unsigned slots =
      static_cast<unsigned>(DeltaRuleWorkspace::slots(packing));
  const dim3 scanGrid{unsigned(deltaRuleScanBlocks<C>(packing, split.segmentChunks)), 1, 1};
  if constexpr (FusedOnlyOf<C>::value) {
    // One kernel: the fused block's producer makes M, P and G itself.
    using F = DeltaRuleFusedShape<C>;
    DeltaRuleTensorMaps maps = {};
    encodeTileMaps(maps, args, true);
    emulation::runGrid(scanGrid, F::kThreads, [&] { deltaRuleFusedKernel<C>(args, maps); },
                       F::kBytes);
  } else if constexpr (ScanWgmmaOf<C>::value) {
    using W = DeltaRuleWgmmaShape<C>;
    using F = DeltaRuleFusedShape<C>;
    constexpr bool kFused = FusedForwardOf<C>::value;
    DeltaRuleTensorMaps maps = {};
    EXPECT_EQ(encodeScanMaps(maps, args, kFused, kPrepareScores), cudaSuccess);
    emulation::runGrid(
        dim3{slots, unsigned(C::kValueHeads / S::kPrepareHeads), 1}, S::kThreads,
        [&] { deltaChunkPrepareTmaKernel<C, kPrepareScores>(args, maps); },
        S::prepareTmaBytes(kPrepareScores) + 1024);
    if constexpr (kFused)
      emulation::runGrid(scanGrid, F::kThreads,
                         [&] { deltaRuleFusedKernel<C>(args, maps); }, F::kBytes);
    else
      emulation::runGrid(scanGrid, W::kThreads,
                         [&] { deltaChunkScanWgmmaKernel<C>(args, maps); }, W::kBytes);
  } else {
    emulation::runGrid(
        dim3{slots, unsigned(C::kValueHeads / S::kPrepareHeads), 1}, S::kThreads,
        [&] { deltaChunkPrepareKernel<C, kPrepareScores>(args); });
    if (kPrepareScores)
      emulation::runGrid(scanGrid, S::kScanThreads,
                         [&] { deltaChunkScanKernel<C>(args); });
  }
  emulation::setCopyOwnership(true);

  KernelResult result;
  const size_t tiles = size_t(slots) * C::kValueHeads;
  for (size_t i = 0; i < tiles * 64 * 64; ++i)
    result.transform.push_back(__bfloat162float(args.workspace.transform[i]));
  result.gateCumsum.assign(args.workspace.gateCumsum,
                           args.workspace.gateCumsum + tiles * 64);
  result.scoresInWorkspace = args.workspace.scores != nullptr;
  result.o.resize(size_t(p.tokens) * p.hv * p.dv);
  for (size_t i = 0; i < result.o.size(); ++i)
    result.o[i] = __bfloat162float(o[i]);
  result.final = final;
  result.final.resize(p.state0.size());
  result.transitionBound.assign(args.workspace.transitionBound,
                                args.workspace.transitionBound +
                                    slots * C::kValueHeads);
  return result;
}

/// `C` against the recurrence; `result`, when given, receives the run.
template <class C>
void checkPack(std::vector<int> lengths, std::vector<int> padding,
               unsigned seed, bool checkAlone, Split split = {},
               KernelResult *result = nullptr) {
  std::mt19937 random(seed);
  Problem p =
      makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK, C::kHeadDimV,
                  lengths, padding, C::kHasInitialState, random);
  const float scale = 1.0f / std::sqrt(float(C::kHeadDimK));
  std::vector<double> wantO, wantFinal;
  recurrence(p, scale, wantO, wantFinal);
  const KernelResult got = runKernels<C>(p, scale, nullptr, split);
  if (result)
    *result = got;

  bool finite = true;
  const double errO = relativeRms(got.o, wantO, &finite);
  EXPECT_TRUE(finite) << "non-finite output";
  EXPECT_LE(errO, 5e-3) << "output relative RMS";
  // Padding rows are exactly zero (the recurrence has zeros there, but a
  // small RMS could hide a few unwritten rows).
  for (size_t seq = 0; seq < p.lengths.size(); ++seq)
    for (int r = p.cuPadded[seq] + p.lengths[seq]; r < p.cuPadded[seq + 1]; ++r)
      for (int j = 0; j < p.hv * p.dv; ++j)
        ASSERT_EQ(got.o[size_t(r) * p.hv * p.dv + j], 0.0f)
            << "padding row " << r;
  double errFinal = 0;
  if (C::kHasFinalState) {
    errFinal = relativeRms(got.final, wantFinal, &finite);
    EXPECT_TRUE(finite) << "non-finite final state";
    EXPECT_LE(errFinal, 5e-3) << "final state relative RMS";
    // Zero-length sequences: final = initial exactly.
    const size_t state = size_t(p.hv) * p.dk * p.dv;
    for (size_t seq = 0; seq < p.lengths.size(); ++seq) {
      if (p.lengths[seq] != 0)
        continue;
      for (size_t i = 0; i < state; ++i) {
        ASSERT_EQ(got.final[seq * state + i], p.state0[seq * state + i]);
      }
    }
  }
  std::printf("  lengths");
  for (int l : lengths)
    std::printf(" %d", l);
  std::printf(": o rel RMS %.2e, final %.2e\n", errO, errFinal);

  if (!checkAlone)
    return;
  const size_t state = size_t(p.hv) * p.dk * p.dv;
  for (size_t seq = 0; seq < p.lengths.size(); ++seq) {
    const KernelResult one =
        runKernels<C>(alone(p, int(seq)), scale, nullptr, split);
    const size_t row = size_t(p.hv) * p.dv;
    // A zero-length sequence has no rows (and memcmp no null pointers).
    if (p.lengths[seq] > 0)
      EXPECT_EQ(0, std::memcmp(one.o.data(),
                               got.o.data() + size_t(p.cuPadded[seq]) * row,
                               sizeof(float) * p.lengths[seq] * row))
          << "sequence " << seq << ": packed output differs from alone";
    if (C::kHasFinalState) {
      EXPECT_EQ(0, std::memcmp(one.final.data(), got.final.data() + seq * state,
                               sizeof(float) * state))
          << "sequence " << seq << ": packed final state differs from alone";
    }
  }
}

// The inverse keeps its intermediates in the 16 x 16 blocks above the
// diagonal of L (row stride kLdL = 68 floats). There the B fragments'
// scalars and the diagonal solve's stores into the two upper blocks a warp
// fills (slots 0 and 1, 2 and 3) take one wavefront each, where a plain 16
// x 16 scratch (row stride 16) took four and two. The A fragments' and the
// accumulators' float2 take four, two more than their bytes need, in either
// layout: 8-byte accesses go by half-warps, whose rows g and g + 1 share
// four banks at any stride of 4 (mod 32) words. Splitting each into two
// staggered 4-byte accesses (columns 2t + ((t >> 1) ^ k)) makes them one
// wavefront each; on the H200 that took the prepare kernel's shared-memory
// bank conflicts from 7.1M to 1.2M and its L1 from 83% to 70% busy, but not
// its time (docs/performance.md), so the kernels keep the float2.
TEST(DeltaRuleEmulation, InverseIntermediatesAvoidScratchConflicts) {
  constexpr int kLdL = DeltaRuleShape<Config<4, 8, 64, 64, true, true>>::kLdL;
  static_assert(kLdL == 68, "the layout this test reasons about");
  const RowMajorTile lower{kLdL}, plain{16};
  // Upper blocks (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3).
  const int slotRow[6] = {0, 0, 0, 1, 1, 2}, slotColumn[6] = {1, 2, 3, 2, 3, 3};
  for (int slot = 0; slot < 6; ++slot) {
    const int origin = 16 * slotRow[slot] * kLdL + 16 * slotColumn[slot];
    for (int half = 0; half < 2; ++half) // rows 0-7 or 8-15
      for (int column = 0; column < 16; column += 8) {
        // loadSplitA and storeAccumulators: lane (g, t) at row g, columns
        // 2t and 2t + 1, one 8-byte access; or two staggered 4-byte ones.
        auto pairs = [&](RowMajorTile at, int base) {
          return wavefronts(
              [&](int lane) {
                return base + at(8 * half + lane / 4, column + 2 * (lane % 4));
              },
              2);
        };
        EXPECT_EQ(pairs(lower, origin), 4) << slot;
        EXPECT_EQ(pairs(plain, 0), 4);
        for (int k = 0; k < 2; ++k)
          EXPECT_EQ(wavefronts(
                        [&](int lane) {
                          const int t = lane % 4;
                          return origin +
                                 lower(8 * half + lane / 4,
                                       column + 2 * t + ((t >> 1) ^ k));
                        },
                        1),
                    1)
              << slot << " " << k;
        // loadSplitB: lane (g, t) at row 2t (+ 1, + 8, + 9), column n0 + g.
        for (int row = 0; row < 2; ++row) {
          auto scalars = [&](RowMajorTile at, int base) {
            return wavefronts(
                [&](int lane) {
                  return base +
                         at(8 * half + 2 * (lane % 4) + row, column + lane / 4);
                },
                1);
          };
          EXPECT_EQ(scalars(lower, origin), 1) << slot;
          EXPECT_EQ(scalars(plain, 0), 4);
        }
      }
  }
  // The diagonal solve: lanes 0-15 store row r of D_I, lanes 16-31 row r of
  // D_I+1 (I = 0, 2), each into its slot.
  for (int first = 0; first < 4; first += 2)
    for (int r = 0; r < 16; ++r) {
      EXPECT_EQ(wavefronts(
                    [&](int lane) {
                      const int slot = first + lane / 16;
                      return 16 * slotRow[slot] * kLdL + 16 * slotColumn[slot] +
                             lower(r, lane % 16);
                    },
                    1),
                1)
          << first << " " << r;
      EXPECT_EQ(
          wavefronts(
              [&](int lane) { return 256 * (lane / 16) + plain(r, lane % 16); },
              1),
          2);
    }
}

// accumulateTf32 permutes the depth within each of its two mma steps
// (column 2t of A for the mma's t, 2t + 1 for t + 4; B's rows alike): its
// B scalars, rows 2t and 2t + 1 at column g of an upper block, take one
// wavefront each at row stride 68, as loadSplitB's do.
TEST(DeltaRuleEmulation, Tf32OperandLoadsAvoidConflicts) {
  constexpr int kLdL = DeltaRuleShape<Config<4, 8, 64, 64, true, true>>::kLdL;
  const RowMajorTile lower{kLdL};
  for (int step = 0; step < 2; ++step)
    for (int n = 0; n < 2; ++n)
      for (int row = 0; row < 2; ++row)
        EXPECT_EQ(wavefronts(
                      [&](int lane) {
                        return 16 * 3 + lower(8 * step + 2 * (lane % 4) + row,
                                              8 * n + lane / 4);
                      },
                      1),
                  1)
            << step << " " << n << " " << row;
}

/// One warp's accumulateBlock<kTf32> of two 16 x 16 fp32 tiles (row stride
/// kLdL, in shared memory) onto `init`: the largest error against the
/// float64 product.
template <bool kTf32>
double blockProductError(const std::vector<float> &a,
                         const std::vector<float> &b, float (&init)[16][16]) {
  constexpr int kLd = 68;
  float product[16][16];
  emulation::runGrid(dim3{1, 1, 1}, 32, [&] {
    float *sa = reinterpret_cast<float *>(shared), *sb = sa + 16 * kLd;
    if (threadIdx.x == 0) {
      std::memcpy(sa, a.data(), a.size() * 4);
      std::memcpy(sb, b.data(), b.size() * 4);
    }
    __syncthreads();
    const int lane = threadIdx.x;
    Accumulator acc[2];
    for (int n = 0; n < 2; ++n)
      for (int e = 0; e < 4; ++e)
        acc[n].c[e] =
            init[accumulatorRow(lane, e)][8 * n + accumulatorColumn(lane, e)];
    const RowMajorTile at{kLd};
    accumulateBlock<kTf32>(acc, sa, at, sb, at, lane);
    for (int n = 0; n < 2; ++n)
      for (int e = 0; e < 4; ++e)
        product[accumulatorRow(lane, e)][8 * n + accumulatorColumn(lane, e)] =
            acc[n].c[e];
  });
  double worst = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double want = init[i][j];
      for (int k = 0; k < 16; ++k)
        want += double(a[i * kLd + k]) * b[k * kLd + j];
      worst = std::max(worst, std::abs(product[i][j] - want));
    }
  return worst;
}

// The inverse's 16 x 16 x 16 products: tf32 within its rounding of the
// operands (|a| |b| 16 terms of at most 2^-11 relative each), split bf16
// 2^-16; a depth index of A that does not meet B's (a permutation
// mismatch) would be off by the size of the product itself.
TEST(DeltaRuleEmulation, InverseBlockProducts) {
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  constexpr int kLd = 68;
  std::vector<float> a(16 * kLd), b(16 * kLd);
  for (auto *m : {&a, &b})
    for (float &x : *m)
      x = uniform(random);
  float init[16][16];
  for (auto &row : init)
    for (float &x : row)
      x = uniform(random);
  const double tf32 = blockProductError<true>(a, b, init);
  const double split = blockProductError<false>(a, b, init);
  EXPECT_LT(tf32, 16 * std::ldexp(1.0, -10)) << "tf32";
  EXPECT_GT(tf32, 16 * split) << "the tf32 path rounds to tf32";
  EXPECT_LT(split, 16 * std::ldexp(1.0, -15)) << "split bf16";
  // cvt.rn: ties to even, carries into the exponent.
  auto rounded = [](float x) {
    const uint32_t bits = emulation::roundToTf32(x);
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
  };
  EXPECT_EQ(rounded(1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(rounded(1.0f + 3 * std::ldexp(1.0f, -11)),
            1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(rounded(std::nextafter(2.0f, 0.0f)), 2.0f);
  EXPECT_TRUE(std::isnan(rounded(NAN)));
}

/// The prepare kernel's inverse of I + L for one head (128 threads), L the
/// gated strictly-lower products of unit keys and betas in (0, 1) with
/// decaying gates: the relative RMS of X's lower triangle against the
/// float64 forward substitution.
template <bool kTf32> double inverseError(unsigned seed) {
  constexpr int kC = 64, kLd = 68, kD = 128;
  std::mt19937 random(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> k(kC * kD), G(kC), beta(kC);
  double cumulative = 0;
  for (int i = 0; i < kC; ++i) {
    double norm = 0;
    for (int d = 0; d < kD; ++d)
      norm += (k[i * kD + d] = normal(random)) * k[i * kD + d];
    for (int d = 0; d < kD; ++d)
      k[i * kD + d] /= std::sqrt(norm);
    G[i] = cumulative -= 0.05 * unit(random);
    beta[i] = unit(random);
  }
  std::vector<double> lower(kC * kC, 0.0);
  for (int i = 0; i < kC; ++i)
    for (int j = 0; j < i; ++j) {
      double dot = 0;
      for (int d = 0; d < kD; ++d)
        dot += k[i * kD + d] * k[j * kD + d];
      // The kernel's L is fp32.
      lower[i * kC + j] = float(beta[i] * std::exp(G[i] - G[j]) * dot);
    }
  std::vector<float> x(kC * kLd);
  emulation::runGrid(dim3{1, 1, 1}, 128, [&] {
    float *l = reinterpret_cast<float *>(shared);
    if (threadIdx.x == 0)
      for (int i = 0; i < kC; ++i)
        for (int j = 0; j < kLd; ++j)
          l[i * kLd + j] = j < i ? float(lower[i * kC + j]) : 0.0f;
    __syncthreads();
    invertUnitLowerBlocked<1, kLd, kC * kLd, 128, true, kTf32>(
        l, threadIdx.x, [] { __syncthreads(); });
    if (threadIdx.x == 0)
      std::memcpy(x.data(), l, x.size() * 4);
  });
  double error = 0, norm = 0;
  for (int c = 0; c < kC; ++c) {
    std::vector<double> want(kC, 0.0);
    for (int i = c; i < kC; ++i) {
      double sum = i == c ? 1.0 : 0.0;
      for (int j = c; j < i; ++j)
        sum -= lower[i * kC + j] * want[j];
      want[i] = sum;
      error += (x[i * kLd + c] - sum) * (x[i * kLd + c] - sum);
      norm += sum * sum;
    }
  }
  return std::sqrt(error / norm);
}

// The tf32 inverse (the default) stays well below M's own bf16 rounding
// (2^-9 relative, 1.6e-3 of o's 5e-3 budget: delta_rule.cuh); the split
// one is near fp32.
TEST(DeltaRuleEmulation, BlockedInverseAgainstFloat64) {
  for (unsigned seed : {1u, 2u}) {
    const double tf32 = inverseError<true>(seed),
                 split = inverseError<false>(seed);
    EXPECT_LT(tf32, 2e-4) << seed;
    EXPECT_GT(tf32, 4 * split) << seed;
    EXPECT_LT(split, 1e-5) << seed;
  }
}

TEST(DeltaRuleEmulation, EdgeLengthsGqaStates) {
  // GQA (one key head, two value heads), two V tiles of 32.
  checkPack<Config<1, 2, 64, 32, true, true>>({0, 1, 63, 64, 65, 130}, {}, 1,
                                              true);
}

TEST(DeltaRuleEmulation, PaddedNoStates) {
  checkPack<Config<1, 2, 64, 32, false, false>>({65, 0, 1, 130, 64},
                                                {3, 5, 0, 62, 1}, 2, true);
}

TEST(DeltaRuleEmulation, PaddedFinalOnlyMha) {
  checkPack<Config<2, 2, 64, 64, false, true>>({130, 0, 63}, {7, 1, 9}, 3,
                                               false);
}

TEST(DeltaRuleEmulation, ManyShortSequences) {
  // Many sequences per 64-token window: the closed-form chunk slots and the
  // prepare kernel's search for its sequence.
  std::mt19937 random(12);
  std::vector<int> lengths, padding;
  for (int i = 0; i < 28; ++i) {
    lengths.push_back(i % 9 == 4 ? 64 + int(random() % 70) : int(random() % 6));
    padding.push_back(int(random() % 3));
  }
  // One V tile, one column group: 128 threads per scan block keep the
  // emulation quick.
  checkPack<SingleStageConfig<1, 1, 64, 64, true, true, 1>>(lengths, padding,
                                                            10, false);
}

TEST(DeltaRuleEmulation, SingleStageScan) {
  // One column group of 32 columns (four n tiles per warp), one stage.
  checkPack<SingleStageConfig<1, 2, 64, 32, true, true, 1>>(
      {130, 0, 1, 64}, {2, 1, 0, 3}, 7, true);
}

TEST(DeltaRuleEmulation, HeadDim128) {
  // Two state m tiles per warp; the shape the GPU benchmarks.
  checkPack<Config<1, 1, 128, 64, true, true>>({70, 0}, {2, 0}, 4, false);
}

TEST(DeltaRuleEmulation, KeyAndValueDimsDiffer) {
  // K = 64, V = 128 (two V tiles of 64) and K = 128, V = 64.
  checkPack<Config<1, 2, 64, 64, true, true, 128>>({65, 0, 3}, {1, 0, 2}, 8,
                                                   false);
  checkPack<Config<1, 1, 128, 64, true, true, 64>>({65, 0, 3}, {}, 9, false);
}

/// `C` against the recurrence (edge lengths, padding, packed == alone) and
/// bit for bit against its first-version layouts (same roundings, so the
/// same bits).
template <class C>
void checkAgainstFirstVersion(std::vector<int> lengths,
                              std::vector<int> padding, unsigned seed) {
  using S = DeltaRuleShape<C>;
  using Old = FirstVersionConfig<C>;
  static_assert(S::kRowMajorTiles && !DeltaRuleShape<Old>::kRowMajorTiles &&
                    !DeltaRuleShape<Old>::kPrepareSharedLower,
                "the knobs select the two versions");
  checkPack<C>(lengths, padding, seed, true);
  std::mt19937 random(seed);
  Problem p = makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK,
                          C::kHeadDimV, lengths, padding, C::kHasInitialState,
                          random);
  const float scale = 1.0f / std::sqrt(float(C::kHeadDimK));
  const KernelResult now = runKernels<C>(p, scale);
  const KernelResult before = runKernels<Old>(p, scale);
  ASSERT_EQ(now.o.size(), before.o.size());
  EXPECT_EQ(0, std::memcmp(now.o.data(), before.o.data(),
                           sizeof(float) * now.o.size()))
      << "output differs from the first-version layouts";
  EXPECT_EQ(0, std::memcmp(now.final.data(), before.final.data(),
                           sizeof(float) * now.final.size()))
      << "final state differs from the first-version layouts";
}

TEST(DeltaRuleEmulation, RowMajorTilesAndSharedLower) {
  // K = 128 with a GQA pair per prepare block: L over Q and K (the case
  // that needs the added barrier); V tile 32 in two column groups (two n
  // tiles per warp: the paired ldmatrix.trans).
  using C = Config<1, 2, 128, 32, true, true>;
  static_assert(DeltaRuleShape<C>::kPrepareSharedLower, "L over Q and K");
  checkAgainstFirstVersion<C>({0, 1, 63, 64, 65, 130}, {1, 0, 2, 0, 3, 1}, 11);
}

TEST(DeltaRuleEmulation, RowMajorTilesOddColumnTiles) {
  // V tile 16 in two column groups: one n tile per warp (the plain-load
  // path of loadBRowMajor), final state only; K = 64 with a pair keeps L
  // apart (it does not fit over Q and K).
  using C = TwoGroupConfig<Config<1, 2, 64, 16, false, true>>;
  static_assert(!DeltaRuleShape<C>::kPrepareSharedLower, "L apart");
  checkAgainstFirstVersion<C>({65, 0, 130, 1}, {0, 2, 1, 0}, 12);
}

TEST(DeltaRuleEmulation, WholeValueTile) {
  // K = V = 128 in one V tile: four column groups of 32 columns (four n
  // tiles per warp), the GPU's one-wave configuration for 4 x 8192.
  using C = Config<1, 1, 128, 128, true, true>;
  static_assert(DeltaRuleShape<C>::kScanThreads == 512 &&
                    DeltaRuleShape<C>::kColumnTiles == 4,
                "512 threads, 4 n tiles per warp");
  checkPack<C>({0, 1, 63, 64, 65, 130}, {1, 0, 2, 0, 3, 1}, 13, true);
}

// The sm_90a forward (TMA prepare kernel, wgmma scan: Hopper's products,
// bulk copies and mbarriers emulated) against the recurrence, the same
// checks as the mma.sync pair's: edge lengths, padding, GQA, states, packed
// == alone bit for bit.
template <class Base> struct WgmmaScanConfig : Base {
  static constexpr bool kScanWgmma = true;
};
template <class Base> struct WgmmaScoresConfig : WgmmaScanConfig<Base> {
  static constexpr bool kWgmmaScanScores = true;
};

TEST(DeltaRuleEmulation, WgmmaScanEdgeLengthsGqaStates) {
  checkPack<WgmmaScanConfig<Config<1, 2, 64, 64, true, true>>>(
      {0, 1, 63, 64, 65, 130}, {1, 0, 2, 0, 3, 1}, 71, true);
}

TEST(DeltaRuleEmulation, WgmmaScanSplitChains) {
  // Segments of two chunks: blocks warm their state up over the chunks
  // before their own from the prepare kernel's transition bounds.
  checkPack<WgmmaScanConfig<Config<1, 2, 64, 64, true, true>>>(
      {300, 0, 65, 200}, {0, 1, 0, 2}, 73, true, Split{2});
}

// The fused forward: one warp-specialised block per unit, a producer
// warpgroup making P (what gdn-select-kernels picks at V tile 128 on
// sm_90a, the prepare kernel making M and G) or the whole prepare's work.
template <class Base> struct FusedProducerOfPConfig : WgmmaScanConfig<Base> {
  static constexpr bool kFusedForward = true, kFusedInverse = false;
};
template <class Base> struct FusedOnlyConfig : WgmmaScanConfig<Base> {
  static constexpr bool kFusedForward = true;
};

TEST(DeltaRuleEmulation, FusedForwardProducerOfP) {
  checkPack<FusedProducerOfPConfig<Config<1, 2, 128, 128, true, true>>>(
      {0, 1, 63, 64, 65, 130}, {1, 0, 2, 0, 3, 1}, 74, true);
  checkPack<FusedProducerOfPConfig<Config<1, 1, 128, 128, true, true>>>(
      {300, 0, 65}, {0, 1, 0}, 75, false, Split{2});
}

TEST(DeltaRuleEmulation, FusedForwardWholePrepare) {
  checkPack<FusedOnlyConfig<Config<1, 2, 128, 64, true, true>>>({65, 0, 130, 1}, {0, 2, 1, 0},
                                                                76, true);
}

TEST(DeltaRuleEmulation, WgmmaScanComputesScoresWholeTile) {
  // V tile 128 (two consumer warpgroups), K = 128, P made by the scan.
  using C = WgmmaScoresConfig<Config<1, 1, 128, 128, false, true>>;
  static_assert(ScanComputesScoresOf<C>::value && DeltaRuleWgmmaShape<C>::kWarpgroups == 2,
                "the scan makes P, two warpgroups");
  checkPack<C>({65, 0, 130, 1}, {0, 2, 1, 0}, 72, false);
}

//===----------------------------------------------------------------------===//
// Split chains
//===----------------------------------------------------------------------===//

template <class Base> struct OneGroupConfig : Base {
  static constexpr int kScanColumnGroups = 1; // 128 threads: quick to emulate
};

// The prepare kernel without P (for a wgmma scan that computes it): M and
// G bit for bit those of the full kernel, in a workspace one tile array
// smaller, with no P in it. MHA and GQA (one and two heads per block).
template <class C> void checkPrepareWithoutScores(unsigned seed) {
  std::mt19937 random(seed);
  Problem p =
      makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK, C::kHeadDimV,
                  {130, 0, 1, 64, 200}, {2, 0, 1, 0, 3}, false, random);
  const KernelResult full = runKernels<C>(p, 0.125f);
  const KernelResult alone = runKernels<C, false>(p, 0.125f);
  EXPECT_TRUE(full.scoresInWorkspace);
  EXPECT_FALSE(alone.scoresInWorkspace);
  ASSERT_EQ(full.transform.size(), alone.transform.size());
  EXPECT_EQ(0, std::memcmp(full.transform.data(), alone.transform.data(),
                           full.transform.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(full.gateCumsum.data(), alone.gateCumsum.data(),
                           full.gateCumsum.size() * sizeof(float)));
  // M is not all zero (the comparison compares something).
  EXPECT_TRUE(std::any_of(alone.transform.begin(), alone.transform.end(),
                          [](float x) { return x != 0.0f; }));
  PackingView packing{p.cu.data(), p.cuPadded.data(),
                      static_cast<int32_t>(p.lengths.size()), p.tokens};
  EXPECT_EQ(DeltaRuleWorkspace::bytes(packing, C::kValueHeads, false) +
                DeltaRuleWorkspace::tileBytes(
                    DeltaRuleWorkspace::slots(packing), C::kValueHeads),
            DeltaRuleWorkspace::bytes(packing, C::kValueHeads));
}

TEST(DeltaRuleEmulation, PrepareWithoutScoresKeepsMAndG) {
  checkPrepareWithoutScores<Config<2, 2, 64, 64, false, false>>(61);
  checkPrepareWithoutScores<Config<1, 2, 64, 64, false, false>>(62);
}

// The prepare kernel's transition bound of every chunk and value head
// against float64: G_last plus log max(1, |1 - beta |k|^2|) per row, on keys
// of norms 0.5 to 2 and betas up to 1.5, so that some rows expand.
TEST(DeltaRuleSplit, TransitionBoundOfEveryChunk) {
  using C = OneGroupConfig<Config<1, 2, 64, 64, false, false>>;
  std::mt19937 random(21);
  Problem p =
      makeProblem(1, 2, 64, 64, {130, 0, 1, 64}, {2, 0, 1, 0}, false, random);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (int t = 0; t < p.tokens; ++t) {
    const float norm = 0.5f + 1.5f * uniform(random);
    for (int i = 0; i < 64; ++i)
      p.k[size_t(t) * 64 + i] = round16(norm * p.k[size_t(t) * 64 + i]);
  }
  for (float &beta : p.beta)
    beta = 1.5f * uniform(random);
  Split split; // the bounds are written for split launches
  split.segmentChunks = 1;
  const KernelResult got = runKernels<C>(p, 0.125f, nullptr, split);

  int expanding = 0, checked = 0;
  for (size_t seq = 0; seq < p.lengths.size(); ++seq)
    for (int c = 0; 64 * c < p.lengths[seq]; ++c)
      for (int head = 0; head < 2; ++head) {
        double want = 0;
        for (int r = 64 * c; r < std::min(64 * (c + 1), p.lengths[seq]); ++r) {
          const int t = p.cuPadded[seq] + r;
          double norm2 = 0;
          for (int i = 0; i < 64; ++i)
            norm2 += double(p.k[size_t(t) * 64 + i]) * p.k[size_t(t) * 64 + i];
          const double eigenvalue =
              std::fabs(1.0 - p.beta[size_t(t) * 2 + head] * norm2);
          expanding += eigenvalue > 1.0;
          want += p.g[size_t(t) * 2 + head] +
                  (eigenvalue > 1.0 ? std::log(eigenvalue) : 0.0);
        }
        const int64_t slot = p.cu[seq] / 64 + int64_t(seq) + c;
        EXPECT_NEAR(got.transitionBound[size_t(slot) * 2 + head], want,
                    1e-4 * (1.0 + std::fabs(want)))
            << "sequence " << seq << ", chunk " << c << ", head " << head;
        ++checked;
      }
  EXPECT_EQ(checked, 2 * (3 + 0 + 1 + 1));
  EXPECT_GT(expanding, 20) << "the test should exercise expanding rows";
}

// Split chains against the recurrence (edge lengths, padding, both states,
// packed == alone) and against the unsplit scan. A segment's block starts
// from a zero state a chunk or two back (the gates decay about e^-16 per
// chunk), leaving out at most 2^-24 of the state: below what bf16 outputs
// resolve, and within fp32 rounding on the final states.
template <class C> void checkSplit(int32_t segmentChunks, unsigned seed) {
  const std::vector<int> lengths = {700, 0, 1, 260, 130, 64},
                         padding = {1, 2, 0, 3, 0, 1};
  KernelResult whole, got;
  checkPack<C>(lengths, padding, seed, false, {}, &whole);
  Split split;
  split.segmentChunks = segmentChunks;
  checkPack<C>(lengths, padding, seed, true, split, &got);
  std::vector<double> wholeO(whole.o.begin(), whole.o.end()),
      wholeFinal(whole.final.begin(), whole.final.end());
  bool finite = true;
  const double differenceO = relativeRms(got.o, wholeO, &finite);
  const double differenceFinal = relativeRms(got.final, wholeFinal, &finite);
  std::printf("  split %d against unsplit: o %.2e, final %.2e\n", segmentChunks,
              differenceO, differenceFinal);
  EXPECT_LT(differenceO, 1e-5);
  EXPECT_LT(differenceFinal, 1e-6);
}

TEST(DeltaRuleSplit, SegmentsOfTwoChunks) {
  checkSplit<OneGroupConfig<Config<1, 2, 64, 64, true, true>>>(2, 22);
}

TEST(DeltaRuleSplit, SegmentsOfThreeChunksOneStage) {
  checkSplit<SingleStageConfig<1, 1, 64, 64, false, true, 1>>(3, 23);
}

// Slow gates (about e^-2 per chunk), against the float64 recurrence. With a
// loose limit (e^-3) warm-ups of two chunks leave out a visible part of the
// state; with the default one they run about nine chunks back and the error
// is the unsplit scan's (the two differ by bf16 rounding noise: a warm-up
// rounds a different state). Shows that warm-ups start where the bound
// says, and that the default costs no precision.
TEST(DeltaRuleSplit, TruncationStaysWithinTheLimit) {
  using C = OneGroupConfig<Config<1, 2, 64, 64, true, true>>;
  std::mt19937 random(25);
  Problem p = makeProblem(1, 2, 64, 64, {1000, 130}, {0, 1}, true, random);
  for (float &g : p.g)
    g /= 8.0f;
  const float scale = 0.125f;
  std::vector<double> wantO, wantFinal;
  recurrence(p, scale, wantO, wantFinal);
  bool finite = true;
  const double wholeError =
      relativeRms(runKernels<C>(p, scale).o, wantO, &finite);
  for (float limit : {-3.0f, kDefaultWarmupLogBound}) {
    Split split;
    split.segmentChunks = 2;
    split.warmupLogBound = limit;
    const KernelResult got = runKernels<C>(p, scale, nullptr, split);
    const double error = relativeRms(got.o, wantO, &finite);
    std::printf("  limit %.1f: o rel RMS %.2e (unsplit %.2e)\n", limit, error,
                wholeError);
    EXPECT_TRUE(finite);
    if (limit == -3.0f) {
      EXPECT_GT(error, 1.1 * wholeError) << "no warm-up started late";
      EXPECT_LT(error, std::exp(limit));
    } else {
      EXPECT_LT(error, 1.02 * wholeError);
    }
  }
}

// Where the bound never falls to the limit (no decay, or the limit -inf),
// every segment runs from its sequence's start: the split scan is the
// unsplit one bit for bit.
TEST(DeltaRuleSplit, WithoutDecayEverySegmentIsExact) {
  using C = OneGroupConfig<Config<1, 2, 64, 64, true, true>>;
  std::mt19937 random(24);
  Problem p = makeProblem(1, 2, 64, 64, {300, 0, 65}, {1, 0, 2}, true, random);
  const float scale = 0.125f;
  for (bool decays : {false, true}) {
    if (!decays)
      std::fill(p.g.begin(), p.g.end(), 0.0f);
    Split split;
    split.segmentChunks = 2;
    split.warmupLogBound = decays ? -INFINITY : kDefaultWarmupLogBound;
    const KernelResult got = runKernels<C>(p, scale, nullptr, split);
    const KernelResult whole = runKernels<C>(p, scale);
    EXPECT_EQ(0, std::memcmp(got.o.data(), whole.o.data(),
                             sizeof(float) * got.o.size()))
        << (decays ? "limit -inf" : "no decay") << ": o differs";
    EXPECT_EQ(0, std::memcmp(got.final.data(), whole.final.data(),
                             sizeof(float) * got.final.size()))
        << (decays ? "limit -inf" : "no decay") << ": final state differs";
  }
}

// The host's choice of segment length: none when the sequences fill half
// the target, else about target / blocks segments per sequence of mean
// length, never shorter than kMinSegmentChunks.
TEST(DeltaRuleSplit, SegmentLengthFromTheHostsKnowledge) {
  using C = Config<16, 32, 128, 128, false, false>;
  auto chunksFor = [](int32_t seqs, int32_t tokens, int64_t target) {
    std::vector<int32_t> cu(seqs + 1, 0);
    const PackingView packing{cu.data(), nullptr, seqs, tokens};
    return deltaRuleSegmentChunks<C>(packing, target);
  };
  EXPECT_EQ(chunksFor(1, 32768, 132), 128);  // 4 segments, 128 blocks
  EXPECT_EQ(chunksFor(2, 32768, 132), 128);  // 2 per sequence
  EXPECT_EQ(chunksFor(4, 32768, 132), 0);    // 128 blocks already
  EXPECT_EQ(chunksFor(1, 131072, 132), 512); // the longest edge mix
  EXPECT_EQ(chunksFor(1, 1024, 132), 8);     // at least 8 chunks
  EXPECT_EQ(chunksFor(1, 256, 132), 0);      // shorter than one segment
  EXPECT_EQ(chunksFor(0, 0, 132), 0);
  std::vector<int32_t> cu(2, 0);
  EXPECT_EQ(
      deltaRuleScanBlocks<C>(PackingView{cu.data(), nullptr, 1, 32768}, 128),
      (32768 / 8192 + 1 + 1) * 32);
}

// The scan's shared memory as the device header lays it out, against the
// bytes gdn-select-kernels assumes (kernel::getDeltaRuleScanSharedBytes,
// which test/Transforms/gdn-select-kernels.mlir and gdn-compile.test hold to
// the same numbers): the two must move together.
TEST(DeltaRuleShapes, ScanSharedBytesMatchTheCompilers) {
  EXPECT_EQ((DeltaRuleShape<Config<1, 1, 128, 128, false, false>>::kScanBytes),
            228864u); // V tile 128, two stages: Hopper only
  EXPECT_EQ(
      (DeltaRuleShape<SingleStageConfig<1, 1, 128, 64, false, false, 4>>::
           kScanBytes),
      108800u); // V tile 64, one stage: fits 163 KiB (A100)
  EXPECT_EQ(
      (DeltaRuleShape<SingleStageConfig<1, 1, 128, 32, false, false, 2>>::
           kScanBytes),
      84224u); // V tile 32, one stage: fits 99 KiB (sm_86 / sm_89)
  EXPECT_EQ(
      (DeltaRuleShape<SingleStageConfig<1, 1, 64, 64, false, false, 4>>::
           kScanBytes),
      83200u); // K = V = 64, V tile 64, one stage
  EXPECT_EQ((DeltaRuleShape<Config<1, 1, 64, 32, false, false, 64>>::kScanBytes),
            104960u); // K = 64, V tile 32, two stages
}

TEST(DeltaRuleEmulation, InvalidPackingGivesNaN) {
  using C = Config<1, 2, 64, 32, true, true>;
  std::mt19937 random(6);
  Problem p = makeProblem(1, 2, 64, 64, {5, 70}, {1, 0}, true, random);
  gdn_status_t status = {};
  status.code = GDN_STATUS_DECREASING;
  const KernelResult got = runKernels<C>(p, 0.125f, &status);
  for (float x : got.o)
    ASSERT_TRUE(std::isnan(x));
  for (float x : got.final)
    ASSERT_TRUE(std::isnan(x));
  status.code = GDN_STATUS_OK; // the same pack with a valid record computes
  const KernelResult valid = runKernels<C>(p, 0.125f, &status);
  for (float x : valid.o)
    ASSERT_FALSE(std::isnan(x));
}

} // namespace

namespace {

// slotSequence against the slots each sequence owns, on packs of 1 to
// 20000 sequences with zero lengths among them, at the first and last slot
// of every sampled sequence and past the end (every thread of a block asks;
// 128 and 96 threads).
TEST(DeltaRuleSlots, BlockSearchFindsTheOwningSequence) {
  std::mt19937 random(7);
  for (unsigned threads : {128u, 96u})
    for (int n : {1, 2, 5, 95, 96, 97, 128, 129, 300, 16385, 20000}) {
      std::vector<int32_t> cu(n + 1, 0);
      for (int i = 0; i < n; ++i)
        cu[i + 1] = cu[i] + (random() % 4 == 0 ? 0 : random() % 200);
      const PackingView packing{cu.data(), nullptr, n, cu[n]};
      auto first = [&](int s) { return int64_t(cu[s]) / 64 + s; };
      std::vector<std::pair<int64_t, int32_t>> probes; // slot, owner
      const int step = n > 40 ? n / 40 : 1;
      for (int s = 0; s < n; s += step) {
        // Slots of s: [first(s), first(s + 1)), at least one (first slots
        // strictly increase: a zero-length s owns one).
        const int64_t end = s + 1 < n ? first(s + 1) : first(s) + 1;
        probes.push_back({first(s), s});
        probes.push_back({end - 1, s});
      }
      probes.push_back({first(n - 1) + 1000, n - 1}); // past the end
      for (auto [slot, owner] : probes) {
        int32_t found = -1;
        emulation::runGrid(dim3{1, 1, 1}, threads, [&] {
          const int32_t got = slotSequence(packing, slot);
          if (threadIdx.x == 0)
            found = got;
        });
        ASSERT_EQ(found, owner) << n << " sequences, " << threads
                                   << " threads, slot " << slot;
      }
    }
}

} // namespace
