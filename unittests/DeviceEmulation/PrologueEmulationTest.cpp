//===- PrologueEmulationTest.cpp - the prologue kernel on host threads ----===//
//
// Runs the real prologue kernel body (kernels/include/gdn/device/
// prologue.cuh) under the device emulator on small fp32 configurations (and
// bf16 outputs of an fp32 conv input) and
// compares every output with a direct per-sequence evaluation of
// docs/spec.md: conv widths 1-4; 1, 3 and 8 rows in flight; chunks of 1, 3
// and 32 rows; every row-block count a launch could choose; sequences of
// length 0-3 (exhaustively, with and without padding) and random mixes up
// to 40; initial, final states and bias; invalid metadata (all NaN). A
// configuration of two channel blocks of four threads leaves two threads
// inactive and normalises heads of two lanes through warp shuffles.
//
//===----------------------------------------------------------------------===//

#include "DeviceEmulator.h"
#include "PackCases.h"

#include "gdn/device/prologue.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace gdn::device;

namespace {

template <int Width, int Rows, int Chunk, bool States, bool Bias,
          typename Act = float, typename Input = Act>
struct Config {
  using Activation = Act;
  using ConvInput = Input;
  using ConvWeight = float;
  using ConvState = float;
  using GateInput = float;
  using GateParam = float;
  // 24 channels of 4 fp32 lanes: q and k heads of 2 lanes, v heads of 1
  // (bf16 q, k, v: 3 lanes of 8, a q/k head in one lane).
  static constexpr int kKeyHeads = 1, kValueHeads = 2, kHeadDimK = 8,
                       kHeadDimV = 4;
  static constexpr int kConvWidth = Width, kThreads = 4,
                       kTokensPerBlock = Chunk, kRowsInFlight = Rows;
  static constexpr bool kSilu = true, kHasBias = Bias,
                        kHasInitialState = States && Width > 1,
                        kHasFinalState = States && Width > 1,
                        kNegEigval = Bias;
  static constexpr float kNormEps = 1e-6f;
};

using gdn::emulation_tests::Pack;

/// Runs the kernel on `pack` with `rowBlocks` row blocks and checks every
/// output; returns the first mismatch, or "" when all match.
template <class C> std::string runCase(const Pack &pack, int rowBlocks,
                                       std::mt19937 &random) {
  constexpr int kW = C::kConvWidth, kHistory = kW - 1;
  constexpr int kKeyDim = C::kKeyHeads * C::kHeadDimK;
  constexpr int kValueDim = C::kValueHeads * C::kHeadDimV;
  constexpr int kChannels = 2 * kKeyDim + kValueDim, kHeads = C::kValueHeads;
  const int n = static_cast<int>(pack.lengths.size());
  std::vector<int32_t> cu(n + 1, 0), cuPadded(n + 1, 0), tokenSeq;
  for (int i = 0; i < n; ++i) {
    cu[i + 1] = cu[i] + pack.lengths[i];
    cuPadded[i + 1] = cuPadded[i] + pack.lengths[i] +
                      (pack.padded ? pack.padding[i] : 0);
    for (int j = 0; j < cuPadded[i + 1] - cuPadded[i]; ++j)
      tokenSeq.push_back(j < pack.lengths[i] ? i : -1);
  }
  const int tokens = static_cast<int>(tokenSeq.size());
  auto buffer = [](size_t size, float fill) {
    return std::vector<float>(std::max<size_t>(size, 1), fill);
  };
  using Act = typename C::Activation;
  auto activations = [](size_t size, float fill) {
    return std::vector<Act>(std::max<size_t>(size, 1), Element<Act>::store(fill));
  };
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  auto randomBuffer = [&](size_t size) {
    std::vector<float> values = buffer(size, 0.0f);
    for (float &value : values)
      value = uniform(random);
    return values;
  };
  const size_t stateSize = static_cast<size_t>(n) * kChannels * std::max(kHistory, 1);
  std::vector<float> mixed = randomBuffer(size_t(tokens) * kChannels),
                     weight = randomBuffer(kChannels * kW),
                     bias = randomBuffer(kChannels),
                     initial = randomBuffer(stateSize),
                     a = randomBuffer(size_t(tokens) * kHeads),
                     b = randomBuffer(size_t(tokens) * kHeads),
                     aLog = randomBuffer(kHeads), dtBias = randomBuffer(kHeads);
  // Outputs start as a sentinel, so an element no thread writes is caught.
  const float kUnwritten = 7777.0f;
  std::vector<Act> q = activations(size_t(tokens) * kKeyDim, kUnwritten),
                   k = activations(size_t(tokens) * kKeyDim, kUnwritten),
                   v = activations(size_t(tokens) * kValueDim, kUnwritten);
  std::vector<float> g = buffer(size_t(tokens) * kHeads, kUnwritten),
                     beta = buffer(size_t(tokens) * kHeads, kUnwritten),
                     final = buffer(stateSize, kUnwritten);
  // The kernel validates the offsets itself: invalid metadata is a wrong
  // last slot start (the total), or a nonzero first one when there is no
  // sequence. The status record starts as garbage, so a block that read it
  // instead of checking, or a missing write, is caught.
  gdn_status_t status;
  std::memset(&status, 0x5a, sizeof(status));
  std::vector<int32_t> &slotStarts = pack.padded ? cuPadded : cu;
  gdn_status_t expected = {};
  if (pack.invalid) {
    expected.padded = pack.padded;
    expected.index = n;
    expected.value = n > 0 ? tokens + 1 : 1;
    expected.code = n > 0 ? GDN_STATUS_WRONG_TOTAL : GDN_STATUS_FIRST_NOT_ZERO;
    expected.bound = n > 0 ? tokens : 0;
    slotStarts[n] = static_cast<int32_t>(expected.value);
  }

  PrologueArgs<C> args = {};
  args.mixed = mixed.data();
  args.weight = weight.data();
  args.bias = C::kHasBias ? bias.data() : nullptr;
  args.initialState = C::kHasInitialState ? initial.data() : nullptr;
  args.finalState = C::kHasFinalState ? final.data() : nullptr;
  args.a = a.data();
  args.b = b.data();
  args.aLog = aLog.data();
  args.dtBias = dtBias.data();
  args.q = q.data();
  args.k = k.data();
  args.v = v.data();
  args.g = g.data();
  args.beta = beta.data();
  args.packing = {cu.data(), pack.padded ? cuPadded.data() : nullptr, n,
                  tokens};
  args.workspace = {&status};
  emulation::setCopySource(mixed.data(),
                           mixed.data() + size_t(tokens) * kChannels);
  constexpr unsigned kChannelBlocks =
      (kChannels / PrologueVector<C>::kWidth + C::kThreads - 1) / C::kThreads;
  // With the dynamic shared memory launchPrologue reserves: the ring and
  // the check's word must fit in it.
  emulation::runGrid(dim3{kChannelBlocks, unsigned(rowBlocks), 1}, C::kThreads,
                     [&] { prologueKernel<C>(args); },
                     prologueSharedBytes<C>());

  // The reference, in double precision.
  std::string mismatch;
  if (std::memcmp(&status, &expected, sizeof(status)) != 0)
    mismatch = "status record: code " + std::to_string(status.code) +
               " index " + std::to_string(status.index) + " value " +
               std::to_string(status.value) + ", expected code " +
               std::to_string(expected.code);
  if (pack.invalid) // the reference reads the offsets: restore them
    slotStarts[n] = n > 0 ? tokens : 0;
  // fp32 outputs to 1e-4; 16-bit ones to their own rounding (2^-8 of the
  // value for bf16) plus 1e-4.
  const double rounding = sizeof(Act) == 4 ? 0.0 : 1.0 / 256;
  auto expect = [&](float got, double want, const char *what, int row,
                    int column) {
    const bool good =
        pack.invalid ? std::isnan(got)
                     : got != kUnwritten &&
                           std::fabs(got - want) <=
                               1e-4 * (1 + std::fabs(want)) +
                                   rounding * std::fabs(want);
    if (!good && mismatch.empty())
      mismatch = std::string(what) + "[" + std::to_string(row) + "][" +
                 std::to_string(column) + "] = " + std::to_string(got) +
                 ", expected " + std::to_string(want);
  };
  // Tap p of sequence s (p < 0: before its first token).
  auto tap = [&](int s, int p, int c) -> double {
    if (p >= 0)
      return mixed[size_t(cuPadded[s] + p) * kChannels + c];
    if (!C::kHasInitialState)
      return 0.0;
    return initial[(size_t(s) * kChannels + c) * kHistory + kHistory + p];
  };
  std::vector<double> y(kChannels);
  for (int t = 0; t < tokens; ++t) {
    const int s = tokenSeq[t];
    for (int c = 0; c < kChannels; ++c) {
      if (s < 0) {
        y[c] = 0.0;
        continue;
      }
      double sum = C::kHasBias ? bias[c] : 0.0;
      for (int j = 0; j < kW; ++j)
        sum += weight[c * kW + j] * tap(s, t - cuPadded[s] - kHistory + j, c);
      y[c] = sum / (1.0 + std::exp(-sum));
    }
    for (int head = 0; s >= 0 && head < 2 * kKeyDim; head += C::kHeadDimK) {
      double squares = 0.0;
      for (int i = 0; i < C::kHeadDimK; ++i)
        squares += y[head + i] * y[head + i];
      for (int i = 0; i < C::kHeadDimK; ++i)
        y[head + i] /= std::sqrt(squares + C::kNormEps);
    }
    for (int c = 0; c < kKeyDim; ++c) {
      expect(Element<Act>::load(q[size_t(t) * kKeyDim + c]), y[c], "q", t, c);
      expect(Element<Act>::load(k[size_t(t) * kKeyDim + c]), y[kKeyDim + c],
             "k", t, c);
    }
    for (int c = 0; c < kValueDim; ++c)
      expect(Element<Act>::load(v[size_t(t) * kValueDim + c]),
             y[2 * kKeyDim + c], "v", t, c);
    for (int h = 0; h < kHeads; ++h) {
      const double x = a[size_t(t) * kHeads + h] + dtBias[h];
      const double softplus = x > 20 ? x : std::log1p(std::exp(x));
      expect(g[size_t(t) * kHeads + h], -std::exp(double(aLog[h])) * softplus,
             "g", t, h);
      expect(beta[size_t(t) * kHeads + h],
             (C::kNegEigval ? 2.0 : 1.0) /
                 (1.0 + std::exp(-double(b[size_t(t) * kHeads + h]))),
             "beta", t, h);
    }
  }
  for (int s = 0; C::kHasFinalState && s < n; ++s)
    for (int c = 0; c < kChannels; ++c)
      for (int j = 0; j < kHistory; ++j)
        expect(final[(size_t(s) * kChannels + c) * kHistory + j],
               tap(s, pack.lengths[s] - kHistory + j, c), "final state", s,
               c * kHistory + j);
  return mismatch;
}

/// Every pack of up to 3 sequences of length 0-3 (padding 0-1 when padded),
/// each with every row-block count, then random packs.
template <class C> void runAll(int randomPacks) {
  std::mt19937 random(1234);
  auto check = [&](const Pack &pack) {
    const int chunks =
        std::max(1, (pack.bufferTokens() + C::kTokensPerBlock - 1) /
                        C::kTokensPerBlock);
    for (int rowBlocks = 1; rowBlocks <= chunks; ++rowBlocks) {
      std::string mismatch = runCase<C>(pack, rowBlocks, random);
      ASSERT_TRUE(mismatch.empty())
          << gdn::emulation_tests::describe(pack, rowBlocks) << ": "
          << mismatch;
    }
  };
  if (!gdn::emulation_tests::forEachSmallPack(3, [&](const Pack &pack, int) {
        check(pack);
        return !::testing::Test::HasFatalFailure();
      }))
    return;
  for (int i = 0; i < randomPacks; ++i) {
    check(gdn::emulation_tests::randomPack(random));
    if (::testing::Test::HasFatalFailure())
      return;
  }
}

// Width, rows in flight, chunk rows, states, bias.
TEST(PrologueEmulation, Width4) { runAll<Config<4, 8, 32, true, true>>(40); }
TEST(PrologueEmulation, Width4OneRowChunksOneRowInFlight) {
  runAll<Config<4, 1, 1, true, false>>(20);
}
TEST(PrologueEmulation, Width4ThreeRowChunks) {
  runAll<Config<4, 3, 3, false, true>>(40);
}
TEST(PrologueEmulation, Width3) { runAll<Config<3, 3, 3, true, true>>(40); }
TEST(PrologueEmulation, Width2) { runAll<Config<2, 8, 1, true, false>>(20); }
TEST(PrologueEmulation, Width1) { runAll<Config<1, 3, 3, false, true>>(40); }
// An fp32 conv input beside bf16 q, k, v (gdn-expand-layer's
// f32-projections): each thread copies two 16-byte words of input per row
// for its 8 channels; the reference reads the fp32 values.
TEST(PrologueEmulation, Bf16OutputsFromF32Input) {
  runAll<Config<4, 3, 3, true, true, __nv_bfloat16, float>>(40);
}
TEST(PrologueEmulation, Bf16OutputsFromF32InputWidth2OneRowInFlight) {
  runAll<Config<2, 1, 32, true, false, __nv_bfloat16, float>>(20);
}
// The same with 8-byte vectors (Config::kVectorBytes): 4 channels a thread,
// one 16-byte word of f32 input a row; q and k heads of two lanes.
template <class Base> struct EightByteVectors : Base {
  static constexpr int kVectorBytes = 8;
};
TEST(PrologueEmulation, Bf16OutputsFromF32InputEightByteVectors) {
  runAll<EightByteVectors<Config<4, 3, 3, true, true, __nv_bfloat16, float>>>(
      40);
}
// f16 q, k, v beside f32 input take 8-byte vectors as bf16 ones do.
TEST(PrologueEmulation, F16OutputsFromF32InputEightByteVectors) {
  runAll<EightByteVectors<Config<4, 3, 3, true, true, __half, float>>>(20);
}
TEST(PrologueEmulation, Bf16OutputsFromF32InputEightByteVectorsWidth3) {
  runAll<EightByteVectors<Config<3, 8, 32, false, false, __nv_bfloat16, float>>>(
      20);
}

} // namespace
