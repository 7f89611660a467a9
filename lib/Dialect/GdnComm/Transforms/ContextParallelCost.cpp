//===- ContextParallelCost.cpp - mode=auto's cost model -------------------===//
//
// Per rank and per core, with T tokens over P ranks (L = T / P per rank):
//
// headwise (Ulysses) sends (P-1)/P of its token shard each way through an
//   all_to_all: in, the conv input and the two gate inputs, L (C x + 2 HV e)
//   with x the conv input's element size (4 under f32 projections) and e the
//   activations'; out, the core output, L HV V e. No extra FLOPs; 2
//   collectives.
// chunkwise sends the W-1 halo rows, (W-1) C x, and its state summary
//   (M, S), HV (K K + K V) s, to every other rank (all-gather chain; the
//   log-depth scan sends log2 P summaries, one per round, then its prefix
//   state S, HV K V s, to the next rank). It computes the summary
//   of the sequence that leaves its shard on top of its share: at most L
//   tokens, at about 4 K K + 4 K V + 2 c (K + V) FLOPs per token and value
//   head (the transition and the state update by chunks of c = 64, with the
//   chunk's own triangular products). 2 collectives (halo and chain; the
//   scan has log2 P + 1 rounds after the halo).
//
// Final states are left out: both modes move them once per sequence and the
// model compares what grows with the tokens.
//
//===----------------------------------------------------------------------===//

#include "ContextParallelCost.h"

#include <cmath>

using namespace mlir::gdn::cp;

namespace {
constexpr double kChunk = 64;

double price(ModeCost &cost, const Machine &machine) {
  return cost.bytes / machine.linkBytesPerSecond +
         cost.flops / machine.flopsPerSecond +
         cost.collectives * machine.collectiveSeconds;
}
} // namespace

CostEstimate mlir::gdn::cp::estimateCost(const CoreShape &s, int64_t tokens,
                                         int64_t ranks, bool scanChain,
                                         const Machine &machine) {
  const double p = static_cast<double>(ranks);
  const double perRank = static_cast<double>(tokens) / p;
  const double k = s.headDimK, v = s.headDimV, hv = s.valueHeads;
  CostEstimate estimate;

  ModeCost &headwise = estimate.headwise;
  const double shardBytes =
      perRank * (s.convChannels * s.convInputBytes +
                 (2 * hv + hv * v) * s.activationBytes);
  headwise.bytes = shardBytes * (p - 1) / p;
  headwise.collectives = 2;
  headwise.seconds = price(headwise, machine);

  ModeCost &chunkwise = estimate.chunkwise;
  const double summaryBytes = hv * (k * k + k * v) * s.stateBytes;
  const double stateBytes = hv * k * v * s.stateBytes;
  const double steps = std::ceil(std::log2(p));
  const double chainBytes = scanChain ? steps * summaryBytes + stateBytes
                                      : (p - 1) * summaryBytes;
  chunkwise.bytes =
      (s.convWidth - 1) * s.convChannels * s.convInputBytes + chainBytes;
  chunkwise.flops =
      perRank * hv * (4 * k * k + 4 * k * v + 2 * kChunk * (k + v));
  chunkwise.collectives = 1 + (scanChain ? static_cast<int>(steps) + 1 : 1);
  chunkwise.seconds = price(chunkwise, machine);

  estimate.headwisePossible =
      s.keyHeads % ranks == 0 && s.valueHeads % ranks == 0;
  estimate.choice =
      estimate.headwisePossible && headwise.seconds <= chunkwise.seconds
          ? Mode::Headwise
          : Mode::Chunkwise;
  return estimate;
}

bool mlir::gdn::cp::prefersScanChain(const CoreShape &shape, int64_t ranks,
                                     const Machine &machine) {
  // Only the chain differs; any token count prices it the same.
  const CostEstimate gather = estimateCost(shape, ranks, ranks, false, machine);
  const CostEstimate scan = estimateCost(shape, ranks, ranks, true, machine);
  return scan.chunkwise.seconds < gather.chunkwise.seconds;
}

const char *mlir::gdn::cp::getModeName(Mode mode) {
  return mode == Mode::Headwise ? "headwise" : "chunkwise";
}
