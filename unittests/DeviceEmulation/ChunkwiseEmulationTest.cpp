//===- ChunkwiseEmulationTest.cpp - chunkwise CP's per-rank kernels ------===//
//
// Runs the kernels of gdn/device/chunkwise.cuh and gdn/device/zigzag.cuh
// under the device emulator against a direct host statement of what the
// gdn_comm ops define (GdnComm.td, the interpreter's ChunkwiseOps.cpp and
// Distribution.cpp): the shard's crossing sequences found by a scan of all
// sequences, the clipped packing, the conv and delta-rule initial states of
// the continuing sequence, the summary's packing and initial states, the
// owners of per-sequence entries, and the zigzag row maps. The gradients
// are checked as transposes: <F(x), y> = <x, F^T(y)> for random x and y,
// with F and F^T the kernels, which holds exactly for these copy maps.
// Packings: every mix of up to two sequences (lengths 0-3, with and
// without padding) at P = 1..3, and random mixes with long sequences,
// empty ones and sequences exactly on shard edges, at P up to 8.
//
//===----------------------------------------------------------------------===//

#include "DeviceEmulator.h"
#include "PackCases.h"

#include "gdn/device/chunkwise.cuh"
#include "gdn/device/zigzag.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace gdn::device;
using gdn::emulation_tests::Pack;

namespace {

/// A packing's offsets on the host, padded to a buffer that `ranks` divide.
struct Offsets {
  std::vector<int32_t> cu, padded; ///< padded empty: no cu_padded
  int32_t tokens = 0;

  PackingView view() const {
    return {cu.data(), padded.empty() ? nullptr : padded.data(),
            static_cast<int32_t>(cu.size()) - 1, tokens};
  }
  int32_t begin(int s) const { return padded.empty() ? cu[s] : padded[s]; }
  int32_t length(int s) const { return cu[s + 1] - cu[s]; }
  int32_t slot(int s) const {
    return padded.empty() ? length(s) : padded[s + 1] - padded[s];
  }
  int seqs() const { return static_cast<int>(cu.size()) - 1; }
};

/// The offsets of `pack`; when the buffer does not split into `ranks`
/// shards, the last slot grows (padded) or a last sequence takes the rest.
Offsets offsetsOf(const Pack &pack, int ranks) {
  Offsets o;
  o.cu = {0};
  if (pack.padded)
    o.padded = {0};
  for (size_t i = 0; i < pack.lengths.size(); ++i) {
    o.cu.push_back(o.cu.back() + pack.lengths[i]);
    if (pack.padded)
      o.padded.push_back(o.padded.back() + pack.lengths[i] + pack.padding[i]);
  }
  o.tokens = pack.padded ? o.padded.back() : o.cu.back();
  const int32_t rest = (ranks - o.tokens % ranks) % ranks;
  if (rest) {
    if (pack.padded && !pack.lengths.empty()) {
      o.padded.back() += rest;
    } else {
      o.cu.push_back(o.cu.back() + rest);
      if (pack.padded)
        o.padded.push_back(o.padded.back() + rest);
    }
    o.tokens += rest;
  }
  return o;
}

/// The interpreter's definition: scan every sequence.
struct HostShard {
  int32_t begin, end;
  int continuing = -1, leaving = -1;
};
HostShard hostShard(const Offsets &o, int rank, int ranks) {
  HostShard shard{rank * (o.tokens / ranks), (rank + 1) * (o.tokens / ranks)};
  for (int s = 0; s < o.seqs(); ++s) {
    const int32_t first = o.begin(s), last = first + o.length(s);
    if (first < shard.begin && last > shard.begin)
      shard.continuing = s;
    if (first < shard.end && last > shard.end)
      shard.leaving = s;
  }
  return shard;
}

int hostOwner(const Offsets &o, int s, int ranks) {
  if (o.tokens == 0)
    return 0;
  const int32_t row = o.begin(s) + std::max(o.length(s), 1) - 1;
  return std::min(ranks - 1, row / (o.tokens / ranks));
}

/// A valid status record, as the packing's validation leaves it.
gdn_status_t okStatus() { return gdn_status_t{}; }

void runBlocks(unsigned blocks, unsigned threads,
               const std::function<void()> &body) {
  emulation::runGrid(dim3{blocks, 1, 1}, threads, body, kChunkwiseSharedBytes);
}

std::vector<float> randomValues(size_t count, std::mt19937 &rng) {
  std::uniform_int_distribution<int> pick(-8, 8);
  std::vector<float> values(count);
  for (float &v : values)
    v = static_cast<float>(pick(rng)); // small integers: exact dot products
  return values;
}

double dot(const std::vector<float> &a, const std::vector<float> &b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

/// Checks every per-rank kernel on one packing at `ranks` ranks; false
/// after the first failure (with a message naming the packing).
bool checkPacking(const Offsets &o, int ranks, std::mt19937 &rng,
                  const std::string &name) {
  const int n = o.seqs();
  const gdn_status_t valid = okStatus();
  for (int rank = 0; rank < ranks; ++rank) {
    SCOPED_TRACE(name + ", rank " + std::to_string(rank) + " of " +
                 std::to_string(ranks));
    const HostShard shard = hostShard(o, rank, ranks);
    const int32_t rows = shard.end - shard.begin;
    auto clip = [&](int32_t row) {
      return std::clamp(row, shard.begin, shard.end) - shard.begin;
    };

    // local_packing.
    std::vector<int32_t> cu(n + 1, -7),
        padded(o.padded.empty() ? 0 : n + 1, -7);
    gdn_status_t status{};
    DerivedPackingArgs derived{
        o.view(), &valid,    rank,
        ranks,    cu.data(), padded.empty() ? nullptr : padded.data(),
        &status};
    runBlocks(1, 16, [&] { localPackingBody(derived); });
    std::vector<int32_t> wantCu = {0}, wantPadded = {0};
    for (int s = 0; s < n; ++s) {
      wantCu.push_back(wantCu.back() + clip(o.begin(s) + o.length(s)) -
                       clip(o.begin(s)));
      if (!o.padded.empty())
        wantPadded.push_back(clip(o.padded[s + 1]));
    }
    EXPECT_EQ(cu, wantCu) << "local cu_seqlens";
    if (!o.padded.empty())
      EXPECT_EQ(padded, wantPadded) << "local cu_padded";
    EXPECT_EQ(status.code, GDN_STATUS_OK);

    // summary_packing.
    std::vector<int32_t> sumCu(3, -7), sumPadded(3, -7);
    DerivedPackingArgs summary{o.view(),     &valid,           rank,   ranks,
                               sumCu.data(), sumPadded.data(), &status};
    runBlocks(1, 4, [&] { summaryPackingBody(summary); });
    const int32_t start =
        shard.leaving < 0 ? rows
                          : std::max(o.begin(shard.leaving) - shard.begin, 0);
    EXPECT_EQ(sumCu, (std::vector<int32_t>{0, 0, rows - start}));
    EXPECT_EQ(sumPadded, (std::vector<int32_t>{0, start, rows}));

    // continue_conv_state and its gradient, at taps 1..3, with and without
    // initial states.
    for (int taps : {1, 3})
      for (bool withInitial : {false, true}) {
        const int channels = 5;
        std::vector<float> halo = randomValues(taps * channels, rng);
        std::vector<float> initial = randomValues(n * channels * taps, rng);
        std::vector<float> out(n * channels * taps, -99.0f);
        ContinueConvStateArgs<float> conv{
            o.view(),   &valid,      rank,
            ranks,      halo.data(), withInitial ? initial.data() : nullptr,
            out.data(), channels,    taps};
        runBlocks(2, 4, [&] { continueConvStateBody(conv); });
        std::vector<float> want(n * channels * taps, 0.0f);
        if (withInitial)
          want = initial;
        if (shard.continuing >= 0) {
          const int s = shard.continuing;
          const int32_t first = o.begin(s);
          for (int j = 0; j < taps; ++j)
            for (int c = 0; c < channels; ++c) {
              const int32_t row = shard.begin - taps + j;
              float value = 0.0f;
              if (row >= first)
                value = halo[j * channels + c];
              else if (withInitial)
                value =
                    initial[(s * channels + c) * taps + taps - (first - row)];
              want[(s * channels + c) * taps + j] = value;
            }
        }
        EXPECT_EQ(out, want) << "continue_conv_state, taps " << taps;
        // The gradient is the transpose: <F(halo, h0), y> = <halo, Gh(y)> +
        // <h0, Gi(y)>.
        std::vector<float> y = randomValues(n * channels * taps, rng);
        std::vector<float> haloGrad(taps * channels, -99.0f),
            initialGrad(n * channels * taps, -99.0f);
        ContinueConvStateGradArgs<float> grad{o.view(),
                                              &valid,
                                              rank,
                                              ranks,
                                              y.data(),
                                              haloGrad.data(),
                                              withInitial ? initialGrad.data()
                                                          : nullptr,
                                              channels,
                                              taps};
        runBlocks(2, 4, [&] { continueConvStateGradBody(grad); });
        const double lhs = dot(out, y);
        const double rhs = dot(halo, haloGrad) +
                           (withInitial ? dot(initial, initialGrad) : 0.0);
        EXPECT_EQ(lhs, rhs) << "continue_conv_state_grad, taps " << taps;
      }

    // continue_state and its gradient.
    for (bool withInitial : {false, true}) {
      const int entry = 6;
      std::vector<float> incoming = randomValues(entry, rng);
      std::vector<float> initial = randomValues(n * entry, rng);
      std::vector<float> out(n * entry, -99.0f);
      ContinueStateArgs<float> state{};
      state.global = o.view();
      state.status = &valid;
      state.rank = rank;
      state.ranks = ranks;
      state.entry = entry;
      state.incoming = incoming.data();
      state.initial = withInitial ? initial.data() : nullptr;
      state.out = out.data();
      runBlocks(2, 4, [&] { continueStateBody(state); });
      std::vector<float> want =
          withInitial ? initial : std::vector<float>(n * entry, 0);
      if (shard.continuing >= 0)
        std::copy(incoming.begin(), incoming.end(),
                  want.begin() + shard.continuing * entry);
      EXPECT_EQ(out, want) << "continue_state";
      std::vector<float> y = randomValues(n * entry, rng);
      std::vector<float> incomingGrad(entry, -99.0f),
          initialGrad(n * entry, -99.0f);
      ContinueStateArgs<float> grad{};
      grad.global = o.view();
      grad.status = &valid;
      grad.rank = rank;
      grad.ranks = ranks;
      grad.entry = entry;
      grad.gradient = true;
      grad.stateGrad = y.data();
      grad.incomingGrad = incomingGrad.data();
      grad.initialGrad = withInitial ? initialGrad.data() : nullptr;
      runBlocks(2, 4, [&] { continueStateBody(grad); });
      EXPECT_EQ(dot(out, y),
                dot(incoming, incomingGrad) +
                    (withInitial ? dot(initial, initialGrad) : 0.0))
          << "continue_state_grad";
    }

    // summary_initial_states and the gradient of the partial run's.
    {
      const int heads = 2, keyDim = 3, valueDim = 2;
      const int partialEntry = heads * keyDim * valueDim;
      std::vector<float> initial = randomValues(n * partialEntry, rng);
      std::vector<float> partial(2 * partialEntry, -99.0f),
          transition(2 * heads * keyDim * keyDim, -99.0f);
      SummaryStatesArgs<float> states = {};
      states.global = o.view();
      states.status = &valid;
      states.rank = rank;
      states.ranks = ranks;
      states.valueHeads = heads;
      states.keyDim = keyDim;
      states.valueDim = valueDim;
      states.initial = initial.data();
      states.partial = partial.data();
      states.transition = transition.data();
      runBlocks(2, 4, [&] { summaryStatesBody(states); });
      const bool leaves = shard.leaving >= 0;
      const bool startsHere = leaves && o.begin(shard.leaving) >= shard.begin;
      std::vector<float> wantPartial(2 * partialEntry, 0.0f),
          wantTransition(2 * heads * keyDim * keyDim, 0.0f);
      if (startsHere)
        std::copy_n(initial.begin() + shard.leaving * partialEntry,
                    partialEntry, wantPartial.begin() + partialEntry);
      if (leaves && !startsHere)
        for (int h = 0; h < heads; ++h)
          for (int i = 0; i < keyDim; ++i)
            wantTransition[heads * keyDim * keyDim + (h * keyDim + i) * keyDim +
                           i] = 1.0f;
      EXPECT_EQ(partial, wantPartial) << "summary_initial_states (partial)";
      // From the incoming state: a leaving sequence that began earlier
      // starts from it.
      std::vector<float> incoming = randomValues(partialEntry, rng);
      std::vector<float> fromIncomingPartial(2 * partialEntry, -99.0f);
      SummaryStatesArgs<float> fromIncoming = states;
      fromIncoming.incoming = incoming.data();
      fromIncoming.partial = fromIncomingPartial.data();
      runBlocks(2, 4, [&] { summaryStatesBody(fromIncoming); });
      std::vector<float> wantFromIncoming = wantPartial;
      if (leaves && !startsHere)
        std::copy(incoming.begin(), incoming.end(),
                  wantFromIncoming.begin() + partialEntry);
      EXPECT_EQ(fromIncomingPartial, wantFromIncoming)
          << "summary_initial_states (partial, from incoming)";
      EXPECT_EQ(transition, wantTransition)
          << "summary_initial_states (transition)";
      std::vector<float> y = randomValues(2 * partialEntry, rng);
      std::vector<float> initialGrad(n * partialEntry, -99.0f);
      SummaryStatesArgs<float> grad = states;
      grad.gradient = true;
      grad.initial = nullptr;
      grad.partial = grad.transition = nullptr;
      grad.partialInitialGrad = y.data();
      grad.initialGrad = initialGrad.data();
      runBlocks(2, 4, [&] { summaryStatesBody(grad); });
      EXPECT_EQ(dot(partial, y), dot(initial, initialGrad))
          << "summary_initial_states_grad";
    }

    // The owned entries of gather_sequence_states.
    {
      const int entry = 3;
      std::vector<float> in = randomValues(n * entry, rng),
                         out(n * entry, -99.0f);
      OwnedSequencesArgs<float> owned{o.view(), &valid,    rank,      ranks,
                                      entry,    in.data(), out.data()};
      runBlocks(2, 4, [&] { ownedSequencesBody(owned); });
      std::vector<float> want(n * entry, 0.0f);
      for (int s = 0; s < n; ++s)
        if (hostOwner(o, s, ranks) == rank)
          std::copy_n(in.begin() + s * entry, entry, want.begin() + s * entry);
      EXPECT_EQ(out, want) << "owned sequence entries";
    }
    if (::testing::Test::HasFailure())
      return false;
  }
  return true;
}

TEST(ChunkwiseEmulation, SmallPackings) {
  std::mt19937 rng(3);
  for (int ranks = 1; ranks <= 3; ++ranks)
    gdn::emulation_tests::forEachSmallPack(2, [&](const Pack &pack, int) {
      return checkPacking(offsetsOf(pack, ranks), ranks, rng,
                          gdn::emulation_tests::describe(pack, 0));
    });
}

TEST(ChunkwiseEmulation, RandomPackings) {
  std::mt19937 rng(11);
  for (int round = 0; round < 60; ++round) {
    const int ranks = 1 + static_cast<int>(rng() % 8);
    Pack pack;
    pack.padded = rng() % 2;
    const int seqs = static_cast<int>(rng() % 7);
    for (int s = 0; s < seqs; ++s) {
      const int kind = static_cast<int>(rng() % 4);
      pack.lengths.push_back(kind == 0   ? 0
                             : kind == 1 ? 1 + rng() % 3
                                         : rng() % 40);
      pack.padding.push_back(pack.padded ? rng() % 5 : 0);
    }
    if (!checkPacking(offsetsOf(pack, ranks), ranks, rng,
                      "random round " + std::to_string(round) + ": " +
                          gdn::emulation_tests::describe(pack, 0)))
      return;
  }
}

/// Sequences that end exactly on shard edges: nothing continues or leaves
/// across those edges.
TEST(ChunkwiseEmulation, SequencesOnShardEdges) {
  std::mt19937 rng(5);
  Pack pack;
  pack.lengths = {6, 6, 0, 12, 6};
  pack.padding = {0, 0, 0, 0, 0};
  EXPECT_TRUE(checkPacking(offsetsOf(pack, 5), 5, rng, "edges"));
  const Offsets o = offsetsOf(pack, 5);
  for (int rank = 0; rank < 5; ++rank) {
    ShardSequences found{};
    runBlocks(1, 1, [&] { found = findShardSequences(o.view(), rank, 5); });
    const HostShard want = hostShard(o, rank, 5);
    EXPECT_EQ(found.continuing, want.continuing) << "rank " << rank;
    EXPECT_EQ(found.leaving, want.leaving) << "rank " << rank;
  }
}

/// Invalid offsets: NaN in every float output and poisoned derived
/// offsets, whatever the offsets hold.
TEST(ChunkwiseEmulation, InvalidOffsetsGiveNaN) {
  Offsets o;
  o.cu = {0, 9, 4, 12}; // decreasing
  o.tokens = 12;
  gdn_status_t invalid{};
  invalid.code = GDN_STATUS_DECREASING;
  invalid.index = 2;
  std::vector<int32_t> cu(4, 5);
  gdn_status_t status{};
  DerivedPackingArgs derived{o.view(),  &invalid, 1,      2,
                             cu.data(), nullptr,  &status};
  runBlocks(1, 16, [&] { localPackingBody(derived); });
  EXPECT_EQ(cu[0], -1);
  EXPECT_EQ(status.code, GDN_STATUS_DECREASING);
  std::vector<float> halo(3 * 2, 1.0f), out(3 * 2 * 3, 0.0f);
  ContinueConvStateArgs<float> conv{o.view(), &invalid,   1, 2, halo.data(),
                                    nullptr,  out.data(), 2, 3};
  runBlocks(2, 16, [&] { continueConvStateBody(conv); });
  for (float v : out)
    EXPECT_TRUE(std::isnan(v));
  std::vector<float> in(3 * 4, 1.0f), owned(3 * 4, 0.0f);
  OwnedSequencesArgs<float> mask{o.view(), &invalid,  0,           2,
                                 4,        in.data(), owned.data()};
  runBlocks(2, 16, [&] { ownedSequencesBody(mask); });
  for (float v : owned)
    EXPECT_TRUE(std::isnan(v));
}

//===----------------------------------------------------------------------===//
// Zigzag rows
//===----------------------------------------------------------------------===//

/// The interpreter's zigzag rows of `rank` (Distribution.cpp).
std::vector<int32_t> hostZigzagRows(const Offsets &o, int ranks, int rank) {
  std::vector<int32_t> rows;
  for (int s = 0; s < o.seqs(); ++s) {
    const int32_t piece = o.slot(s) / (2 * ranks);
    for (int chunk : {rank, 2 * ranks - 1 - rank})
      for (int32_t i = 0; i < piece; ++i)
        rows.push_back(o.begin(s) + chunk * piece + i);
  }
  return rows;
}

TEST(ChunkwiseEmulation, ZigzagRowsBothWays) {
  std::mt19937 rng(17);
  for (int round = 0; round < 60; ++round) {
    const int ranks = 1 + static_cast<int>(rng() % 4);
    Offsets o;
    o.cu = {0};
    const bool padded = rng() % 2;
    if (padded)
      o.padded = {0};
    const int seqs = 1 + static_cast<int>(rng() % 5);
    for (int s = 0; s < seqs; ++s) {
      const int32_t slot = 2 * ranks * static_cast<int32_t>(rng() % 4);
      const int32_t length =
          padded ? slot - static_cast<int32_t>(rng() % (slot + 1)) : slot;
      o.cu.push_back(o.cu.back() + length);
      if (padded)
        o.padded.push_back(o.padded.back() + slot);
    }
    o.tokens = padded ? o.padded.back() : o.cu.back();
    const int32_t rows = o.tokens / ranks;
    const int64_t rowBytes = 4;
    // The natural buffer: row g holds g.
    std::vector<int32_t> natural(o.tokens);
    std::iota(natural.begin(), natural.end(), 0);
    std::vector<std::vector<int32_t>> shards(ranks);
    for (int rank = 0; rank < ranks; ++rank) {
      SCOPED_TRACE("round " + std::to_string(round) + ", rank " +
                   std::to_string(rank) + " of " + std::to_string(ranks));
      gdn_status_t status{};
      shards[rank].assign(rows, -1);
      ZigzagRowsArgs to{o.view(), &status, rank,           ranks,
                        rows,     true,    natural.data(), shards[rank].data(),
                        rowBytes};
      runBlocks(3, 8, [&] { zigzagRowsBody<uint32_t>(to); });
      EXPECT_EQ(shards[rank], hostZigzagRows(o, ranks, rank));
    }
    // Back: every rank's contiguous shard from the gathered zigzag shards.
    std::vector<int32_t> gathered;
    for (const auto &shard : shards)
      gathered.insert(gathered.end(), shard.begin(), shard.end());
    for (int rank = 0; rank < ranks; ++rank) {
      gdn_status_t status{};
      std::vector<int32_t> contiguous(rows, -1);
      ZigzagRowsArgs from{
          o.view(),        &status,           rank,    ranks, rows, false,
          gathered.data(), contiguous.data(), rowBytes};
      runBlocks(3, 8, [&] { zigzagRowsBody<uint32_t>(from); });
      std::vector<int32_t> want(rows);
      std::iota(want.begin(), want.end(), rank * rows);
      EXPECT_EQ(contiguous, want) << "round " << round << ", rank " << rank;
    }
    if (HasFailure())
      return;
  }
}

TEST(ChunkwiseEmulation, ZigzagIndivisibleSlotIsReported) {
  Offsets o;
  o.cu = {0, 4, 7, 8}; // sequence 1 has 3 rows, no multiple of 4
  o.tokens = 8;
  gdn_status_t status{};
  ZigzagCheckArgs check{o.view(), &status, 2};
  emulation::runGrid(
      dim3{1, 1, 1}, 32, [&] { zigzagCheckBody(check); }, 16);
  EXPECT_EQ(status.code, GDN_STATUS_ZIGZAG_SLOT);
  EXPECT_EQ(status.index, 1);
  EXPECT_EQ(status.value, 3);
  EXPECT_EQ(status.bound, 4);
  std::vector<float> natural(8, 1.0f), out(4, 0.0f);
  ZigzagRowsArgs rows{o.view(), &status,        0,          2, 4,
                      true,     natural.data(), out.data(), 4};
  runBlocks(1, 8, [&] { zigzagRowsBody<uint32_t>(rows); });
  for (float v : out)
    EXPECT_TRUE(std::isnan(v));
}

} // namespace
