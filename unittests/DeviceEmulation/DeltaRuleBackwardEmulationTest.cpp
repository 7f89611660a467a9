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

#include <cstring>
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

/// Runs the five backward kernels on `p` in the emulator. Outputs start as
/// a sentinel so that rows no thread writes are caught.
template <class C>
Gradients<float> runBackward(const Problem &p, const Cotangents &cot, float scale,
                             bool withFinal, const gdn_status_t *status = nullptr) {
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
  std::vector<G> dq(std::max<size_t>(p.q.size(), 1), Element<G>::store(kSentinel)),
      dk(dq.size(), Element<G>::store(kSentinel)),
      dv(std::max<size_t>(p.v.size(), 1), Element<G>::store(kSentinel));
  Gradients<float> g;
  g.dg.assign(std::max<size_t>(p.g.size(), 1), kSentinel);
  g.dbeta.assign(g.dg.size(), kSentinel);
  g.dstate.assign(std::max<size_t>(p.state0.size(), 1), kSentinel);

  PackingView packing{p.cu.data(), padded ? p.cuPadded.data() : nullptr, n,
                      p.tokens};
  std::vector<uint4> workspace(
      DeltaRuleBackwardWorkspace::bytes(packing, C::kValueHeads, C::kHeadDimK,
                                        C::kHeadDimV) /
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
  args.dq = dq.data();
  args.dk = dk.data();
  args.dv = dv.data();
  args.dg = g.dg.data();
  args.dbeta = g.dbeta.data();
  args.dInitialState = C::kHasInitialState ? g.dstate.data() : nullptr;
  args.scale = scale;
  args.packing = packing;
  args.status = status;
  args.workspace = DeltaRuleBackwardWorkspace::carve(
      workspace.data(), packing, C::kValueHeads, C::kHeadDimK, C::kHeadDimV);

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

  emulation::setCopyOwnership(false);
  emulation::setCopySource(q.data(), q.data() + q.size());
  emulation::addCopySource(k.data(), k.data() + k.size());
  emulation::addCopySource(v.data(), v.data() + v.size());
  emulation::addCopySource(dO.data(), dO.data() + dO.size());
  emulation::addCopySource(workspace.data(), workspace.data() + workspace.size());
  const unsigned slots = static_cast<unsigned>(DeltaRuleWorkspace::slots(packing));
  emulation::runGrid(dim3{slots, unsigned(C::kValueHeads / S::kPrepareHeads), 1},
                     S::kThreads, [&] { deltaChunkPrepareKernel<C>(forward); });
  emulation::runGrid(dim3{unsigned(n * C::kValueHeads * S::kValueTiles), 1, 1},
                     S::kScanThreads, [&] { deltaChunkScanKernel<C, true>(forward); });
  emulation::runGrid(dim3{unsigned(n * C::kValueHeads * B::kRevTiles), 1, 1}, B::kThreads,
                     [&] { deltaChunkReverseScanKernel<C>(args); });
  emulation::runGrid(dim3{slots, unsigned(C::kKeyHeads), 1}, B::kThreads,
                     [&] { deltaChunkGradKernel<C>(args); });
  emulation::runGrid(dim3{4, 1, 1}, 64, [&] { deltaRuleBackwardFinishKernel<C>(args); });
  emulation::setCopyOwnership(true);

  auto toFloat = [](const std::vector<G> &x, size_t count) {
    std::vector<float> y(count);
    for (size_t i = 0; i < count; ++i)
      y[i] = Element<G>::load(x[i]);
    return y;
  };
  g.dq = toFloat(dq, p.q.size());
  g.dk = toFloat(dk, p.k.size());
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

/// dq, dk, dv in bf16 (what autograd returns for bf16 inputs).
template <class Base> struct Bf16GradientConfig : Base {
  using Gradient = __nv_bfloat16;
};

TEST(DeltaRuleBackwardEmulation, Bf16Gradients) {
  checkBackward<Bf16GradientConfig<Config<1, 2, 64, true>>>({65, 0, 1}, {1, 0, 2}, true, 8,
                                                            false);
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

} // namespace
