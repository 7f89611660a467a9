//===- CollectiveGradients.cpp - VJPs of the gdn_comm collectives ---------===//
//
// A collective moves (or sums) values between ranks; its VJP moves the
// cotangents the opposite way: an all-gather's cotangents are
// reduce-scattered back, a reduce-scatter's are all-gathered, an
// all-to-all's go through the all-to-all with the dimensions swapped, a
// halo's go back to the rows it copied, and a layout conversion's through
// the inverse conversion. The chunkwise state chain is differentiated by
// its own reverse chain. Sums run in rank order, so gradients are
// deterministic.
//
// Each rule receives one group instance: rankOps[i], envs[i] and
// cotangents[i] belong to rank i of the group, as in Collectives.cpp.
//
//===----------------------------------------------------------------------===//

#include "GradientEngine.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Interpreter/Distribution.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

namespace {

/// `into[..., offset + i, ...] += from[..., i, ...]` along `dim` (or `=`
/// into a fresh tensor), for all i of `from`.
void addSlab(Tensor &into, const Tensor &from, unsigned dim, int64_t offset) {
  Extents to(into.getShape(), dim), piece(from.getShape(), dim);
  for (int64_t o = 0; o < piece.outer; ++o)
    for (int64_t i = 0; i < piece.along * piece.inner; ++i)
      into.getData()[(o * to.along + offset) * to.inner + i] +=
          from.getData()[o * piece.along * piece.inner + i];
}

/// `length` slices of `from` along `dim` starting at `offset`.
Tensor slab(const Tensor &from, unsigned dim, int64_t offset, int64_t length) {
  std::vector<int64_t> shape(from.getShape().begin(), from.getShape().end());
  shape[dim] = length;
  Tensor result(ElementKind::F64, shape);
  Extents whole(from.getShape(), dim);
  for (int64_t o = 0; o < whole.outer; ++o)
    std::copy_n(from.getData() + (o * whole.along + offset) * whole.inner,
                length * whole.inner,
                result.getData() + o * length * whole.inner);
  return result;
}

/// The cotangents of result `index` on every rank of the group (zeros where
/// a rank has none), removed from the maps.
std::vector<Tensor> takeResultCotangents(ArrayRef<Operation *> rankOps,
                                         ArrayRef<const Environment *> envs,
                                         ArrayRef<CotangentMap *> cotangents,
                                         unsigned index = 0) {
  std::vector<Tensor> result;
  for (size_t rank = 0; rank < rankOps.size(); ++rank) {
    Value value = rankOps[rank]->getResult(index);
    result.push_back(cotangents[rank]->take(value, envs[rank]->tensor(value)));
  }
  return result;
}

void propagateAllGather(ArrayRef<Operation *> rankOps,
                        ArrayRef<const Environment *> envs,
                        ArrayRef<CotangentMap *> cotangents) {
  const unsigned dim = cast<comm::AllGatherOp>(rankOps[0]).getDim();
  std::vector<Tensor> dy = takeResultCotangents(rankOps, envs, cotangents);
  // Rank r's operand is the r-th piece of every rank's result.
  int64_t offset = 0;
  for (size_t rank = 0; rank < rankOps.size(); ++rank) {
    Value operand = rankOps[rank]->getOperand(0);
    Tensor dx = zerosLike(envs[rank]->tensor(operand));
    for (const Tensor &cotangent : dy)
      accumulateInto(dx, slab(cotangent, dim, offset, dx.getDimSize(dim)));
    offset += dx.getDimSize(dim);
    cotangents[rank]->add(operand, std::move(dx));
  }
}

void propagateReduceScatter(ArrayRef<Operation *> rankOps,
                            ArrayRef<const Environment *> envs,
                            ArrayRef<CotangentMap *> cotangents) {
  const unsigned dim = cast<comm::ReduceScatterOp>(rankOps[0]).getDim();
  std::vector<Tensor> dy = takeResultCotangents(rankOps, envs, cotangents);
  // Every rank's operand reaches every rank's slice of the sum.
  Tensor gathered = zerosLike(envs[0]->tensor(rankOps[0]->getOperand(0)));
  int64_t offset = 0;
  for (const Tensor &cotangent : dy) {
    addSlab(gathered, cotangent, dim, offset);
    offset += cotangent.getDimSize(dim);
  }
  for (size_t rank = 0; rank < rankOps.size(); ++rank)
    cotangents[rank]->add(rankOps[rank]->getOperand(0), gathered);
}

void propagateAllToAll(ArrayRef<Operation *> rankOps,
                       ArrayRef<const Environment *> envs,
                       ArrayRef<CotangentMap *> cotangents) {
  auto op = cast<comm::AllToAllOp>(rankOps[0]);
  const unsigned split = op.getSplitDim(), concat = op.getConcatDim();
  const int64_t ranks = static_cast<int64_t>(rankOps.size());
  std::vector<Tensor> dy = takeResultCotangents(rankOps, envs, cotangents);
  // Piece s of rank r's result (along concat) is slice r of rank s's
  // operand (along split).
  for (int64_t source = 0; source < ranks; ++source) {
    Value operand = rankOps[source]->getOperand(0);
    Tensor dx = zerosLike(envs[source]->tensor(operand));
    const int64_t sliceLength = dx.getDimSize(split) / ranks;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      const int64_t pieceLength = dy[rank].getDimSize(concat) / ranks;
      addSlab(dx, slab(dy[rank], concat, source * pieceLength, pieceLength),
              split, rank * sliceLength);
    }
    cotangents[source]->add(operand, std::move(dx));
  }
}

void propagateHaloExchange(ArrayRef<Operation *> rankOps,
                           ArrayRef<const Environment *> envs,
                           ArrayRef<CotangentMap *> cotangents) {
  const int64_t ranks = static_cast<int64_t>(rankOps.size());
  std::vector<Tensor> dy = takeResultCotangents(rankOps, envs, cotangents);
  std::vector<Tensor> dx;
  for (int64_t rank = 0; rank < ranks; ++rank)
    dx.push_back(zerosLike(envs[rank]->tensor(rankOps[rank]->getOperand(0))));
  accumulateHaloExchangeVJP(dy, dx);
  for (int64_t rank = 0; rank < ranks; ++rank)
    cotangents[rank]->add(rankOps[rank]->getOperand(0), std::move(dx[rank]));
}

void propagateStateExchange(ArrayRef<Operation *> rankOps,
                            ArrayRef<const Environment *> envs,
                            ArrayRef<CotangentMap *> cotangents) {
  const int64_t ranks = static_cast<int64_t>(rankOps.size());
  std::vector<Tensor> dIncoming =
      takeResultCotangents(rankOps, envs, cotangents);
  std::vector<const Tensor *> transitions, partials;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    transitions.push_back(&envs[rank]->tensor(rankOps[rank]->getOperand(0)));
    partials.push_back(&envs[rank]->tensor(rankOps[rank]->getOperand(1)));
  }
  StateExchangeGradients grads =
      stateExchangeVJP(transitions, partials, dIncoming);
  for (int64_t rank = 0; rank < ranks; ++rank) {
    cotangents[rank]->add(rankOps[rank]->getOperand(0),
                          std::move(grads.dtransitions[rank]));
    cotangents[rank]->add(rankOps[rank]->getOperand(1),
                          std::move(grads.dpartials[rank]));
  }
}

void propagateGatherSequenceStates(ArrayRef<Operation *> rankOps,
                                   ArrayRef<const Environment *> envs,
                                   ArrayRef<CotangentMap *> cotangents) {
  auto op = cast<comm::GatherSequenceStatesOp>(rankOps[0]);
  const int64_t ranks = static_cast<int64_t>(rankOps.size());
  std::vector<Tensor> dx =
      gatherSequenceStatesVJP(takeResultCotangents(rankOps, envs, cotangents),
                              envs[0]->packing(op.getPacking()));
  for (int64_t rank = 0; rank < ranks; ++rank)
    cotangents[rank]->add(rankOps[rank]->getOperand(0), std::move(dx[rank]));
}

/// gdn.convert_layout gathers the global tensor by the operand's layout and
/// scatters it by the result's; its VJP gathers the cotangent by the
/// result's layout and scatters it by the operand's. A tensor without a
/// layout is every rank's: its gather takes rank 0's copy (so the cotangent
/// goes to rank 0 alone) and its scatter copies it to all (so the
/// cotangents sum).
llvm::Error propagateConvertLayout(ArrayRef<Operation *> rankOps,
                                   ArrayRef<const Environment *> envs,
                                   ArrayRef<CotangentMap *> cotangents) {
  auto op = cast<ConvertLayoutOp>(rankOps[0]);
  const int64_t ranks = static_cast<int64_t>(rankOps.size());
  const PackingInfo &packing = envs[0]->packing(op.getPacking());
  std::vector<Tensor> dy = takeResultCotangents(rankOps, envs, cotangents);
  Tensor global;
  if (getSequenceLayout(op.getY().getType())) {
    auto gathered = gatherFromRanks(dy, op.getY().getType(), &packing);
    if (!gathered)
      return makeOpError(op, envs[0]->getRank(),
                         llvm::toString(gathered.takeError()));
    global = std::move(*gathered);
  } else {
    global = std::move(dy[0]);
    for (int64_t rank = 1; rank < ranks; ++rank)
      accumulateInto(global, dy[rank]);
  }
  if (!getSequenceLayout(op.getX().getType())) {
    cotangents[0]->add(rankOps[0]->getOperand(0), std::move(global));
    return llvm::Error::success();
  }
  auto shards = scatterToRanks(global, op.getX().getType(), ranks, &packing);
  if (!shards)
    return makeOpError(op, envs[0]->getRank(),
                       llvm::toString(shards.takeError()));
  for (int64_t rank = 0; rank < ranks; ++rank)
    cotangents[rank]->add(rankOps[rank]->getOperand(0),
                          std::move((*shards)[rank]));
  return llvm::Error::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// The transposed communication, on every rank's tensors at once
//===----------------------------------------------------------------------===//

void mlir::gdn::interp::accumulateHaloExchangeVJP(ArrayRef<Tensor> dhalo,
                                                  MutableArrayRef<Tensor> dx) {
  const int64_t ranks = static_cast<int64_t>(dx.size());
  const int64_t rows = dhalo[0].getDimSize(0);
  const int64_t width = dhalo[0].getNumElements() / std::max<int64_t>(rows, 1);
  // The forward's copy loop, with the copies reversed.
  for (int64_t rank = 0; rank < ranks; ++rank) {
    int64_t filled = 0;
    for (int64_t source = rank - 1; source >= 0 && filled < rows; --source) {
      const int64_t previousRows = dx[source].getDimSize(0);
      const int64_t take = std::min(rows - filled, previousRows);
      const double *from =
          dhalo[rank].getData() + (rows - filled - take) * width;
      double *to = dx[source].getData() + (previousRows - take) * width;
      for (int64_t i = 0; i < take * width; ++i)
        to[i] += from[i];
      filled += take;
    }
  }
}

StateExchangeGradients
mlir::gdn::interp::stateExchangeVJP(ArrayRef<const Tensor *> transitions,
                                    ArrayRef<const Tensor *> partials,
                                    ArrayRef<Tensor> dIncoming) {
  const int64_t ranks = static_cast<int64_t>(transitions.size());
  const Tensor &firstPartial = *partials[0];
  const int64_t heads = firstPartial.getDimSize(0),
                K = firstPartial.getDimSize(1), V = firstPartial.getDimSize(2);
  auto transition = [&](int64_t rank) { return transitions[rank]->getData(); };
  auto partial = [&](int64_t rank) { return partials[rank]->getData(); };
  // The chain S_in(0) = 0, S_in(r + 1) = M_r S_in(r) + S_r (every chain
  // kind computes this function), recomputed in float64.
  std::vector<std::vector<double>> incoming(
      ranks, std::vector<double>(heads * K * V, 0.0));
  for (int64_t rank = 0; rank + 1 < ranks; ++rank)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < V; ++j) {
          double sum = partial(rank)[(h * K + i) * V + j];
          for (int64_t m = 0; m < K; ++m)
            sum += transition(rank)[(h * K + i) * K + m] *
                   incoming[rank][(h * K + m) * V + j];
          incoming[rank + 1][(h * K + i) * V + j] = sum;
        }
  // Backwards: G(r) = dS_in(r) + M_r^T G(r + 1) is the whole cotangent of
  // S_in(r); then dS_r = G(r + 1) and dM_r = G(r + 1) S_in(r)^T. The last
  // rank's summary feeds nothing.
  StateExchangeGradients grads;
  grads.dtransitions.resize(ranks);
  grads.dpartials.resize(ranks);
  std::vector<double> later(heads * K * V, 0.0); // G(r + 1)
  for (int64_t rank = ranks - 1; rank >= 0; --rank) {
    Tensor dTransition = zerosLike(*transitions[rank]);
    Tensor dPartial = zerosLike(*partials[rank]);
    std::vector<double> total(dIncoming[rank].values());
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < K; ++i)
        for (int64_t j = 0; j < V; ++j) {
          const double g = later[(h * K + i) * V + j];
          dPartial.getData()[(h * K + i) * V + j] = g;
          for (int64_t m = 0; m < K; ++m) {
            dTransition.getData()[(h * K + i) * K + m] +=
                g * incoming[rank][(h * K + m) * V + j];
            total[(h * K + m) * V + j] +=
                transition(rank)[(h * K + i) * K + m] * g;
          }
        }
    later = std::move(total);
    grads.dtransitions[rank] = std::move(dTransition);
    grads.dpartials[rank] = std::move(dPartial);
  }
  return grads;
}

std::vector<Tensor>
mlir::gdn::interp::gatherSequenceStatesVJP(ArrayRef<Tensor> dy,
                                           const PackingInfo &packing) {
  const int64_t ranks = static_cast<int64_t>(dy.size());
  std::vector<Tensor> dx;
  for (int64_t rank = 0; rank < ranks; ++rank)
    dx.push_back(zerosLike(dy[rank]));
  const int64_t perSequence =
      dx[0].getNumElements() / std::max<int64_t>(packing.getNumSeqs(), 1);
  // Every rank's copy of sequence i came from its owner's entry.
  for (int64_t seq = 0; seq < packing.getNumSeqs(); ++seq) {
    double *to =
        dx[getSequenceOwner(packing, ranks, seq)].getData() + seq * perSequence;
    for (const Tensor &cotangent : dy)
      for (int64_t i = 0; i < perSequence; ++i)
        to[i] += cotangent.getData()[seq * perSequence + i];
  }
  return dx;
}

llvm::Error
mlir::gdn::interp::propagateCollective(ArrayRef<Operation *> rankOps,
                                       ArrayRef<const Environment *> envs,
                                       ArrayRef<CotangentMap *> cotangents) {
  Operation *op = rankOps[0];
  using Rule = void (*)(ArrayRef<Operation *>, ArrayRef<const Environment *>,
                        ArrayRef<CotangentMap *>);
  Rule rule = nullptr;
  if (isa<comm::AllGatherOp>(op))
    rule = propagateAllGather;
  else if (isa<comm::ReduceScatterOp>(op))
    rule = propagateReduceScatter;
  else if (isa<comm::AllToAllOp>(op))
    rule = propagateAllToAll;
  else if (isa<comm::HaloExchangeOp>(op))
    rule = propagateHaloExchange;
  else if (isa<comm::StateExchangeOp>(op))
    rule = propagateStateExchange;
  else if (isa<comm::GatherSequenceStatesOp>(op))
    rule = propagateGatherSequenceStates;
  else if (!isa<ConvertLayoutOp>(op))
    return makeNoRuleError(op, envs[0]->getRank());
  // Results nothing downstream depends on, on any rank, send nothing back.
  bool needed = false;
  for (size_t rank = 0; rank < rankOps.size(); ++rank)
    needed |= cotangents[rank]->hasAny(rankOps[rank]->getResults());
  if (!needed)
    return llvm::Error::success();
  if (!rule)
    return propagateConvertLayout(rankOps, envs, cotangents);
  rule(rankOps, envs, cotangents);
  return llvm::Error::success();
}
