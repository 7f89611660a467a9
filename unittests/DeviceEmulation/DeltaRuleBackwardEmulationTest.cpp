//===- DeltaRuleBackwardEmulationTest.cpp - the backward kernels on host ---===//
//
// The five kernels of delta_rule_backward.cuh run in the emulator on packs
// with lengths 0, 1, 63, 64, 65, 130, alignment padding, GQA, with and
// without initial states and final-state cotangents, against an exact
// float64 reverse sweep over the token-by-token recurrence of docs/spec.md
// (written here, independent of the chunked algebra the kernels use), within
// docs/spec.md's bf16 gradient tolerances. Also: packed gradients equal each
// sequence's alone bit for bit, repeated runs are bit-identical, padding
// rows are exactly zero, and an invalid packing gives NaN everywhere.
//
//===----------------------------------------------------------------------===//

#include "DeltaRuleProblem.h"
#include "DeviceEmulator.h"

#include "gdn/device/delta_rule_backward.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <random>
#include <vector>

namespace gdn::device {
extern uint4 shared[]; // the emulated dynamic shared memory (DeviceEmulator)
} // namespace gdn::device

using namespace gdn::device;
using namespace gdn::device::testing;

namespace {

using bf16 = __nv_bfloat16;

template <int H, int HV, int D, bool Initial, int DV = D>
struct Config {
  using Element = __nv_bfloat16;
  static constexpr int kKeyHeads = H, kValueHeads = HV, kHeadDimK = D,
                       kHeadDimV = DV, kValueTile = DV;
  static constexpr bool kHasInitialState = Initial, kHasFinalState = false;
};

/// Chain splitting of the two scans (DeltaRuleBackwardArgs); none by
/// default.
struct BackwardSplit {
  int32_t forwardSegmentChunks = 0, reverseSegmentChunks = 0;
  float warmupLogBound = kDefaultWarmupLogBound;
};

/// Runs the five backward kernels on `p` in the emulator. Outputs start as
/// a sentinel so that rows no thread writes are caught.
/// With `gradientOffset`, dq and dk start that many elements into their
/// buffers (a view at another alignment).
template <class C>
Gradients<float> runBackward(const Problem &p, const Cotangents &cot, float scale,
                             bool withFinal, const gdn_status_t *status = nullptr,
                             BackwardSplit split = {}, size_t gradientOffset = 0) {
  using S = DeltaRuleShape<C>;
  using B = DeltaRuleBackwardShape<C>;
  const int n = static_cast<int>(p.lengths.size());
  const bool padded = p.cuPadded != p.cu;
  auto toBf16 = [](const std::vector<float> &x) {
    std::vector<bf16> y(std::max<size_t>(x.size(), 8));
    for (size_t i = 0; i < x.size(); ++i)
      y[i] = __float2bfloat16_rn(x[i]);
    return y;
  };
  std::vector<bf16> q = toBf16(p.q), k = toBf16(p.k), v = toBf16(p.v),
                    dO = toBf16(cot.dO);
  constexpr float kSentinel = 777.0f;
  using G = typename GradientOf<C>::type;
  std::vector<G> dq(std::max<size_t>(p.q.size(), 1) + gradientOffset, Element<G>::store(kSentinel)),
      dk(dq.size(), Element<G>::store(kSentinel)),
      dv(std::max<size_t>(p.v.size(), 1), Element<G>::store(kSentinel));
  Gradients<float> g;
  g.dg.assign(std::max<size_t>(p.g.size(), 1), kSentinel);
  g.dbeta.assign(g.dg.size(), kSentinel);
  g.dstate.assign(std::max<size_t>(p.state0.size(), 1), kSentinel);

  PackingView packing{p.cu.data(), padded ? p.cuPadded.data() : nullptr, n,
                      p.tokens};
  using Layout = BackwardWorkspaceLayout<C>;
  std::vector<uint4> workspace(
      DeltaRuleBackwardWorkspace::bytes(packing, C::kValueHeads, C::kHeadDimK, C::kHeadDimV,
                                        Layout::kFused, Layout::kKeyGradBytes) /
          16 +
      16);
  DeltaRuleBackwardArgs<C> args = {};
  args.q = q.data();
  args.k = k.data();
  args.v = v.data();
  args.g = p.g.data();
  args.beta = p.beta.data();
  args.initialState = C::kHasInitialState ? p.state0.data() : nullptr;
  args.dO = dO.data();
  args.dFinalState = withFinal ? cot.dFinal.data() : nullptr;
  args.dq = dq.data() + gradientOffset;
  args.dk = dk.data() + gradientOffset;
  args.dv = dv.data();
  args.dg = g.dg.data();
  args.dbeta = g.dbeta.data();
  args.dInitialState = C::kHasInitialState ? g.dstate.data() : nullptr;
  args.scale = scale;
  args.packing = packing;
  args.status = status;
  args.workspace = DeltaRuleBackwardWorkspace::carve(
      workspace.data(), packing, C::kValueHeads, C::kHeadDimK, C::kHeadDimV, Layout::kFused,
      Layout::kKeyGradBytes);
  args.forwardSegmentChunks = split.forwardSegmentChunks;
  args.reverseSegmentChunks = split.reverseSegmentChunks;
  args.warmupLogBound = split.warmupLogBound;

  DeltaRuleArgs<C> forward = {};
  forward.q = q.data();
  forward.k = k.data();
  forward.v = v.data();
  forward.g = p.g.data();
  forward.beta = p.beta.data();
  forward.initialState = args.initialState;
  forward.scale = scale;
  forward.packing = packing;
  forward.status = status;
  forward.workspace = args.workspace.forward;
  forward.savedStates = args.workspace.states;
  forward.savedNew = args.workspace.fresh;
  forward.warmupLogBound = split.warmupLogBound;
  // The prepare kernel writes the transition bounds when either scan splits
  // (as launchDeltaRuleBackward does).
  forward.segmentChunks = std::max(split.forwardSegmentChunks, split.reverseSegmentChunks);

  emulation::setCopyOwnership(false);
  emulation::setCopySource(q.data(), q.data() + q.size());
  emulation::addCopySource(k.data(), k.data() + k.size());
  emulation::addCopySource(v.data(), v.data() + v.size());
  emulation::addCopySource(dO.data(), dO.data() + dO.size());
  emulation::addCopySource(workspace.data(), workspace.data() + workspace.size());
  const unsigned slots = static_cast<unsigned>(DeltaRuleWorkspace::slots(packing));
  emulation::runGrid(dim3{slots, unsigned(C::kValueHeads / S::kPrepareHeads), 1},
                     S::kThreads, [&] { deltaChunkPrepareKernel<C>(forward); });
  forward.segmentChunks = split.forwardSegmentChunks;
  const dim3 scanGrid{unsigned(deltaRuleScanBlocks<C>(packing, split.forwardSegmentChunks)),
                      1, 1};
  if constexpr (ScanWgmmaOf<C>::value) {
    // As launchDeltaRuleBackward: the wgmma recomputation from k, v and M,
    // storing S by TMA.
    using W = DeltaRuleWgmmaShape<C>;
    DeltaRuleTensorMaps maps = {};
    EXPECT_EQ(encodeRecomputationMaps(maps, args), cudaSuccess);
    emulation::runGrid(scanGrid, W::kThreads,
                       [&] { deltaChunkScanWgmmaKernel<C, true>(forward, maps); }, W::kBytes);
  } else {
    emulation::runGrid(scanGrid, S::kScanThreads,
                       [&] { deltaChunkScanKernel<C, true>(forward); });
  }
  const dim3 reverseGrid{
      unsigned(deltaRuleReverseScanBlocks<C>(packing, split.reverseSegmentChunks)), 1, 1};
  if constexpr (FusedBackwardWgmmaOf<C>::value) {
    // As launchDeltaRuleBackward: the fused kernel (in clusters of a key
    // head's two value heads with bf16 gradients), then (GQA otherwise) the
    // sums of its per-value-head dq and dk.
    using F = FusedBackwardShape<C>;
    FusedBackwardTensorMaps maps = {};
    EXPECT_EQ(encodeFusedBackwardMaps(maps, args), cudaSuccess);
    emulation::runGrid(reverseGrid, F::kThreads,
                       [&] { deltaChunkFusedBackwardKernel<C>(args, maps); }, F::kBytes,
                       FusedClusterKeyGradSums<C>::kBlocks);
    if constexpr (Layout::kPerValueHeadKeyGrads)
      emulation::runGrid(dim3{4, 1, 1}, 64, [&] { deltaRuleKeyGradSumKernel<C>(args); });
  } else if constexpr (ReverseScanWgmmaOf<C>::value) {
    // As launchDeltaRuleBackward: the wgmma reverse scan from q, k, dO, N, P.
    using R = ReverseScanWgmmaShape<C>;
    DeltaRuleTensorMaps maps = {};
    EXPECT_EQ(encodeReverseScanMaps(maps, args), cudaSuccess);
    emulation::runGrid(reverseGrid, R::kThreads,
                       [&] { deltaChunkReverseScanWgmmaKernel<C>(args, maps); }, R::kBytes);
  } else {
    emulation::runGrid(reverseGrid, B::kThreads, [&] { deltaChunkReverseScanKernel<C>(args); });
  }
  if constexpr (FusedBackwardWgmmaOf<C>::value) {
    // (in the fused kernel)
  } else if constexpr (ChunkGradWgmmaOf<C>::value) {
    // As launchDeltaRuleBackward, on a GPU of three SMs: persistent blocks
    // that each walk several units.
    using K = ChunkGradWgmmaShape<C>;
    ChunkGradTensorMaps maps = {};
    EXPECT_EQ(encodeChunkGradMaps(maps, args), cudaSuccess);
    const unsigned blocks =
        static_cast<unsigned>(std::min<int64_t>(chunkGradUnits<C>(packing), 3));
    emulation::runGrid(dim3{blocks, 1, 1}, K::kThreads,
                       [&] { deltaChunkGradWgmmaKernel<C>(args, maps); }, K::kBytes);
  } else {
    emulation::runGrid(dim3{slots, unsigned(C::kKeyHeads), 1}, B::kThreads,
                       [&] { deltaChunkGradKernel<C>(args); }, B::kGradBytes);
  }
  emulation::runGrid(dim3{4, 1, 1}, 64, [&] { deltaRuleBackwardFinishKernel<C>(args); });
  emulation::setCopyOwnership(true);

  auto toFloat = [](const std::vector<G> &x, size_t count) {
    std::vector<float> y(count);
    for (size_t i = 0; i < count; ++i)
      y[i] = Element<G>::load(x[i]);
    return y;
  };
  g.dq = toFloat(std::vector<G>(dq.begin() + gradientOffset, dq.end()), p.q.size());
  g.dk = toFloat(std::vector<G>(dk.begin() + gradientOffset, dk.end()), p.k.size());
  g.dv = toFloat(dv, p.v.size());
  g.dg.resize(p.g.size());
  g.dbeta.resize(p.g.size());
  g.dstate.resize(C::kHasInitialState ? p.state0.size() : 0);
  return g;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  // memcmp may not be given the null data of an empty vector.
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0);
}

/// `width` values per buffer row of `x`, rows of sequence `seq` of `p`.
std::vector<float> sequenceRows(const std::vector<float> &x, const Problem &p,
                                int seq, size_t width) {
  return std::vector<float>(x.begin() + p.cuPadded[seq] * width,
                            x.begin() + (p.cuPadded[seq] + p.lengths[seq]) * width);
}

/// `C` on one pack against the reference; with `thorough`, also a repeated
/// run (bit-identical) and each sequence alone (bit-identical to packed):
/// the emulator is slow, so only one pack per configuration family does it.
template <class C>
void checkBackward(std::vector<int> lengths, std::vector<int> padding,
                   bool withFinal, unsigned seed, bool thorough) {
  std::mt19937 random(seed);
  Problem p = makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK,
                          C::kHeadDimV, lengths, padding, C::kHasInitialState,
                          random);
  const Cotangents cot = makeCotangents(p, withFinal, random);
  const float scale = 1.0f / std::sqrt(float(C::kHeadDimK));
  const Gradients<double> want = referenceGradients(p, cot, scale);
  const Gradients<float> got = runBackward<C>(p, cot, scale, withFinal);

  struct Check {
    const char *name;
    const std::vector<float> &got;
    const std::vector<double> &want;
    double tolerance;
  };
  // docs/spec.md (Tolerances): dq, dk, dv (and the states') 8e-3; dbeta,
  // dg 2e-2.
  std::vector<Check> checks = {{"dq", got.dq, want.dq, 8e-3},
                               {"dk", got.dk, want.dk, 8e-3},
                               {"dv", got.dv, want.dv, 8e-3},
                               {"dg", got.dg, want.dg, 2e-2},
                               {"dbeta", got.dbeta, want.dbeta, 2e-2}};
  if (C::kHasInitialState)
    checks.push_back({"dstate", got.dstate, want.dstate, 8e-3});
  std::printf("  lengths");
  for (int l : lengths)
    std::printf(" %d", l);
  for (const Check &check : checks) {
    bool finite = true;
    const double err = relativeRms(check.got, check.want, &finite);
    EXPECT_TRUE(finite) << check.name << " is not finite";
    EXPECT_LE(err, check.tolerance) << check.name << " relative RMS";
    std::printf(", %s %.2e", check.name, err);
  }
  std::printf("\n");

  // Padding rows are exactly zero in every per-row gradient.
  for (size_t seq = 0; seq < p.lengths.size(); ++seq)
    for (int r = p.cuPadded[seq] + p.lengths[seq]; r < p.cuPadded[seq + 1]; ++r) {
      for (int i = 0; i < p.h * p.dk; ++i) {
        ASSERT_EQ(got.dq[size_t(r) * p.h * p.dk + i], 0.0f) << "dq padding row " << r;
        ASSERT_EQ(got.dk[size_t(r) * p.h * p.dk + i], 0.0f) << "dk padding row " << r;
      }
      for (int i = 0; i < p.hv * p.dv; ++i)
        ASSERT_EQ(got.dv[size_t(r) * p.hv * p.dv + i], 0.0f) << "dv padding row " << r;
      for (int i = 0; i < p.hv; ++i) {
        ASSERT_EQ(got.dg[size_t(r) * p.hv + i], 0.0f) << "dg padding row " << r;
        ASSERT_EQ(got.dbeta[size_t(r) * p.hv + i], 0.0f) << "dbeta padding row " << r;
      }
    }

  if (!thorough)
    return;
  // The same inputs give the same bits.
  const Gradients<float> again = runBackward<C>(p, cot, scale, withFinal);
  EXPECT_TRUE(sameBits(got.dq, again.dq) && sameBits(got.dk, again.dk) &&
              sameBits(got.dv, again.dv) && sameBits(got.dg, again.dg) &&
              sameBits(got.dbeta, again.dbeta) && sameBits(got.dstate, again.dstate))
      << "a repeated run differs";

  const size_t state = size_t(p.hv) * p.dk * p.dv;
  for (int seq = 0; seq < int(p.lengths.size()); ++seq) {
    const Problem one = alone(p, seq);
    Cotangents oneCot;
    oneCot.dO = sequenceRows(cot.dO, p, seq, size_t(p.hv) * p.dv);
    oneCot.dFinal.assign(cot.dFinal.begin() + seq * state,
                         cot.dFinal.begin() + (seq + 1) * state);
    const Gradients<float> g = runBackward<C>(one, oneCot, scale, withFinal);
    EXPECT_TRUE(sameBits(g.dq, sequenceRows(got.dq, p, seq, size_t(p.h) * p.dk)) &&
                sameBits(g.dk, sequenceRows(got.dk, p, seq, size_t(p.h) * p.dk)) &&
                sameBits(g.dv, sequenceRows(got.dv, p, seq, size_t(p.hv) * p.dv)) &&
                sameBits(g.dg, sequenceRows(got.dg, p, seq, p.hv)) &&
                sameBits(g.dbeta, sequenceRows(got.dbeta, p, seq, p.hv)))
        << "sequence " << seq << ": packed gradients differ from alone";
    if (C::kHasInitialState) {
      EXPECT_TRUE(sameBits(g.dstate,
                           std::vector<float>(got.dstate.begin() + seq * state,
                                              got.dstate.begin() + (seq + 1) * state)))
          << "sequence " << seq << ": packed state gradient differs from alone";
    }
  }
}

TEST(DeltaRuleBackwardEmulation, EdgeLengthsGqaStates) {
  // GQA (one key head, two value heads): the finish kernel's group sum.
  checkBackward<Config<1, 2, 64, true>>({0, 1, 63, 64, 65, 130}, {2, 0, 1, 0, 3, 1},
                                        true, 1, true);
}

TEST(DeltaRuleBackwardEmulation, PaddedNoStates) {
  checkBackward<Config<1, 2, 64, false>>({65, 0, 1, 130}, {3, 5, 0, 62}, false, 2,
                                         false);
}

TEST(DeltaRuleBackwardEmulation, MhaFinalCotangentOnly) {
  checkBackward<Config<2, 2, 64, false>>({130, 0, 63}, {7, 1, 9}, true, 3, false);
}

TEST(DeltaRuleBackwardEmulation, HeadDim128) {
  // The GPU's shape: two m tiles of dS per warp, eight n tiles per warp.
  checkBackward<Config<1, 1, 128, true>>({70, 0}, {2, 0}, true, 4, false);
}

TEST(DeltaRuleBackwardEmulation, KeyAndValueDimsDiffer) {
  checkBackward<Config<1, 2, 64, true, 128>>({65, 3}, {1, 0}, true, 5, false);
  checkBackward<Config<1, 1, 128, true, 64>>({65, 3}, {}, true, 6, false);
}

/// The reverse scan with two staged chunks (one block per SM).
template <class Base> struct TwoStageConfig : Base {
  static constexpr int kBackwardRevStages = 2;
};

TEST(DeltaRuleBackwardEmulation, TwoStageReverseScan) {
  checkBackward<TwoStageConfig<Config<1, 2, 128, true>>>({130, 0, 65}, {1, 2, 0}, true, 9,
                                                         false);
}

/// The recomputation on the wgmma scan (kSave: no Q, no P; S stored by
/// TMA from staged boxes, Vnew through its staging tile), sm_90a's choice.
template <class Base> struct WgmmaRecomputationConfig : Base {
  static constexpr bool kScanWgmma = true;
};

TEST(DeltaRuleBackwardEmulation, WgmmaRecomputation) {
  checkBackward<WgmmaRecomputationConfig<Config<1, 2, 64, true>>>(
      {0, 1, 63, 64, 65, 130}, {2, 0, 1, 0, 3, 1}, true, 11, true);
  checkBackward<WgmmaRecomputationConfig<Config<1, 1, 128, true>>>({70, 0}, {2, 0}, true, 12,
                                                                   false);
}

/// The reverse scan on wgmma as well (dS^T in warpgroup accumulators).
template <class Base> struct WgmmaReverseConfig : WgmmaRecomputationConfig<Base> {
  static constexpr bool kReverseScanWgmma = true;
};

TEST(DeltaRuleBackwardEmulation, WgmmaReverseScan) {
  checkBackward<WgmmaReverseConfig<Config<1, 2, 64, true>>>(
      {0, 1, 63, 64, 65, 130}, {2, 0, 1, 0, 3, 1}, true, 13, true);
  checkBackward<WgmmaReverseConfig<Config<1, 1, 128, true>>>({70, 0, 200}, {2, 0, 0}, true, 14,
                                                             false);
  // K = 64, V = 128: two warpgroups, each 64 x 64 of the state gradient.
  checkBackward<WgmmaReverseConfig<Config<1, 2, 64, true, 128>>>({65, 3}, {1, 0}, true, 15,
                                                                 false);
}

/// The chunk gradients on wgmma as well (persistent, warp-specialised).
template <class Base> struct WgmmaChunkGradConfig : WgmmaReverseConfig<Base> {
  static constexpr bool kChunkGradWgmma = true;
};

TEST(DeltaRuleBackwardEmulation, WgmmaChunkGradients) {
  checkBackward<WgmmaChunkGradConfig<Config<1, 2, 64, true>>>(
      {0, 1, 63, 64, 65, 130}, {2, 0, 1, 0, 3, 1}, true, 16, true);
  checkBackward<WgmmaChunkGradConfig<Config<2, 4, 128, true>>>({70, 0, 130}, {2, 0, 0}, true, 17,
                                                               false);
  // K = 64, V = 128 and K = 128, V = 64: each warpgroup's half of K is 32
  // or 64 columns, the state tiles 64 or 128 rows.
  checkBackward<WgmmaChunkGradConfig<Config<1, 2, 64, true, 128>>>({65, 3}, {1, 0}, true, 18,
                                                                   false);
  checkBackward<WgmmaChunkGradConfig<Config<1, 1, 128, false, 64>>>({129}, {0}, false, 19,
                                                                    false);
}

// TMA coordinates are 32-bit: the wgmma chunk-gradient kernel's tensor
// maps refuse a packing whose saved states would pass 2^31 - 1 rows
// (slots x value heads x K) rather than wrap, and take one just below.
template <class Base> struct FusedConfig : WgmmaChunkGradConfig<Base> {
  static constexpr bool kFusedBackwardWgmma = true;
};

// The fused reverse kernel (K = V = 128): MHA writes dq and dk itself, GQA
// through per-value-head partials and their sums; a partial last chunk,
// empty sequences, padding, states.
TEST(DeltaRuleBackwardEmulation, FusedBackwardMha) {
  checkBackward<FusedConfig<Config<1, 1, 128, true>>>({70, 0, 130}, {2, 0, 1}, true, 21,
                                                      true);
}

TEST(DeltaRuleBackwardEmulation, FusedBackwardGqa) {
  checkBackward<FusedConfig<Config<1, 2, 128, true>>>({65, 3, 128}, {1, 0, 0}, true, 22,
                                                      true);
  checkBackward<FusedConfig<Config<1, 2, 128, false>>>({129}, {0}, false, 23, false);
}

TEST(DeltaRuleBackwardEmulation, ChunkGradMapsRefuseStateRowsPast32Bits) {
  using C = WgmmaChunkGradConfig<Config<1, 2, 64, true>>; // 128 state rows a slot
  const int32_t offsets[2] = {0, 0};
  auto encodeFor = [&](int32_t bufferTokens) {
    DeltaRuleBackwardArgs<C> args = {};
    args.packing = PackingView{offsets, nullptr, 1, bufferTokens};
    ChunkGradTensorMaps maps = {};
    return encodeChunkGradMaps(maps, args);
  };
  // slots = tokens / 64 + sequences + 1: 16777215 slots fit, 16777217 do not.
  EXPECT_EQ(encodeFor(64 * 16777213), cudaSuccess);
  EXPECT_EQ(encodeFor(64 * 16777215), cudaErrorInvalidValue);
}

/// dq, dk, dv in bf16 (what autograd returns for bf16 inputs).
template <class Base> struct Bf16GradientConfig : Base {
  using Gradient = __nv_bfloat16;
};

TEST(DeltaRuleBackwardEmulation, Bf16Gradients) {
  checkBackward<Bf16GradientConfig<Config<1, 2, 64, true>>>({65, 0, 1}, {1, 0, 2}, true, 8,
                                                            false);
  // What sm_90a's generated code runs for a bf16 program: the three wgmma
  // kernels writing bf16 gradients.
  checkBackward<Bf16GradientConfig<WgmmaChunkGradConfig<Config<2, 4, 128, true>>>>(
      {70, 0, 130}, {2, 0, 0}, true, 20, false);
  // The fused kernel with bf16 gradients: per-value-head partials in bf16.
  checkBackward<Bf16GradientConfig<FusedConfig<Config<2, 4, 128, true>>>>(
      {70, 0, 130}, {2, 0, 0}, true, 20, false);
}

/// The fused kernel with its per-value-head partials and the sum kernel,
/// instead of cluster sums (FusedClusterKeyGradSums).
template <class Base> struct NoClusterSumsConfig : Base {
  static constexpr bool kFusedClusterKeyGradSums = false;
};

// Two value heads a key head with bf16 gradients: the fused kernel's blocks
// run in clusters of two that sum dq and dk through each other's shared
// memory. The same bits as the partials and the sum kernel, stored by TMA
// (16-byte aligned) or per thread (not, and a partial chunk), with padding,
// an empty sequence, and split chains whose warm-up chunks store nothing
// (there the two heads' warm-ups differ in length: reading the peer's tile
// from this block's buffer instead of the peer's failed this case).
TEST(DeltaRuleBackwardEmulation, FusedClusterSumsEqualTheSumKernel) {
  using Cluster = Bf16GradientConfig<FusedConfig<Config<2, 4, 128, true>>>;
  using Kernel = NoClusterSumsConfig<Cluster>;
  static_assert(FusedClusterKeyGradSums<Cluster>::value &&
                !FusedClusterKeyGradSums<Kernel>::value);
  static_assert(!BackwardWorkspaceLayout<Cluster>::kPerValueHeadKeyGrads &&
                BackwardWorkspaceLayout<Kernel>::kPerValueHeadKeyGrads);
  std::mt19937 random(41);
  Problem p = makeProblem(2, 4, 128, 128, {70, 0, 130}, {2, 0, 1}, true, random);
  const Cotangents cot = makeCotangents(p, true, random);
  const float scale = 1.0f / std::sqrt(128.0f);
  BackwardSplit split;
  split.forwardSegmentChunks = 1;
  split.reverseSegmentChunks = 1;
  struct Case {
    const char *name;
    BackwardSplit split;
    size_t offset;
  } cases[] = {{"by TMA", {}, 0}, {"per thread", {}, 2}, {"split chains", split, 0}};
  for (const Case &c : cases) {
    const Gradients<float> got =
        runBackward<Cluster>(p, cot, scale, true, nullptr, c.split, c.offset);
    const Gradients<float> want =
        runBackward<Kernel>(p, cot, scale, true, nullptr, c.split, c.offset);
    EXPECT_TRUE(sameBits(got.dq, want.dq)) << c.name << ": dq";
    EXPECT_TRUE(sameBits(got.dk, want.dk)) << c.name << ": dk";
    EXPECT_TRUE(sameBits(got.dv, want.dv) && sameBits(got.dg, want.dg) &&
                sameBits(got.dbeta, want.dbeta) && sameBits(got.dstate, want.dstate))
        << c.name << ": dv, dg, dbeta or the initial states' gradient";
    bool finite = true;
    const Gradients<double> reference = referenceGradients(p, cot, scale);
    EXPECT_LE(relativeRms(got.dq, reference.dq, &finite), 8e-3) << c.name;
    EXPECT_LE(relativeRms(got.dk, reference.dk, &finite), 8e-3) << c.name;
    EXPECT_TRUE(finite) << c.name;
  }
}

// bf16 dq and dk at a 4-byte but not 16-byte alignment (a view into a
// larger buffer): the chunk kernel cannot store them by TMA and stores them
// per thread, with the same bits.
// The fused kernel stores a whole chunk's bf16 dv, dq and dk by TMA from
// staged tiles when all three are 16-byte aligned, and per thread
// otherwise (and for partial chunks), with the same bits either way.
TEST(DeltaRuleBackwardEmulation, FusedBf16StoresByTmaOrPerThread) {
  using C = Bf16GradientConfig<FusedConfig<Config<1, 1, 128, true>>>;
  std::mt19937 random(29);
  Problem p = makeProblem(1, 1, 128, 128, {70, 130}, {2, 0}, true, random);
  const Cotangents cot = makeCotangents(p, true, random);
  const float scale = 1.0f / std::sqrt(128.0f);
  auto tmaFor = [&](size_t offsetElements) {
    std::vector<__nv_bfloat16> buffer(64 * 128 + 8), values(64 * 128);
    const int32_t offsets[2] = {0, 64};
    DeltaRuleBackwardArgs<C> args = {};
    args.packing = PackingView{offsets, nullptr, 1, 64};
    args.dq = args.dk = buffer.data() + offsetElements;
    args.dv = values.data();
    FusedBackwardTensorMaps maps = {};
    EXPECT_EQ(encodeFusedBackwardMaps(maps, args), cudaSuccess);
    return maps.storesByTma;
  };
  EXPECT_EQ(tmaFor(0), 1);
  EXPECT_EQ(tmaFor(2), 0);
  const Gradients<float> aligned = runBackward<C>(p, cot, scale, true);
  const Gradients<float> offset = runBackward<C>(p, cot, scale, true, nullptr, {}, 2);
  EXPECT_TRUE(sameBits(aligned.dq, offset.dq)) << "dq";
  EXPECT_TRUE(sameBits(aligned.dk, offset.dk)) << "dk";
  EXPECT_TRUE(sameBits(aligned.dv, offset.dv)) << "dv";
}

TEST(DeltaRuleBackwardEmulation, Bf16GradientsUnalignedForTma) {
  using C = Bf16GradientConfig<WgmmaChunkGradConfig<Config<2, 4, 128, true>>>;
  std::mt19937 random(28);
  Problem p = makeProblem(2, 4, 128, 128, {70, 130}, {2, 0}, true, random);
  const Cotangents cot = makeCotangents(p, true, random);
  const float scale = 1.0f / std::sqrt(128.0f);
  // The maps say which way: TMA for a 16-byte aligned dq and dk only.
  auto tmaFor = [&](size_t offsetElements) {
    std::vector<__nv_bfloat16> buffer(64 * 2 * 128 + 8);
    const int32_t offsets[2] = {0, 64};
    DeltaRuleBackwardArgs<C> args = {};
    args.packing = PackingView{offsets, nullptr, 1, 64};
    args.dq = args.dk = buffer.data() + offsetElements;
    ChunkGradTensorMaps maps = {};
    EXPECT_EQ(encodeChunkGradMaps(maps, args), cudaSuccess);
    return maps.gradientsByTma;
  };
  EXPECT_EQ(tmaFor(0), 1);
  EXPECT_EQ(tmaFor(2), 0);
  const Gradients<float> aligned = runBackward<C>(p, cot, scale, true);
  const Gradients<float> offset = runBackward<C>(p, cot, scale, true, nullptr, {}, 2);
  EXPECT_TRUE(sameBits(aligned.dq, offset.dq)) << "dq";
  EXPECT_TRUE(sameBits(aligned.dk, offset.dk)) << "dk";
  EXPECT_TRUE(sameBits(aligned.dv, offset.dv)) << "dv";
}

/// relativeRms, failing the test on a value that is not finite.
double finiteRms(const std::vector<float> &got, const std::vector<double> &want) {
  bool finite = true;
  const double error = relativeRms(got, want, &finite);
  EXPECT_TRUE(finite) << "a gradient is not finite";
  return error;
}

/// The largest relative RMS of dq, dk, dv and the initial states' gradient
/// against `want`; dg and dbeta (looser tolerances) apart.
double keyError(const Gradients<float> &got, const Gradients<double> &want) {
  return std::max({finiteRms(got.dq, want.dq), finiteRms(got.dk, want.dk),
                   finiteRms(got.dv, want.dv), finiteRms(got.dstate, want.dstate)});
}

/// The gradients of `got` against `want` (relative RMS of each), the
/// largest of them.
double largestDifference(const Gradients<float> &got, const Gradients<float> &want,
                         const char *what) {
  double largest = 0;
  std::printf("  %s:", what);
  for (auto [name, a, b] :
       {std::tuple{"dq", &got.dq, &want.dq}, std::tuple{"dk", &got.dk, &want.dk},
        std::tuple{"dv", &got.dv, &want.dv}, std::tuple{"dg", &got.dg, &want.dg},
        std::tuple{"dbeta", &got.dbeta, &want.dbeta},
        std::tuple{"dstate", &got.dstate, &want.dstate}}) {
    if (a->empty())
      continue;
    const double difference = finiteRms(*a, std::vector<double>(b->begin(), b->end()));
    std::printf(" %s %.2e", name, difference);
    largest = std::max(largest, difference);
  }
  std::printf("\n");
  return largest;
}

bool sameGradients(const Gradients<float> &a, const Gradients<float> &b) {
  return sameBits(a.dq, b.dq) && sameBits(a.dk, b.dk) && sameBits(a.dv, b.dv) &&
         sameBits(a.dg, b.dg) && sameBits(a.dbeta, b.dbeta) && sameBits(a.dstate, b.dstate);
}

// Split chains in both scans (segments of different lengths, so that their
// boundaries differ) against the recurrence's gradients and against the
// unsplit backward. The benchmark's gates decay about e^-16 per chunk, so
// warm-ups are a chunk or two and leave out at most 2^-24 of a state or
// state gradient: the gradients move by bf16 rounding noise of the saved
// states at most.
/// `C` with split chains (recomputation segments of 2 chunks, reverse-scan
/// segments of 3) against the reference on a pack with a long sequence;
/// with `againstUnsplit`, also within 1e-4 of the unsplit run, and not
/// equal to it (some segment warmed up).
template <class C>
void checkSplitAgainstReference(unsigned seed, const char *what, bool againstUnsplit) {
  std::mt19937 random(seed);
  const Problem p = makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK, C::kHeadDimV,
                                {300, 0, 65}, {1, 2, 0}, true, random);
  const Cotangents cot = makeCotangents(p, true, random);
  const Gradients<double> want = referenceGradients(p, cot, 0.125f);
  BackwardSplit split;
  split.forwardSegmentChunks = 2;
  split.reverseSegmentChunks = 3;
  const Gradients<float> got = runBackward<C>(p, cot, 0.125f, true, nullptr, split);
  const double keys = keyError(got, want);
  const double gates = std::max(finiteRms(got.dg, want.dg), finiteRms(got.dbeta, want.dbeta));
  std::printf("  %s, split: dq, dk, dv, dstate %.2e; dg, dbeta %.2e\n", what, keys, gates);
  EXPECT_LE(keys, 8e-3);
  EXPECT_LE(gates, 2e-2);
  if (!againstUnsplit)
    return;
  const Gradients<float> whole = runBackward<C>(p, cot, 0.125f, true);
  EXPECT_LT(largestDifference(got, whole, "split against unsplit"), 1e-4);
  EXPECT_FALSE(sameGradients(got, whole)) << "no segment warmed up";
}

// The wgmma recomputation with split chains: a segment saves S and Vn of
// its own chunks only, after warming its state up.
TEST(DeltaRuleBackwardSplit, WgmmaRecomputationSegments) {
  checkSplitAgainstReference<WgmmaRecomputationConfig<Config<1, 2, 64, true>>>(
      32, "wgmma recomputation", false);
}

// The wgmma reverse scan with split chains: a segment warms its state
// gradient up over the chunks after it and writes its own chunks only.
TEST(DeltaRuleBackwardSplit, WgmmaReverseScanSegments) {
  checkSplitAgainstReference<WgmmaReverseConfig<Config<1, 2, 64, true>>>(
      33, "wgmma reverse scan", true);
}

// All three kernels on wgmma, as generated code runs them on sm_90a: the
// chunk gradients read the segments' S and dS' like any others.
TEST(DeltaRuleBackwardSplit, WgmmaChunkGradientsWithSegments) {
  checkSplitAgainstReference<WgmmaChunkGradConfig<Config<1, 2, 64, true>>>(
      34, "wgmma chunk gradients", true);
}

// The fused kernel with split chains: warm-up chunks run the chain and the
// carrier only, then the segment's own chunks everything.
TEST(DeltaRuleBackwardSplit, FusedBackwardSegments) {
  checkSplitAgainstReference<FusedConfig<Config<1, 2, 128, true>>>(35, "fused backward", true);
}

TEST(DeltaRuleBackwardSplit, SegmentsAgainstReferenceAndUnsplit) {
  using C = Config<1, 2, 64, true>;
  std::mt19937 random(31);
  const Problem p = makeProblem(1, 2, 64, 64, {450, 0, 1, 260, 64},
                                {1, 2, 0, 3, 1}, true, random);
  const Cotangents cot = makeCotangents(p, true, random);
  const float scale = 0.125f;
  const Gradients<double> want = referenceGradients(p, cot, scale);
  const Gradients<float> whole = runBackward<C>(p, cot, scale, true);
  BackwardSplit split;
  split.forwardSegmentChunks = 2;
  split.reverseSegmentChunks = 3;
  const Gradients<float> got = runBackward<C>(p, cot, scale, true, nullptr, split);
  const double toReference = keyError(got, want);
  const double gatesToReference =
      std::max(finiteRms(got.dg, want.dg), finiteRms(got.dbeta, want.dbeta));
  std::printf("  split against the reference: dq, dk, dv, dstate %.2e; dg, dbeta %.2e\n",
              toReference, gatesToReference);
  EXPECT_LE(toReference, 8e-3);
  EXPECT_LE(gatesToReference, 2e-2);
  EXPECT_LT(largestDifference(got, whole, "split against unsplit"), 1e-4);
  EXPECT_FALSE(sameGradients(got, whole)) << "no segment warmed up";
  // Deterministic: the same bits again.
  EXPECT_TRUE(sameGradients(got, runBackward<C>(p, cot, scale, true, nullptr, split)));
}

// Where the bound never falls to the limit (limit -inf, or gates that do
// not decay), every segment walks from its sequence's start (the forward)
// or end (the reverse scan): the split backward is the unsplit one bit for
// bit, which checks that the segments cover every chunk exactly once.
TEST(DeltaRuleBackwardSplit, WithoutWarmupEverySegmentIsExact) {
  using C = Config<1, 2, 64, true>;
  std::mt19937 random(32);
  Problem p = makeProblem(1, 2, 64, 64, {300, 0, 65, 1}, {1, 0, 2, 0}, true, random);
  const Cotangents cot = makeCotangents(p, true, random);
  for (bool decays : {true, false}) {
    if (!decays)
      std::fill(p.g.begin(), p.g.end(), 0.0f);
    BackwardSplit split;
    split.forwardSegmentChunks = 2;
    split.reverseSegmentChunks = 2;
    split.warmupLogBound = decays ? -INFINITY : kDefaultWarmupLogBound;
    EXPECT_TRUE(sameGradients(runBackward<C>(p, cot, 0.125f, true, nullptr, split),
                              runBackward<C>(p, cot, 0.125f, true)))
        << (decays ? "limit -inf" : "no decay") << ": split differs from unsplit";
  }
}

// Slow gates (about e^-2 per chunk), against the float64 gradients, each
// scan split alone. With a loose limit (e^-1.5) warm-ups of a chunk leave
// out a visible part of the state (forward) or state gradient (reverse);
// with the default one they run about nine chunks and the error is the
// unsplit backward's. Shows that both warm-ups stop where the bound says.
TEST(DeltaRuleBackwardSplit, TruncationStaysWithinTheLimit) {
  using C = Config<1, 2, 64, true>;
  std::mt19937 random(33);
  Problem p = makeProblem(1, 2, 64, 64, {700}, {0}, true, random);
  for (float &g : p.g)
    g /= 8.0f;
  const Cotangents cot = makeCotangents(p, true, random);
  const float scale = 0.125f;
  const Gradients<double> want = referenceGradients(p, cot, scale);
  auto error = [&](const Gradients<float> &got) { return keyError(got, want); };
  const double wholeError = error(runBackward<C>(p, cot, scale, true));
  for (bool reverse : {false, true})
    for (float limit : {-1.5f, kDefaultWarmupLogBound}) {
      BackwardSplit split;
      (reverse ? split.reverseSegmentChunks : split.forwardSegmentChunks) = 2;
      split.warmupLogBound = limit;
      const double got = error(runBackward<C>(p, cot, scale, true, nullptr, split));
      std::printf("  %s scan split, limit %.1f: relative RMS %.2e (unsplit %.2e)\n",
                  reverse ? "reverse" : "forward", limit, got, wholeError);
      if (limit == -1.5f) {
        EXPECT_GT(got, 1.2 * wholeError) << "no warm-up stopped early";
        EXPECT_LT(got, std::exp(limit));
      } else {
        EXPECT_LT(got, 1.02 * wholeError);
      }
    }
}

// The host's choice for each scan: the forward recomputation at V tile 128
// (one block per head) splits a pack of one long sequence into more
// segments than the reverse scan (two tiles per head, two blocks per SM).
TEST(DeltaRuleBackwardSplit, SegmentLengthsFromTheSmCount) {
  using C = Config<16, 32, 128, true>;
  const std::vector<int32_t> one = {0, 32768}, eight = {0, 4096, 8192, 12288, 16384,
                                                       20480, 24576, 28672, 32768};
  DeltaRuleBackwardArgs<C> args = {};
  args.packing = PackingView{one.data(), nullptr, 1, 32768};
  deltaRuleBackwardSplit(args, 132);
  EXPECT_EQ(args.forwardSegmentChunks, 128); // 32 blocks -> 4 segments each
  EXPECT_EQ(args.reverseSegmentChunks, 128); // 64 blocks on 264 -> 4 each
  args.packing = PackingView{eight.data(), nullptr, 8, 32768};
  deltaRuleBackwardSplit(args, 132);
  EXPECT_EQ(args.forwardSegmentChunks, 0); // 256 blocks fill 132 SMs
  EXPECT_EQ(args.reverseSegmentChunks, 0);
}

// The fused kernel's per-chunk maps (S at 256 state rows a slot here) are
// refused past 32-bit rows as the chunk kernel's are.
TEST(DeltaRuleBackwardEmulation, FusedMapsRefuseStateRowsPast32Bits) {
  using C = FusedConfig<Config<1, 2, 128, true>>;
  const int32_t offsets[2] = {0, 0};
  auto encodeFor = [&](int32_t bufferTokens) {
    DeltaRuleBackwardArgs<C> args = {};
    args.packing = PackingView{offsets, nullptr, 1, bufferTokens};
    FusedBackwardTensorMaps maps = {};
    return encodeFusedBackwardMaps(maps, args);
  };
  // slots = tokens / 64 + sequences + 1: 8388607 slots fit, 8388608 do not.
  EXPECT_EQ(encodeFor(64 * 8388605), cudaSuccess);
  EXPECT_EQ(encodeFor(64 * 8388606), cudaErrorInvalidValue);
}

TEST(DeltaRuleBackwardEmulation, InvalidPackingGivesNaN) {
  using C = Config<1, 2, 64, true>;
  std::mt19937 random(7);
  Problem p = makeProblem(1, 2, 64, 64, {5, 70}, {1, 0}, true, random);
  const Cotangents cot = makeCotangents(p, true, random);
  gdn_status_t status = {};
  status.code = GDN_STATUS_DECREASING;
  const Gradients<float> got = runBackward<C>(p, cot, 0.125f, true, &status);
  for (const std::vector<float> *x :
       {&got.dq, &got.dk, &got.dv, &got.dg, &got.dbeta, &got.dstate})
    for (float value : *x)
      ASSERT_TRUE(std::isnan(value));
}

// The same through the fused kernel and its group sums (GQA).
TEST(DeltaRuleBackwardEmulation, FusedInvalidPackingGivesNaN) {
  using C = FusedConfig<Config<1, 2, 128, true>>;
  std::mt19937 random(7);
  Problem p = makeProblem(1, 2, 128, 128, {5, 70}, {1, 0}, true, random);
  const Cotangents cot = makeCotangents(p, true, random);
  gdn_status_t status = {};
  status.code = GDN_STATUS_DECREASING;
  const Gradients<float> got = runBackward<C>(p, cot, 1.0f / std::sqrt(128.0f), true, &status);
  for (const std::vector<float> *x :
       {&got.dq, &got.dk, &got.dv, &got.dg, &got.dbeta, &got.dstate})
    for (float value : *x)
      ASSERT_TRUE(std::isnan(value));
}

} // namespace
