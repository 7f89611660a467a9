//===- Collectives.cpp - gdn_comm ops across simulated ranks --------------===//
//
// Each collective receives every rank's operand at once and produces every
// rank's result, following the op descriptions in GdnComm.td. Sums and state
// chains run in rank order, so results are deterministic. The fp32 chain of
// chunkwise CP runs in float64 here (the reference), rounded to the result
// type once.
//
//===----------------------------------------------------------------------===//

#include "Engine.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Interpreter/Distribution.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

namespace {

/// Concatenates `parts` along `dim`.
Tensor concatenate(ArrayRef<Tensor> parts, unsigned dim) {
  std::vector<int64_t> shape(parts[0].getShape().begin(),
                             parts[0].getShape().end());
  shape[dim] = 0;
  for (const Tensor &part : parts)
    shape[dim] += part.getDimSize(dim);
  Tensor result(parts[0].getKind(), shape);
  Extents total(shape, dim);
  int64_t offset = 0;
  for (const Tensor &part : parts) {
    Extents piece(part.getShape(), dim);
    for (int64_t o = 0; o < piece.outer; ++o)
      std::copy(part.getData() + o * piece.along * piece.inner,
                part.getData() + (o + 1) * piece.along * piece.inner,
                result.getData() + (o * total.along + offset) * total.inner);
    offset += piece.along;
  }
  return result;
}

/// Slice `index` of `count` equal slices of `tensor` along `dim`.
Tensor slice(const Tensor &tensor, unsigned dim, int64_t index, int64_t count) {
  std::vector<int64_t> shape(tensor.getShape().begin(),
                             tensor.getShape().end());
  Extents whole(shape, dim);
  shape[dim] /= count;
  Tensor result(tensor.getKind(), shape);
  const int64_t length = shape[dim];
  for (int64_t o = 0; o < whole.outer; ++o)
    std::copy(tensor.getData() +
                  (o * whole.along + index * length) * whole.inner,
              tensor.getData() +
                  (o * whole.along + (index + 1) * length) * whole.inner,
              result.getData() + o * length * whole.inner);
  return result;
}

llvm::Error divisible(Operation *op, const Tensor &tensor, unsigned dim,
                      int64_t ranks) {
  if (tensor.getDimSize(dim) % ranks == 0)
    return llvm::Error::success();
  return makeOpError(op, 0,
                     llvm::formatv("dimension {0} of size {1} cannot be split "
                                   "over {2} ranks",
                                   dim, tensor.getDimSize(dim), ranks));
}

/// (M, S) summaries of chunkwise CP: the state handed on is M * S_in + S.
struct StateSummary {
  std::vector<double> transition; // [HV, K, K]
  std::vector<double> partial;    // [HV, K, V]
};

/// Applies `later` after `earlier`: (M_l M_e, M_l S_e + S_l).
StateSummary compose(const StateSummary &earlier, const StateSummary &later,
                     int64_t heads, int64_t K, int64_t V) {
  StateSummary result{std::vector<double>(heads * K * K, 0.0), later.partial};
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < K; ++i)
      for (int64_t m = 0; m < K; ++m) {
        const double factor = later.transition[(h * K + i) * K + m];
        for (int64_t j = 0; j < K; ++j)
          result.transition[(h * K + i) * K + j] +=
              factor * earlier.transition[(h * K + m) * K + j];
        for (int64_t j = 0; j < V; ++j)
          result.partial[(h * K + i) * V + j] +=
              factor * earlier.partial[(h * K + m) * V + j];
      }
  return result;
}

llvm::Error stateExchange(comm::StateExchangeOp op,
                          ArrayRef<const Tensor *> transitions,
                          ArrayRef<const Tensor *> partials,
                          MutableArrayRef<Environment> envs) {
  const int64_t ranks = static_cast<int64_t>(envs.size());
  const Tensor &first = *partials[0];
  const int64_t heads = first.getDimSize(0), K = first.getDimSize(1),
                V = first.getDimSize(2);
  if (transitions[0]->getDimSize(0) != heads ||
      transitions[0]->getDimSize(1) != K || transitions[0]->getDimSize(2) != K)
    return makeOpError(op, 0,
                       "the transition must be [HV, K, K] for a partial state "
                       "[HV, K, V]");
  std::vector<StateSummary> summaries;
  for (int64_t rank = 0; rank < ranks; ++rank)
    summaries.push_back(
        {transitions[rank]->values(), partials[rank]->values()});
  // prefix[r] = the composition of ranks 0..r-1 applied to a zero state.
  std::vector<StateSummary> prefix(ranks);
  if (op.getChain() == comm::ChainKind::AllGather) {
    StateSummary running{std::vector<double>(heads * K * K, 0.0),
                         std::vector<double>(heads * K * V, 0.0)};
    for (int64_t rank = 0; rank < ranks; ++rank) {
      prefix[rank] = running;
      running = compose(running, summaries[rank], heads, K, V);
    }
  } else {
    // Hillis-Steele inclusive scan over ranks, then shift by one rank.
    std::vector<StateSummary> scan = summaries;
    for (int64_t step = 1; step < ranks; step *= 2) {
      std::vector<StateSummary> next = scan;
      for (int64_t rank = step; rank < ranks; ++rank)
        next[rank] = compose(scan[rank - step], scan[rank], heads, K, V);
      scan = std::move(next);
    }
    prefix[0] = {std::vector<double>(heads * K * K, 0.0),
                 std::vector<double>(heads * K * V, 0.0)};
    for (int64_t rank = 1; rank < ranks; ++rank)
      prefix[rank] = scan[rank - 1];
  }
  ElementKind kind = cantFail(
      getElementKind(op.getIncomingState().getType().getElementType()));
  for (int64_t rank = 0; rank < ranks; ++rank) {
    Tensor incoming(kind, {heads, K, V});
    incoming.values() = prefix[rank].partial;
    incoming.roundToStorage();
    envs[rank].bind(op.getIncomingState(), std::move(incoming));
  }
  return llvm::Error::success();
}

llvm::Error convertLayout(ArrayRef<Operation *> rankOps,
                          MutableArrayRef<Environment> envs) {
  auto op = cast<ConvertLayoutOp>(rankOps[0]);
  const int64_t ranks = static_cast<int64_t>(envs.size());
  std::vector<Tensor> locals;
  for (int64_t rank = 0; rank < ranks; ++rank)
    locals.push_back(envs[rank].tensor(rankOps[rank]->getOperand(0)));
  const PackingInfo &packing = envs[0].packing(op.getPacking());
  auto global = gatherFromRanks(locals, op.getX().getType(), &packing);
  if (!global)
    return makeOpError(op, 0, llvm::toString(global.takeError()));
  auto shards = scatterToRanks(*global, op.getY().getType(), ranks, &packing);
  if (!shards)
    return makeOpError(op, 0, llvm::toString(shards.takeError()));
  for (int64_t rank = 0; rank < ranks; ++rank)
    envs[rank].bind(rankOps[rank]->getResult(0), std::move((*shards)[rank]));
  return llvm::Error::success();
}

} // namespace

llvm::Error
mlir::gdn::interp::checkSameShapeOnRanks(Operation *op,
                                         ArrayRef<const Tensor *> inputs) {
  for (size_t rank = 1; rank < inputs.size(); ++rank)
    if (inputs[rank]->getShape() != inputs[0]->getShape())
      return makeOpError(op, rank,
                         llvm::formatv("the operand has shape {0} but rank 0's "
                                       "is {1}; every rank must contribute "
                                       "the same shape",
                                       inputs[rank]->describe(),
                                       inputs[0]->describe()));
  return llvm::Error::success();
}

llvm::Error mlir::gdn::interp::checkSequenceCount(Operation *op,
                                                  const Tensor &states,
                                                  const PackingInfo &packing) {
  if (states.getDimSize(0) == packing.getNumSeqs())
    return llvm::Error::success();
  return makeOpError(op, 0,
                     llvm::formatv("the states have {0} entries but the "
                                   "packing {1} sequences",
                                   states.getDimSize(0), packing.getNumSeqs()));
}

/// Checks every rank's tensors against the op's types (dynamic sizes may
/// differ between ranks; the collectives check what they need of those).
static llvm::Error checkTypes(ArrayRef<Operation *> rankOps,
                              MutableArrayRef<Environment> envs, bool results) {
  for (auto [rank, op] : llvm::enumerate(rankOps)) {
    ValueRange values =
        results ? ValueRange(op->getResults()) : ValueRange(op->getOperands());
    for (auto [index, value] : llvm::enumerate(values))
      if (isa<RankedTensorType>(value.getType()))
        if (auto error = checkAgainstType(
                envs[rank].tensor(value), value.getType(),
                (results ? "result #" : "operand #") + llvm::Twine(index)))
          return makeOpError(op, rank, llvm::toString(std::move(error)));
  }
  return llvm::Error::success();
}

/// Every rank's operand must have the same sizes except along `exceptDim`.
static llvm::Error sameShapesExcept(Operation *op,
                                    ArrayRef<const Tensor *> inputs,
                                    int64_t exceptDim) {
  for (size_t rank = 1; rank < inputs.size(); ++rank)
    for (int64_t d = 0; d < inputs[0]->getRank(); ++d)
      if (d != exceptDim &&
          inputs[rank]->getDimSize(d) != inputs[0]->getDimSize(d))
        return makeOpError(op, rank,
                           llvm::formatv("dimension {0} of the operand is {1} "
                                         "but {2} on rank 0",
                                         d, inputs[rank]->getDimSize(d),
                                         inputs[0]->getDimSize(d)));
  return llvm::Error::success();
}

llvm::Error
mlir::gdn::interp::executeCollective(ArrayRef<Operation *> rankOps,
                                     MutableArrayRef<Environment> envs) {
  if (auto error = checkTypes(rankOps, envs, /*results=*/false))
    return error;
  if (auto error = executeCollectiveUnchecked(rankOps, envs))
    return error;
  return checkTypes(rankOps, envs, /*results=*/true);
}

llvm::Error mlir::gdn::interp::executeCollectiveUnchecked(
    ArrayRef<Operation *> rankOps, MutableArrayRef<Environment> envs) {
  Operation *op = rankOps[0];
  const int64_t ranks = static_cast<int64_t>(envs.size());
  if (isa<ConvertLayoutOp>(op))
    return convertLayout(rankOps, envs);
  if (std::optional<llvm::Error> transposed =
          executeTransposedCollective(rankOps, envs))
    return std::move(*transposed);

  std::vector<const Tensor *> inputs;
  for (int64_t rank = 0; rank < ranks; ++rank)
    inputs.push_back(&envs[rank].tensor(rankOps[rank]->getOperand(0)));
  auto bindAll = [&](auto &&resultOf) {
    std::vector<Tensor> results;
    for (int64_t rank = 0; rank < ranks; ++rank)
      results.push_back(resultOf(rank));
    for (int64_t rank = 0; rank < ranks; ++rank)
      envs[rank].bind(rankOps[rank]->getResult(0), std::move(results[rank]));
  };

  if (auto gather = dyn_cast<comm::AllGatherOp>(op)) {
    if (auto error = sameShapesExcept(op, inputs, gather.getDim()))
      return error;
    std::vector<Tensor> parts;
    for (const Tensor *input : inputs)
      parts.push_back(*input);
    Tensor all = concatenate(parts, gather.getDim());
    bindAll([&](int64_t) { return all; });
    return llvm::Error::success();
  }
  if (auto scatter = dyn_cast<comm::ReduceScatterOp>(op)) {
    if (auto error = checkSameShapeOnRanks(op, inputs))
      return error;
    if (auto error = divisible(op, *inputs[0], scatter.getDim(), ranks))
      return error;
    Tensor sum = *inputs[0];
    for (int64_t rank = 1; rank < ranks; ++rank)
      for (int64_t i = 0; i < sum.getNumElements(); ++i)
        sum.getData()[i] += inputs[rank]->getData()[i];
    sum.roundToStorage();
    bindAll([&](int64_t rank) {
      return slice(sum, scatter.getDim(), rank, ranks);
    });
    return llvm::Error::success();
  }
  if (auto allToAll = dyn_cast<comm::AllToAllOp>(op)) {
    if (auto error = checkSameShapeOnRanks(op, inputs))
      return error;
    unsigned split = allToAll.getSplitDim(), concat = allToAll.getConcatDim();
    if (auto error = divisible(op, *inputs[0], split, ranks))
      return error;
    bindAll([&](int64_t rank) {
      std::vector<Tensor> received;
      for (int64_t source = 0; source < ranks; ++source)
        received.push_back(slice(*inputs[source], split, rank, ranks));
      return concatenate(received, concat);
    });
    return llvm::Error::success();
  }
  if (auto halo = dyn_cast<comm::HaloExchangeOp>(op)) {
    if (auto error = sameShapesExcept(op, inputs, 0))
      return error;
    const int64_t rows = halo.getTokens();
    const int64_t width = inputs[0]->getNumElements() /
                          std::max<int64_t>(inputs[0]->getDimSize(0), 1);
    bindAll([&](int64_t rank) {
      // The `rows` buffer rows before this rank's shard, from however many
      // previous ranks hold them (shards may be shorter than the halo), and
      // zeros before the buffer's first row.
      std::vector<int64_t> shape(inputs[0]->getShape().begin(),
                                 inputs[0]->getShape().end());
      shape[0] = rows;
      Tensor result(inputs[0]->getKind(), shape);
      int64_t filled = 0; // rows taken, counted from the end of the halo
      for (int64_t source = rank - 1; source >= 0 && filled < rows; --source) {
        const Tensor &previous = *inputs[source];
        const int64_t take =
            std::min(rows - filled, previous.getDimSize(0));
        const double *from =
            previous.getData() + (previous.getDimSize(0) - take) * width;
        std::copy(from, from + take * width,
                  result.getData() + (rows - filled - take) * width);
        filled += take;
      }
      return result;
    });
    return llvm::Error::success();
  }
  if (auto exchange = dyn_cast<comm::StateExchangeOp>(op)) {
    std::vector<const Tensor *> partials;
    for (int64_t rank = 0; rank < ranks; ++rank)
      partials.push_back(&envs[rank].tensor(rankOps[rank]->getOperand(1)));
    if (auto error = checkSameShapeOnRanks(op, partials))
      return error;
    if (auto error = checkSameShapeOnRanks(op, inputs))
      return error;
    return stateExchange(exchange, inputs, partials, envs);
  }
  if (auto gather = dyn_cast<comm::GatherSequenceStatesOp>(op)) {
    if (auto error = checkSameShapeOnRanks(op, inputs))
      return error;
    const PackingInfo &packing = envs[0].packing(gather.getPacking());
    if (auto error = checkSequenceCount(op, *inputs[0], packing))
      return error;
    Tensor result(inputs[0]->getKind(), std::vector<int64_t>(
                                            inputs[0]->getShape().begin(),
                                            inputs[0]->getShape().end()));
    const int64_t perSequence =
        result.getNumElements() / std::max<int64_t>(packing.getNumSeqs(), 1);
    for (int64_t seq = 0; seq < packing.getNumSeqs(); ++seq) {
      const double *from =
          inputs[getSequenceOwner(packing, ranks, seq)]->getData() +
          seq * perSequence;
      std::copy(from, from + perSequence,
                result.getData() + seq * perSequence);
    }
    bindAll([&](int64_t) { return result; });
    return llvm::Error::success();
  }
  return makeOpError(op, 0,
                     "the reference interpreter does not support this "
                     "collective");
}
