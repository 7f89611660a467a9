//===- PackingPropertiesTest.cpp - packing properties of the kernels ------===//
//
// The properties docs/spec.md promises for packed sequences, checked on the
// reference kernels with random length mixes that include 0, 1, 63, 64 and
// 65: a packed run equals each sequence run alone bit for bit; with padded
// offsets, padding (filled with NaN here) never reaches a real token, padding
// outputs are zero, and final states are those after the last real token.
//
//===----------------------------------------------------------------------===//

#include "TestInputs.h"

#include "gdn/Interpreter/ReferenceKernels.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir::gdn::interp;
using namespace mlir::gdn::interp::testing;

namespace {

bool bitIdentical(const Tensor &a, const Tensor &b) {
  // memcmp may not be given the null data of an empty tensor.
  return a.getShape() == b.getShape() &&
         (a.getNumElements() == 0 ||
          std::memcmp(a.getData(), b.getData(),
                      sizeof(double) * a.getNumElements()) == 0);
}

/// Inputs of one packed delta-rule problem (GQA 2 -> 4 heads, K = 16, V = 8).
struct DeltaProblem {
  Tensor q, k, v, g, beta, initial;
};

DeltaProblem randomDeltaProblem(std::mt19937_64 &rng, int64_t tokens,
                                int64_t seqs) {
  DeltaProblem p{randomTensor(rng, ElementKind::BF16, {tokens, 2, 16}),
                 randomTensor(rng, ElementKind::BF16, {tokens, 2, 16}),
                 randomTensor(rng, ElementKind::BF16, {tokens, 4, 8}),
                 randomTensor(rng, ElementKind::F32, {tokens, 4}),
                 randomTensor(rng, ElementKind::F32, {tokens, 4}),
                 randomTensor(rng, ElementKind::F32, {seqs, 4, 16, 8}, 0.1)};
  normaliseRows(p.q);
  normaliseRows(p.k);
  for (double &value : p.g.values())
    value = -std::fabs(value);
  for (double &value : p.beta.values())
    value = 1.0 / (1.0 + std::exp(-value));
  p.g.roundToStorage();
  p.beta.roundToStorage();
  return p;
}

DeltaRuleResult runDelta(const DeltaProblem &p, const PackingInfo &packing,
                         bool chunked) {
  DeltaRuleInputs in{p.q, p.k, p.v, p.g, p.beta, packing, &p.initial, 0.25};
  return chunked ? deltaRuleChunked(in, 64, ElementKind::BF16, ElementKind::F32)
                 : deltaRuleRecurrent(in, ElementKind::BF16, ElementKind::F32);
}

const std::vector<std::vector<int64_t>> kLengthMixes = {
    {0, 1, 63, 64, 65}, {65, 0, 0, 1}, {130}, {1, 1, 1}, {64, 63, 2, 0, 129}};

class PackedEqualsAlone : public ::testing::TestWithParam<bool> {};

TEST_P(PackedEqualsAlone, DeltaRule) {
  const bool chunked = GetParam();
  std::mt19937_64 rng(42);
  for (const std::vector<int64_t> &lengths : kLengthMixes) {
    const int64_t tokens = std::accumulate(lengths.begin(), lengths.end(), 0);
    const int64_t seqs = static_cast<int64_t>(lengths.size());
    DeltaProblem packed = randomDeltaProblem(rng, tokens, seqs);
    DeltaRuleResult all = runDelta(packed, packingOf(lengths), chunked);
    int64_t begin = 0;
    for (int64_t seq = 0; seq < seqs; ++seq) {
      const int64_t length = lengths[seq];
      DeltaProblem alone{
          rows(packed.q, begin, length),    rows(packed.k, begin, length),
          rows(packed.v, begin, length),    rows(packed.g, begin, length),
          rows(packed.beta, begin, length), entry(packed.initial, seq)};
      DeltaRuleResult single = runDelta(alone, packingOf({length}), chunked);
      EXPECT_TRUE(bitIdentical(single.o, rows(all.o, begin, length)))
          << "output of sequence " << seq << " (length " << length << ")";
      EXPECT_TRUE(bitIdentical(single.finalState, entry(all.finalState, seq)))
          << "final state of sequence " << seq << " (length " << length << ")";
      begin += length;
    }
  }
}

TEST(PackedEqualsAloneConv, WidthFourWithStates) {
  std::mt19937_64 rng(7);
  for (const std::vector<int64_t> &lengths : kLengthMixes) {
    const int64_t tokens = std::accumulate(lengths.begin(), lengths.end(), 0);
    const int64_t seqs = static_cast<int64_t>(lengths.size());
    Tensor x = randomTensor(rng, ElementKind::BF16, {tokens, 6});
    Tensor w = randomTensor(rng, ElementKind::BF16, {6, 4});
    Tensor bias = randomTensor(rng, ElementKind::BF16, {6});
    Tensor initial = randomTensor(rng, ElementKind::BF16, {seqs, 6, 3});
    ConvResult all =
        causalConv1d(x, w, &bias, packingOf(lengths), &initial, true,
                     ElementKind::BF16, true, ElementKind::BF16);
    int64_t begin = 0;
    for (int64_t seq = 0; seq < seqs; ++seq) {
      const int64_t length = lengths[seq];
      Tensor state = entry(initial, seq);
      ConvResult single = causalConv1d(
          rows(x, begin, length), w, &bias, packingOf({length}), &state, true,
          ElementKind::BF16, true, ElementKind::BF16);
      EXPECT_TRUE(bitIdentical(single.y, rows(all.y, begin, length)))
          << "sequence " << seq;
      EXPECT_TRUE(bitIdentical(single.finalState, entry(all.finalState, seq)))
          << "final conv state of sequence " << seq;
      begin += length;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothAlgorithms, PackedEqualsAlone,
                         ::testing::Values(false, true), [](const auto &info) {
                           return info.param ? "Chunked" : "Recurrent";
                         });

/// Copies an unpadded [T, ...] tensor into padded slots, filling padding rows
/// with NaN so that any read of padding poisons a result.
Tensor padRows(const Tensor &tensor, const std::vector<int64_t> &lengths,
               const std::vector<int64_t> &slots) {
  std::vector<int64_t> shape(tensor.getShape().begin(),
                             tensor.getShape().end());
  const int64_t width = shape[0] ? tensor.getNumElements() / shape[0] : 0;
  shape[0] = std::accumulate(slots.begin(), slots.end(), int64_t(0));
  Tensor padded(tensor.getKind(), shape);
  std::fill(padded.values().begin(), padded.values().end(), NAN);
  int64_t from = 0, to = 0;
  for (size_t seq = 0; seq < lengths.size(); ++seq) {
    std::copy(tensor.getData() + from * width,
              tensor.getData() + (from + lengths[seq]) * width,
              padded.getData() + to * width);
    from += lengths[seq];
    to += slots[seq];
  }
  return padded;
}

class PaddingIsInert : public ::testing::TestWithParam<bool> {};

TEST_P(PaddingIsInert, DeltaRuleAndConv) {
  const bool chunked = GetParam();
  std::mt19937_64 rng(3);
  const std::vector<int64_t> lengths = {0, 1, 63, 64, 65, 5};
  const std::vector<int64_t> slots = {8, 8, 64, 72, 72, 16};
  const int64_t tokens = std::accumulate(lengths.begin(), lengths.end(), 0);
  const int64_t seqs = static_cast<int64_t>(lengths.size());
  PackingInfo padded = llvm::cantFail(
      PackingInfo::create(offsetsOf(lengths), offsetsOf(slots), -1));

  DeltaProblem dense = randomDeltaProblem(rng, tokens, seqs);
  DeltaProblem withPadding{
      padRows(dense.q, lengths, slots),    padRows(dense.k, lengths, slots),
      padRows(dense.v, lengths, slots),    padRows(dense.g, lengths, slots),
      padRows(dense.beta, lengths, slots), dense.initial};
  DeltaRuleResult expected = runDelta(dense, packingOf(lengths), chunked);
  DeltaRuleResult actual = runDelta(withPadding, padded, chunked);
  Tensor expectedPadded = padRows(expected.o, lengths, slots);
  for (int64_t i = 0; i < actual.o.getNumElements(); ++i) {
    double want = expectedPadded.getData()[i];
    ASSERT_EQ(actual.o.getData()[i], std::isnan(want) ? 0.0 : want)
        << "element " << i << " of o (padding must be 0, real tokens as if "
        << "unpadded)";
  }
  EXPECT_TRUE(bitIdentical(actual.finalState, expected.finalState));

  Tensor x = randomTensor(rng, ElementKind::BF16, {tokens, 4});
  Tensor w = randomTensor(rng, ElementKind::BF16, {4, 4});
  ConvResult convExpected =
      causalConv1d(x, w, nullptr, packingOf(lengths), nullptr, true,
                   ElementKind::BF16, true, ElementKind::BF16);
  ConvResult convActual =
      causalConv1d(padRows(x, lengths, slots), w, nullptr, padded, nullptr,
                   true, ElementKind::BF16, true, ElementKind::BF16);
  Tensor convPadded = padRows(convExpected.y, lengths, slots);
  for (int64_t i = 0; i < convActual.y.getNumElements(); ++i) {
    double want = convPadded.getData()[i];
    ASSERT_EQ(convActual.y.getData()[i], std::isnan(want) ? 0.0 : want)
        << "element " << i << " of the conv output";
  }
  EXPECT_TRUE(bitIdentical(convActual.finalState, convExpected.finalState));
}

INSTANTIATE_TEST_SUITE_P(BothAlgorithms, PaddingIsInert,
                         ::testing::Values(false, true), [](const auto &info) {
                           return info.param ? "Chunked" : "Recurrent";
                         });

TEST(PackingValidation, RejectsInvalidOffsets) {
  auto decreasing = PackingInfo::create({0, 5, 3}, std::nullopt, -1);
  ASSERT_FALSE(static_cast<bool>(decreasing));
  EXPECT_NE(llvm::toString(decreasing.takeError())
                .find("cu_seqlens[2] = 3 < cu_seqlens[1] = 5"),
            std::string::npos);
  auto overfull =
      PackingInfo::create({0, 5, 6}, std::vector<int64_t>{0, 4, 8}, 8);
  ASSERT_FALSE(static_cast<bool>(overfull));
  EXPECT_NE(llvm::toString(overfull.takeError())
                .find("sequence 0 has 5 real tokens but its padded slot holds "
                      "only 4"),
            std::string::npos);
  auto wrongTotal = PackingInfo::create({0, 2, 4}, std::nullopt, 5);
  ASSERT_FALSE(static_cast<bool>(wrongTotal));
  EXPECT_NE(llvm::toString(wrongTotal.takeError())
                .find("must equal the token count 5"),
            std::string::npos);
}

} // namespace
