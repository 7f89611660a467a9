//===- DeltaRuleTest.cpp - recurrence and chunked form agree --------------===//
//
// The chunked WY algorithm (the model for the GPU kernels) must equal the
// recurrence (the definition) to 1e-12 relative in float64, for every chunk
// size, with GQA and initial states, on random length mixes.
//
//===----------------------------------------------------------------------===//

#include "TestInputs.h"

#include "gdn/Interpreter/ReferenceKernels.h"

#include "gtest/gtest.h"

using namespace mlir::gdn::interp;
using namespace mlir::gdn::interp::testing;

namespace {

double relativeRms(const Tensor &a, const Tensor &b) {
  double diff = 0.0, ref = 0.0;
  for (int64_t i = 0; i < a.getNumElements(); ++i) {
    diff += std::pow(a.getData()[i] - b.getData()[i], 2);
    ref += std::pow(b.getData()[i], 2);
  }
  return std::sqrt(diff / ref);
}

struct Case {
  std::vector<int64_t> lengths;
  int64_t keyHeads, valueHeads, headDimK, headDimV, chunk;
};

class ChunkedMatchesRecurrence : public ::testing::TestWithParam<Case> {};

TEST_P(ChunkedMatchesRecurrence, ToOneInATrillion) {
  const Case &c = GetParam();
  std::mt19937_64 rng(11);
  const int64_t tokens =
      std::accumulate(c.lengths.begin(), c.lengths.end(), int64_t(0));
  const int64_t seqs = static_cast<int64_t>(c.lengths.size());
  Tensor q =
      randomTensor(rng, ElementKind::F64, {tokens, c.keyHeads, c.headDimK});
  Tensor k =
      randomTensor(rng, ElementKind::F64, {tokens, c.keyHeads, c.headDimK});
  Tensor v =
      randomTensor(rng, ElementKind::F64, {tokens, c.valueHeads, c.headDimV});
  Tensor g = randomTensor(rng, ElementKind::F64, {tokens, c.valueHeads});
  Tensor beta = randomTensor(rng, ElementKind::F64, {tokens, c.valueHeads});
  Tensor initial = randomTensor(
      rng, ElementKind::F64, {seqs, c.valueHeads, c.headDimK, c.headDimV}, 0.1);
  normaliseRows(q);
  normaliseRows(k);
  for (double &value : g.values())
    value = -0.5 * std::fabs(value);
  for (double &value : beta.values())
    value = 1.0 / (1.0 + std::exp(-value));
  PackingInfo packing = packingOf(c.lengths);
  DeltaRuleInputs in{q, k, v, g, beta, packing, &initial, 0.125};
  DeltaRuleResult reference =
      deltaRuleRecurrent(in, ElementKind::F64, ElementKind::F64);
  DeltaRuleResult chunked =
      deltaRuleChunked(in, c.chunk, ElementKind::F64, ElementKind::F64);
  EXPECT_LT(relativeRms(chunked.o, reference.o), 1e-12);
  EXPECT_LT(relativeRms(chunked.finalState, reference.finalState), 1e-12);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ChunkedMatchesRecurrence,
    ::testing::Values(Case{{0, 1, 63, 64, 65}, 2, 4, 16, 8, 64},
                      Case{{200}, 1, 1, 32, 32, 64},
                      Case{{129, 3}, 2, 2, 8, 16, 16},
                      Case{{37, 0, 90}, 1, 4, 16, 4, 32},
                      Case{{64, 64}, 4, 8, 8, 8, 128}));

TEST(DeltaRule, ZeroLengthSequenceKeepsItsInitialState) {
  std::mt19937_64 rng(5);
  Tensor q = randomTensor(rng, ElementKind::F32, {3, 1, 4});
  Tensor k = randomTensor(rng, ElementKind::F32, {3, 1, 4});
  Tensor v = randomTensor(rng, ElementKind::F32, {3, 1, 4});
  Tensor g = randomTensor(rng, ElementKind::F32, {3, 1});
  Tensor beta = randomTensor(rng, ElementKind::F32, {3, 1});
  Tensor initial = randomTensor(rng, ElementKind::F32, {2, 1, 4, 4});
  PackingInfo packing = packingOf({0, 3});
  DeltaRuleInputs in{q, k, v, g, beta, packing, &initial, 0.5};
  for (bool chunked : {false, true}) {
    DeltaRuleResult result =
        chunked ? deltaRuleChunked(in, 64, ElementKind::F32, ElementKind::F32)
                : deltaRuleRecurrent(in, ElementKind::F32, ElementKind::F32);
    for (int64_t i = 0; i < 16; ++i)
      EXPECT_EQ(result.finalState.getData()[i], initial.getData()[i]);
  }
}

} // namespace
