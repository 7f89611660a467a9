//===- BackwardEmulationTest.cpp - the backward kernels on host threads ---===//
//
// Runs the real backward kernel bodies (kernels/include/gdn/device/
// prologue_backward.cuh and epilogue_backward.cuh, and the fixed-order sum
// of backward_common.cuh) under the device emulator and compares every
// gradient with gdn-run's own rules (BackwardOracle.h): conv widths 1-4;
// 16- and 8-byte vectors; fp32 and bf16 storage; every pack of up to 3
// sequences of length 0-3 (with and without padding; up to 2 sequences at
// every row-block count), and random packs up to 40 rows; initial and final
// conv states, bias, beta = 2 sigmoid(b); invalid metadata (every gradient
// NaN); dmixed, db and da written as the columns of one stacked tensor.
// The configurations leave threads inactive (channels that do not fill
// the last block) and normalise heads of 1, 2 and 4 lanes through warp
// shuffles. The epilogue, forward and backward, on rows that do not fill
// the last pass of a block, at several block counts, with z in x's type or
// in fp32, and dz written into a stacked tensor. The standalone L2 norm and its
// cotangent (l2norm.cuh) on rows shorter, as long as and longer than a warp,
// more rows than warps, a zero row.
//
//===----------------------------------------------------------------------===//

#include "BackwardOracle.h"
#include "DeviceEmulator.h"
#include "PackCases.h"

#include "gdn/device/epilogue.cuh"
#include "gdn/device/epilogue_backward.cuh"
#include "gdn/device/l2norm.cuh"
#include "gdn/device/prologue_backward.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace gdn::device;

namespace {

template <typename T, int Width, int VectorBytes, bool States, bool Bias,
          int RowsInFlight = 3, typename Input = T>
struct Config {
  using Activation = T;
  using ConvInput = Input;
  using ConvWeight = T;
  using ConvState = T;
  using GateInput = T;
  using GateParam = float;
  using ActivationGrad = T;
  using ConvStateGrad = T;
  using GateInputGrad = T;
  using ConvWeightGrad = T;
  using GateParamGrad = float;
  // 24 channels: q and k heads of 8, v heads of 4.
  static constexpr int kKeyHeads = 1, kValueHeads = 2, kHeadDimK = 8,
                       kHeadDimV = 4;
  static constexpr int kConvWidth = Width, kVectorBytes = VectorBytes,
                       kThreads = 4, kMinBlocksPerSM = 1,
                       kRowsInFlight = RowsInFlight, kRowBlocks = 64,
                       kGateBlocks = 4;
  static constexpr bool kSilu = true, kHasBias = Bias,
                        kHasInitialState = States && Width > 1,
                        kHasFinalState = States && Width > 1, kNegEigval = Bias;
  static constexpr float kNormEps = 1e-6f;
};

/// `Base` with dmixed, db and da written as the columns [0, C), [C, C + HV)
/// and [C + HV, C + 2 HV) of one tensor whose rows are 32 elements apart
/// (C = 24, HV = 2, 4 columns unused): the stacked cotangent of the input
/// projections that one gradient GEMM reads.
template <class Base> struct StackedGrads : Base {
  static constexpr int64_t kMixedGradRowStride = 32, kGateGradRowStride = 32;
};

using gdn::emulation_tests::Pack;

/// Storage of one tensor: the kernel's elements and the values they hold
/// (what the oracle sees).
template <typename T> struct Stored {
  std::vector<T> elements;
  std::vector<double> values;
};

template <typename T>
Stored<T> randomStored(size_t size, std::mt19937 &random, float scale = 2.0f) {
  std::uniform_real_distribution<float> uniform(-scale, scale);
  Stored<T> out;
  out.elements.resize(std::max<size_t>(size, 1));
  out.values.resize(size);
  for (size_t i = 0; i < out.elements.size(); ++i) {
    out.elements[i] = Element<T>::store(uniform(random));
    if (i < size)
      out.values[i] = Element<T>::load(out.elements[i]);
  }
  return out;
}

constexpr float kUnwritten = 7777.0f;

/// Compares a gradient with the oracle's: every element written, within
/// `tolerance` of |want| plus the tensor's RMS; all NaN when `invalid`.
template <typename T>
void compare(const std::vector<T> &got, const std::vector<double> &want,
             const char *what, bool invalid, double tolerance,
             std::string &mismatch) {
  double rms = 0.0;
  for (double value : want)
    rms += value * value;
  rms = want.empty() ? 0.0 : std::sqrt(rms / want.size());
  for (size_t i = 0; i < want.size() && mismatch.empty(); ++i) {
    const float value = Element<T>::load(got[i]);
    const bool good =
        invalid ? std::isnan(value)
                : value != kUnwritten &&
                      std::fabs(value - want[i]) <=
                          tolerance * (std::fabs(want[i]) + rms) + 1e-30;
    if (!good)
      mismatch = std::string(what) + "[" + std::to_string(i) +
                 "] = " + std::to_string(value) + ", expected " +
                 std::to_string(want[i]);
  }
}

template <class C>
std::string runPrologueCase(const Pack &pack, int rowBlocks, int gateBlocks,
                            double tolerance, std::mt19937 &random) {
  using S = PrologueBackwardShape<C>;
  using T = typename C::Activation;
  constexpr int kW = C::kConvWidth, kHistory = kW - 1;
  constexpr int kKeyDim = S::kKeyDim, kChannels = S::kChannels;
  constexpr int kValueDim = kChannels - 2 * kKeyDim, kHeads = C::kValueHeads;
  const int n = static_cast<int>(pack.lengths.size());
  std::vector<int32_t> cu(n + 1, 0), cuPadded(n + 1, 0), tokenSeq;
  for (int i = 0; i < n; ++i) {
    cu[i + 1] = cu[i] + pack.lengths[i];
    cuPadded[i + 1] =
        cuPadded[i] + pack.lengths[i] + (pack.padded ? pack.padding[i] : 0);
    for (int j = 0; j < cuPadded[i + 1] - cuPadded[i]; ++j)
      tokenSeq.push_back(j < pack.lengths[i] ? i : -1);
  }
  const int tokens = static_cast<int>(tokenSeq.size());
  const size_t stateSize = size_t(n) * kChannels * std::max(kHistory, 1);
  auto mixed =
      randomStored<typename C::ConvInput>(size_t(tokens) * kChannels, random);
  auto weight = randomStored<T>(kChannels * kW, random);
  auto bias = randomStored<T>(kChannels, random);
  auto initial = randomStored<T>(stateSize, random);
  auto a = randomStored<T>(size_t(tokens) * kHeads, random, 4.0f);
  auto b = randomStored<T>(size_t(tokens) * kHeads, random, 4.0f);
  auto aLog = randomStored<float>(kHeads, random, 1.0f);
  auto dtBias = randomStored<float>(kHeads, random, 1.0f);
  auto dq = randomStored<T>(size_t(tokens) * kKeyDim, random);
  auto dk = randomStored<T>(size_t(tokens) * kKeyDim, random);
  auto dv = randomStored<T>(size_t(tokens) * kValueDim, random);
  auto dg = randomStored<float>(size_t(tokens) * kHeads, random);
  auto dbeta = randomStored<float>(size_t(tokens) * kHeads, random);
  auto dfinal = randomStored<T>(stateSize, random);
  // A gate input above softplus's threshold of 20.
  if (tokens > 0) {
    a.elements[0] = Element<T>::store(24.0f);
    a.values[0] = Element<T>::load(a.elements[0]);
  }

  // Gradients start as a sentinel, so an element no thread writes shows.
  auto output = [](size_t size) {
    return std::vector<T>(std::max<size_t>(size, 1),
                          Element<T>::store(kUnwritten));
  };
  std::vector<T> dmixed = output(size_t(tokens) * kChannels),
                 dinitial = output(stateSize),
                 da = output(size_t(tokens) * kHeads),
                 db = output(size_t(tokens) * kHeads);
  std::vector<T> dweight = output(kChannels * kW), dbias = output(kChannels);
  std::vector<float> daLog(kHeads, kUnwritten), ddtBias(kHeads, kUnwritten);
  // With row strides (StackedGrads) the kernels write dmixed, db and da into
  // the columns of one stacked tensor instead, compared below column by
  // column; its unused columns must keep the sentinel.
  constexpr int64_t kStride = S::kMixedGradRowStride;
  constexpr bool kStacked = kStride != kChannels;
  static_assert(!kStacked || (S::kGateGradRowStride == kStride &&
                              kStride >= kChannels + 2 * kHeads),
                "StackedGrads: dmixed, db, da side by side in one row");
  std::vector<T> stacked = output(kStacked ? size_t(tokens) * kStride : 0);
  std::vector<float> convPartials(size_t(rowBlocks) * kChannels * kW, NAN),
      biasPartials(size_t(rowBlocks) * kChannels, NAN),
      gatePartials(size_t(gateBlocks) * 2 * kHeads, NAN);
  // The kernel checks the offsets itself and writes the status the later
  // kernels read: invalid metadata is a wrong first offset here.
  gdn_status_t status = {};
  status.code = -1; // neither OK nor a violation until the kernel writes it
  if (pack.invalid)
    cu[0] = 1;

  PrologueBackwardArgs<C> args = {};
  args.mixed = mixed.elements.data();
  args.weight = weight.elements.data();
  args.bias = C::kHasBias ? bias.elements.data() : nullptr;
  args.initialState = C::kHasInitialState ? initial.elements.data() : nullptr;
  args.a = a.elements.data();
  args.b = b.elements.data();
  args.aLog = aLog.elements.data();
  args.dtBias = dtBias.elements.data();
  args.dq = dq.elements.data();
  args.dk = dk.elements.data();
  args.dv = dv.elements.data();
  args.dg = dg.elements.data();
  args.dbeta = dbeta.elements.data();
  args.dfinalState = C::kHasFinalState ? dfinal.elements.data() : nullptr;
  args.dmixed = kStacked ? stacked.data() : dmixed.data();
  args.dweight = dweight.data();
  args.dbias = C::kHasBias ? dbias.data() : nullptr;
  args.dinitialState = C::kHasInitialState ? dinitial.data() : nullptr;
  args.da = kStacked ? stacked.data() + kChannels + kHeads : da.data();
  args.db = kStacked ? stacked.data() + kChannels : db.data();
  args.daLog = daLog.data();
  args.ddtBias = ddtBias.data();
  args.packing = {cu.data(), pack.padded ? cuPadded.data() : nullptr, n,
                  tokens};
  args.metadata = {&status};
  args.convPartials = convPartials.data();
  args.biasPartials = C::kHasBias ? biasPartials.data() : nullptr;
  args.gatePartials = gatePartials.data();

  emulation::setCopySource(mixed.elements.data(),
                           mixed.elements.data() + size_t(tokens) * kChannels);
  emulation::addCopySource(dq.elements.data(),
                           dq.elements.data() + size_t(tokens) * kKeyDim);
  emulation::addCopySource(dk.elements.data(),
                           dk.elements.data() + size_t(tokens) * kKeyDim);
  emulation::addCopySource(dv.elements.data(),
                           dv.elements.data() + size_t(tokens) * kValueDim);
  // Each with the dynamic shared memory launchPrologueBackward reserves.
  emulation::runGrid(dim3{unsigned(S::kChannelBlocks), unsigned(rowBlocks), 1},
                     C::kThreads, [&] { prologueBackwardKernel<C>(args); },
                     S::kSharedBytes);
  emulation::runGrid(dim3{unsigned(gateBlocks), 1, 1}, C::kThreads,
                     [&] { gatesBackwardKernel<C>(args); },
                     S::kGateSharedBytes);
  int count = 0;
  PartialSums job = prologueBackwardSums(args, rowBlocks, gateBlocks, count);
  emulation::runGrid(dim3{2, unsigned(count), 1}, 8,
                     [&] { sumPartialsKernel(job); });

  if (kStacked)
    for (int t = 0; t < tokens; ++t) {
      const T *row = stacked.data() + size_t(t) * kStride;
      std::copy(row, row + kChannels, dmixed.begin() + size_t(t) * kChannels);
      std::copy(row + kChannels, row + kChannels + kHeads,
                db.begin() + size_t(t) * kHeads);
      std::copy(row + kChannels + kHeads, row + kChannels + 2 * kHeads,
                da.begin() + size_t(t) * kHeads);
      for (int64_t c = kChannels + 2 * kHeads; c < kStride; ++c)
        if (Element<T>::load(row[c]) !=
            Element<T>::load(Element<T>::store(kUnwritten)))
          return "row " + std::to_string(t) +
                 " of the stacked gradients: column " + std::to_string(c) +
                 " (none of dmixed, db, da) was written";
    }
  const int32_t expectedCode =
      pack.invalid ? GDN_STATUS_FIRST_NOT_ZERO : GDN_STATUS_OK;
  if (status.code != expectedCode)
    return "status " + std::to_string(status.code) + ", expected " +
           std::to_string(expectedCode);
  std::string mismatch;
  const bool invalid = pack.invalid;
  gdn::test::PrologueGradients want;
  if (!invalid) {
    gdn::test::PrologueProblem problem;
    problem.keyHeads = C::kKeyHeads;
    problem.valueHeads = C::kValueHeads;
    problem.headDimK = C::kHeadDimK;
    problem.headDimV = C::kHeadDimV;
    problem.width = kW;
    problem.silu = C::kSilu;
    problem.negEigval = C::kNegEigval;
    problem.normEps = C::kNormEps;
    problem.cuSeqlens.assign(cu.begin(), cu.end());
    if (pack.padded)
      problem.cuPadded.assign(cuPadded.begin(), cuPadded.end());
    problem.mixed = mixed.values;
    problem.weight = weight.values;
    if (C::kHasBias)
      problem.bias = bias.values;
    if (C::kHasInitialState)
      problem.initialState = initial.values;
    problem.a = a.values;
    problem.b = b.values;
    problem.aLog = aLog.values;
    problem.dtBias = dtBias.values;
    problem.dq = dq.values;
    problem.dk = dk.values;
    problem.dv = dv.values;
    problem.dg = dg.values;
    problem.dbeta = dbeta.values;
    if (C::kHasFinalState)
      problem.dfinalState = dfinal.values;
    want = gdn::test::prologueGradients(problem);
  } else {
    // Only the shapes matter: every element must be NaN.
    want.dmixed.assign(size_t(tokens) * kChannels, 0.0);
    want.dweight.assign(kChannels * kW, 0.0);
    want.dbias.assign(C::kHasBias ? kChannels : 0, 0.0);
    want.dinitialState.assign(C::kHasInitialState ? stateSize : 0, 0.0);
    want.da.assign(size_t(tokens) * kHeads, 0.0);
    want.db.assign(size_t(tokens) * kHeads, 0.0);
    want.daLog.assign(kHeads, 0.0);
    want.ddtBias.assign(kHeads, 0.0);
  }
  compare(dmixed, want.dmixed, "dmixed", invalid, tolerance, mismatch);
  compare(dweight, want.dweight, "dweight", invalid, tolerance, mismatch);
  if (C::kHasBias)
    compare(dbias, want.dbias, "dbias", invalid, tolerance, mismatch);
  if (C::kHasInitialState)
    compare(dinitial, want.dinitialState, "dinitial", invalid, tolerance,
            mismatch);
  compare(da, want.da, "da", invalid, tolerance, mismatch);
  compare(db, want.db, "db", invalid, tolerance, mismatch);
  compare(daLog, want.daLog, "dA_log", invalid, tolerance, mismatch);
  compare(ddtBias, want.ddtBias, "ddt_bias", invalid, tolerance, mismatch);
  return mismatch;
}

/// Every pack of up to `maxSeqs` sequences of length 0-3 (padding 0-1 when
/// padded), at every row-block count when it has at most `everyCountSeqs`
/// sequences (else 1 and one row per block), then random packs.
template <class C>
void runAll(int maxSeqs, int everyCountSeqs, int randomPacks,
            double tolerance) {
  std::mt19937 random(4321);
  auto check = [&](const Pack &pack, bool everyRowBlockCount) {
    const int most = std::max(1, pack.bufferTokens());
    for (int rowBlocks = 1; rowBlocks <= most; ++rowBlocks) {
      if (!everyRowBlockCount && rowBlocks > 1 && rowBlocks < most)
        continue;
      const int gateBlocks = 1 + rowBlocks % 3;
      std::string mismatch =
          runPrologueCase<C>(pack, rowBlocks, gateBlocks, tolerance, random);
      ASSERT_TRUE(mismatch.empty())
          << gdn::emulation_tests::describe(pack, rowBlocks) << ": "
          << mismatch;
    }
  };
  if (!gdn::emulation_tests::forEachSmallPack(
          maxSeqs, [&](const Pack &pack, int n) {
            check(pack, n <= everyCountSeqs);
            return !::testing::Test::HasFatalFailure();
          }))
    return;
  std::uniform_int_distribution<int> blocks(1, 7);
  for (int i = 0; i < randomPacks; ++i) {
    const Pack pack = gdn::emulation_tests::randomPack(random);
    for (int rowBlocks :
         {1, blocks(random), std::max(1, pack.bufferTokens() / 3)}) {
      std::string mismatch = runPrologueCase<C>(
          pack, rowBlocks, 1 + rowBlocks % 4, tolerance, random);
      ASSERT_TRUE(mismatch.empty())
          << gdn::emulation_tests::describe(pack, rowBlocks) << ": "
          << mismatch;
    }
  }
}

// Storage, width, vector bytes, states, bias[, rows in flight].
TEST(PrologueBackwardEmulation, Width4) {
  runAll<Config<float, 4, 16, true, true>>(3, 2, 30, 1e-4);
}
TEST(PrologueBackwardEmulation, Width4EightByteVectorsNoStates) {
  runAll<Config<float, 4, 8, false, false, 1>>(2, 1, 20, 1e-4);
}
TEST(PrologueBackwardEmulation, Width3) {
  runAll<Config<float, 3, 16, true, false>>(2, 1, 20, 1e-4);
}
TEST(PrologueBackwardEmulation, Width2EightByteVectors) {
  runAll<Config<float, 2, 8, true, true, 8>>(2, 1, 20, 1e-4);
}
TEST(PrologueBackwardEmulation, Width1) {
  runAll<Config<float, 1, 16, false, true>>(2, 0, 10, 1e-4);
}
// bf16 storage: inputs, cotangents and gradients rounded to 8 bits of
// mantissa, one 16-byte vector of 8 channels per thread (q/k heads of one
// lane) and 8-byte vectors of 4 (two lanes).
TEST(PrologueBackwardEmulation, Bf16Width4) {
  runAll<Config<__nv_bfloat16, 4, 16, true, true>>(1, 1, 20, 2e-2);
}
TEST(PrologueBackwardEmulation, Bf16Width4EightByteVectors) {
  runAll<Config<__nv_bfloat16, 4, 8, true, false>>(1, 1, 20, 2e-2);
}
// An fp32 conv input (gdn-expand-layer's f32-projections) beside bf16
// cotangents: x takes two ring units of dy's size per row (32 bytes of x
// beside 16 of dy, or 16 beside 8).
TEST(PrologueBackwardEmulation, Bf16WithF32ConvInput) {
  runAll<Config<__nv_bfloat16, 4, 16, true, true, 3, float>>(2, 1, 20, 2e-2);
}
TEST(PrologueBackwardEmulation, Bf16EightByteVectorsWithF32ConvInput) {
  runAll<Config<__nv_bfloat16, 3, 8, true, false, 2, float>>(2, 1, 20, 2e-2);
}
// dmixed, db and da as columns of one stacked tensor (row strides in the
// Config), as the merged input-projection gradient reads them.
TEST(PrologueBackwardEmulation, StackedGradients) {
  runAll<StackedGrads<Config<float, 4, 16, true, true>>>(2, 1, 20, 1e-4);
}
TEST(PrologueBackwardEmulation, Bf16StackedGradientsWithF32ConvInput) {
  runAll<StackedGrads<Config<__nv_bfloat16, 4, 16, true, true, 3, float>>>(
      2, 1, 20, 2e-2);
}

template <typename T, typename GateT = T> struct EpilogueConfig {
  using Input = T;
  using Gate = GateT;
  using Weight = T;
  using Output = T;
  using OutputGrad = T;
  using InputGrad = T;
  using GateGrad = T;
  using WeightGrad = T;
  static constexpr int kHeadDimV = 16, kThreads = 8, kBlocks = 5;
  static constexpr float kEps = 1e-6f;
};

/// `Base` writing dz as the first 2 x V columns of a stacked tensor whose
/// tokens (two rows each) are 40 elements apart, 8 columns unused.
template <class Base> struct StackedGateGrad : Base {
  static constexpr int64_t kGateGradTokenStride = 40, kGateGradHeads = 2;
};

template <class C> void runEpilogue(double tolerance) {
  using S = EpilogueBackwardShape<C>;
  using T = typename C::Input;
  constexpr int kV = C::kHeadDimV;
  constexpr int64_t kHeads = S::kGateGradHeads;
  constexpr bool kStacked = S::kGateGradTokenStride != 0;
  std::mt19937 random(99);
  for (int64_t rows : {0, 1, 3, 7, 16, 45, 130}) {
    if (rows % kHeads != 0)
      continue; // whole tokens only
    for (int blocks : {1, 2, int(S::blocks(rows))}) {
      auto x = randomStored<T>(size_t(rows) * kV, random);
      auto z = randomStored<typename C::Gate>(size_t(rows) * kV, random, 6.0f);
      auto weight = randomStored<T>(kV, random);
      auto dy = randomStored<T>(size_t(rows) * kV, random);
      std::vector<T> dx(std::max<int64_t>(rows * kV, 1),
                        Element<T>::store(kUnwritten)),
          dz = dx;
      std::vector<T> dweight(kV, Element<T>::store(kUnwritten));
      std::vector<float> partials(size_t(blocks) * kV, NAN);
      // The forward's output too (the recomputation folded into the
      // backward), except on one block: there the null y writes nothing.
      using Output = typename C::Output;
      const Output unwritten = Element<Output>::store(kUnwritten);
      std::vector<Output> yBackward(std::max<int64_t>(rows * kV, 1), unwritten);
      EpilogueBackwardArgs<C> args = {};
      args.y = blocks > 1 ? yBackward.data() : nullptr;
      args.x = x.elements.data();
      args.z = z.elements.data();
      args.weight = weight.elements.data();
      args.dy = dy.elements.data();
      args.dx = dx.data();
      // Stacked (StackedGateGrad): dz's rows at their place in the
      // tokens' rows, compared after unpacking; the other columns must
      // keep the sentinel.
      const int64_t tokens = rows / kHeads;
      std::vector<T> stacked(
          kStacked ? std::max<int64_t>(tokens * S::kGateGradTokenStride, 1) : 1,
          Element<T>::store(kUnwritten));
      args.dz = kStacked ? stacked.data() : dz.data();
      args.dweight = dweight.data();
      args.rows = rows;
      args.partials = partials.data();
      emulation::runGrid(dim3{unsigned(blocks), 1, 1}, C::kThreads,
                         [&] { gatedRMSNormBackwardKernel<C>(args); },
                         S::kSharedBytes);
      PartialSums job = epilogueBackwardSums(args);
      job.sums[0].parts = blocks;
      emulation::runGrid(dim3{1, 1, 1}, 8, [&] { sumPartialsKernel(job); });
      for (int64_t t = 0; kStacked && t < tokens; ++t) {
        const T *row = stacked.data() + t * S::kGateGradTokenStride;
        std::copy(row, row + kHeads * kV, dz.begin() + t * kHeads * kV);
        for (int64_t c = kHeads * kV; c < S::kGateGradTokenStride; ++c)
          ASSERT_EQ(Element<T>::load(row[c]),
                    Element<T>::load(Element<T>::store(kUnwritten)))
              << "token " << t << ": column " << c
              << " of the stack is not dz's";
      }
      gdn::test::EpilogueGradients want = gdn::test::epilogueGradients(
          x.values, z.values, weight.values, dy.values, kV, C::kEps);
      std::string mismatch;

      // The forward kernel on the same rows (grid-stride over `blocks`):
      // y = weight * x * rsqrt(mean(x^2) + eps) * silu(z).
      std::vector<typename C::Output> y(std::max<int64_t>(rows * kV, 1),
                                        Element<typename C::Output>::store(
                                            kUnwritten));
      EpilogueArgs<C> forward = {x.elements.data(), z.elements.data(),
                                 weight.elements.data(), y.data(), rows};
      emulation::runGrid(dim3{unsigned(blocks), 1, 1}, C::kThreads,
                         [&] { gatedRMSNormKernel<C>(forward); });
      std::vector<double> wantY(size_t(rows) * kV);
      for (int64_t r = 0; r < rows; ++r) {
        double squares = 0.0;
        for (int i = 0; i < kV; ++i)
          squares += x.values[r * kV + i] * x.values[r * kV + i];
        const double inverse = 1.0 / std::sqrt(squares / kV + C::kEps);
        for (int i = 0; i < kV; ++i) {
          const double gate = z.values[r * kV + i];
          wantY[r * kV + i] = weight.values[i] * x.values[r * kV + i] *
                              inverse * gate / (1.0 + std::exp(-gate));
        }
      }
      compare(y, wantY, "y", false, tolerance, mismatch);
      if (args.y)
        ASSERT_EQ(std::memcmp(yBackward.data(), y.data(), y.size() * sizeof(Output)), 0)
            << rows << " rows, " << blocks
            << " blocks: the backward's y is not the forward kernel's, bit for bit";
      else
        for (const Output &value : yBackward)
          ASSERT_EQ(std::memcmp(&value, &unwritten, sizeof(Output)), 0)
              << "a null y was written";
      compare(dx, want.dx, "dx", false, tolerance, mismatch);
      compare(dz, want.dz, "dz", false, tolerance, mismatch);
      compare(dweight, want.dweight, "dweight", false, tolerance, mismatch);
      ASSERT_TRUE(mismatch.empty())
          << rows << " rows, " << blocks << " blocks: " << mismatch;
    }
  }
}

/// gdn.l2norm's kernel and gdn.l2norm_grad's on `rows` rows of `dim`
/// values against gdn-run's rules: warps of `blocks` blocks of two stride
/// over the rows.
template <typename T> void runL2Norm(int dim, double tolerance) {
  std::mt19937 random(7);
  constexpr float kEps = 1e-6f;
  for (int64_t rows : {0, 1, 5, 37}) {
    for (unsigned blocks : {1u, 3u}) {
      auto x = randomStored<T>(size_t(rows) * dim, random);
      auto dy = randomStored<T>(size_t(rows) * dim, random);
      if (rows > 1) { // a zero row stays zero; its cotangent is dy / sqrt(eps)
        for (int j = 0; j < dim; ++j) {
          x.elements[dim + j] = Element<T>::store(0.0f);
          x.values[dim + j] = 0.0;
        }
      }
      std::vector<T> y(std::max<int64_t>(rows * dim, 1), Element<T>::store(kUnwritten)),
          dx = y;
      L2NormArgs<T> forward = {x.elements.data(), nullptr, y.data(), rows, dim, kEps};
      emulation::runGrid(dim3{blocks, 1, 1}, 64, [&] { l2normBody(forward); });
      L2NormArgs<T> backward = {x.elements.data(), dy.elements.data(), dx.data(),
                                rows, dim, kEps};
      emulation::runGrid(dim3{blocks, 1, 1}, 64, [&] { l2normBody(backward); });
      std::string mismatch;
      compare(y, gdn::test::l2normRows(x.values, dim, kEps), "y", false, tolerance,
              mismatch);
      compare(dx, gdn::test::l2normRowsGradient(x.values, dy.values, dim, kEps), "dx",
              false, tolerance, mismatch);
      ASSERT_TRUE(mismatch.empty())
          << rows << " rows of " << dim << ", " << blocks << " blocks: " << mismatch;
    }
  }
}

// Rows that fit the 8-byte vectors, one, two and four a lane (four, two and
// one rows a warp at once; partial last vectors of a lane, fewer vectors
// than lanes), and rows that do not (longer than 32 x 4 vectors, or not a
// whole number of vectors), which go element by element.
TEST(L2NormEmulation, Fp32) {
  for (int dim : {16, 64, 128, 200, 258, 7})
    runL2Norm<float>(dim, 1e-5);
}
TEST(L2NormEmulation, Bf16) {
  for (int dim : {64, 128, 36, 200, 400, 520, 6})
    runL2Norm<__nv_bfloat16>(dim, 1e-2);
}

TEST(EpilogueBackwardEmulation, Fp32) {
  runEpilogue<EpilogueConfig<float>>(1e-4);
}
TEST(EpilogueBackwardEmulation, Bf16) {
  runEpilogue<EpilogueConfig<__nv_bfloat16>>(2e-2);
}
// An fp32 gate z beside bf16 x, dy, dx and dz (f32-projections): z moves
// in 32-byte vectors.
TEST(EpilogueBackwardEmulation, Bf16WithF32Gate) {
  runEpilogue<EpilogueConfig<__nv_bfloat16, float>>(2e-2);
}
// dz as columns of the stacked cotangent that the merged input-projection
// gradient reads (token stride and heads in the Config).
TEST(EpilogueBackwardEmulation, StackedGateGradient) {
  runEpilogue<StackedGateGrad<EpilogueConfig<float>>>(1e-4);
}
TEST(EpilogueBackwardEmulation, Bf16StackedGateGradientWithF32Gate) {
  runEpilogue<StackedGateGrad<EpilogueConfig<__nv_bfloat16, float>>>(2e-2);
}

} // namespace
