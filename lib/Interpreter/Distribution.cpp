//===- Distribution.cpp - global tensors to rank-local shards -------------===//
//
// Implements the layouts of docs/spec.md ("Layouts"): contiguous
// token shards, zigzag shards (pieces r and 2P-1-r of every sequence) and
// head shards. Every layout is expressed as "which global rows / heads does
// rank r hold, in which order", so scatter and gather share one mapping.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/Distribution.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

std::vector<int64_t> mlir::gdn::interp::getGlobalShape(RankedTensorType type) {
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  Attribute layout = getSequenceLayout(type);
  unsigned dim = isa_and_nonnull<HeadsLayoutAttr>(layout) ? 1 : 0;
  if (layout && !ShapedType::isDynamic(shape[dim]))
    shape[dim] *= getLayoutRanks(type);
  return shape;
}

llvm::Expected<std::vector<int64_t>>
mlir::gdn::interp::getZigzagRows(const PackingInfo &packing, int64_t ranks,
                                 int64_t rank) {
  std::vector<int64_t> rows;
  for (int64_t seq = 0; seq < packing.getNumSeqs(); ++seq) {
    int64_t begin = packing.getBegin(seq);
    int64_t slot = packing.isPadded() ? packing.getCuPadded()[seq + 1] - begin
                                      : packing.getLength(seq);
    if (slot % (2 * ranks) != 0)
      return llvm::createStringError(
          ("zigzag sharding over " + Twine(ranks) +
           " ranks needs every "
           "sequence's length to be a multiple of " +
           Twine(2 * ranks) + ", but sequence " + Twine(seq) + " has length " +
           Twine(slot) + "; pad the sequence or use the contiguous layout")
              .str());
    int64_t piece = slot / (2 * ranks);
    for (int64_t chunk : {rank, 2 * ranks - 1 - rank})
      for (int64_t i = 0; i < piece; ++i)
        rows.push_back(begin + chunk * piece + i);
  }
  return rows;
}

namespace {
/// Where rank `rank`'s local slices come from in the global tensor: along
/// `dim`, local index i is global index `indices[i]`.
struct ShardMap {
  unsigned dim = 0;
  std::vector<int64_t> indices;
};

llvm::Expected<ShardMap> getShardMap(Attribute layout,
                                     llvm::ArrayRef<int64_t> globalShape,
                                     int64_t ranks, int64_t rank,
                                     const PackingInfo *packing) {
  ShardMap map;
  if (auto heads = dyn_cast<HeadsLayoutAttr>(layout)) {
    map.dim = 1;
    int64_t local = globalShape[1] / ranks;
    for (int64_t i = 0; i < local; ++i)
      map.indices.push_back(rank * local + i);
    return map;
  }
  auto seq = cast<SeqLayoutAttr>(layout);
  if (seq.getKind() == SeqLayoutKind::Contiguous) {
    int64_t local = globalShape[0] / ranks;
    for (int64_t i = 0; i < local; ++i)
      map.indices.push_back(rank * local + i);
    return map;
  }
  if (!packing)
    return llvm::createStringError(
        "a zigzag layout needs the packing (cu_seqlens) to cut sequences; the "
        "function has no cu_seqlens argument the interpreter can use");
  if (packing->getBufferTokens() != globalShape[0])
    return llvm::createStringError(("the packing describes " +
                                    Twine(packing->getBufferTokens()) +
                                    " tokens but the zigzag tensor has " +
                                    Twine(globalShape[0]) + " globally")
                                       .str());
  // Nested in an SP group of `inner` ranks (SP innermost): rank
  // c * inner + s holds contiguous piece s of zigzag shard c.
  const int64_t inner = seq.getInner();
  auto rows = getZigzagRows(*packing, seq.getRanks(), rank / inner);
  if (!rows)
    return rows.takeError();
  const int64_t piece = static_cast<int64_t>(rows->size()) / inner;
  map.indices.assign(rows->begin() + (rank % inner) * piece,
                     rows->begin() + (rank % inner + 1) * piece);
  return map;
}

/// Checks that the distributed dimension divides evenly over the ranks.
llvm::Error checkDivisible(Attribute layout, llvm::ArrayRef<int64_t> shape,
                           int64_t ranks) {
  unsigned dim = isa<HeadsLayoutAttr>(layout) ? 1 : 0;
  if (shape[dim] % ranks == 0)
    return llvm::Error::success();
  return llvm::createStringError(
      ("dimension " + Twine(dim) + " of size " + Twine(shape[dim]) +
       " cannot be split evenly over " + Twine(ranks) + " ranks")
          .str());
}

/// Copies slices along `map.dim` between a global and a local tensor.
void copySlices(const ShardMap &map, llvm::ArrayRef<int64_t> globalShape,
                double *global, double *local, bool toLocal) {
  int64_t outer = 1, inner = 1;
  for (unsigned d = 0; d < map.dim; ++d)
    outer *= globalShape[d];
  for (unsigned d = map.dim + 1; d < globalShape.size(); ++d)
    inner *= globalShape[d];
  const int64_t globalExtent = globalShape[map.dim];
  const int64_t localExtent = static_cast<int64_t>(map.indices.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < localExtent; ++i) {
      double *g = global + (o * globalExtent + map.indices[i]) * inner;
      double *l = local + (o * localExtent + i) * inner;
      if (toLocal)
        std::copy(g, g + inner, l);
      else
        std::copy(l, l + inner, g);
    }
}
} // namespace

llvm::Expected<std::optional<ShardIndices>>
mlir::gdn::interp::getShardIndices(RankedTensorType localType,
                                   llvm::ArrayRef<int64_t> globalShape,
                                   int64_t ranks, int64_t rank,
                                   const PackingInfo *packing) {
  Attribute layout = getSequenceLayout(localType);
  if (!layout)
    return std::optional<ShardIndices>();
  auto map = getShardMap(layout, globalShape, ranks, rank, packing);
  if (!map)
    return map.takeError();
  return std::optional<ShardIndices>(
      ShardIndices{map->dim, std::move(map->indices)});
}

llvm::Expected<std::vector<Tensor>>
mlir::gdn::interp::scatterToRanks(const Tensor &global,
                                  RankedTensorType localType, int64_t ranks,
                                  const PackingInfo *packing) {
  Attribute layout = getSequenceLayout(localType);
  if (!layout)
    return std::vector<Tensor>(static_cast<size_t>(ranks), global);
  if (getLayoutRanks(localType) != ranks)
    return llvm::createStringError(
        ("a layout over " + Twine(getLayoutRanks(localType)) +
         " ranks cannot run on " + Twine(ranks) + " ranks")
            .str());
  if (auto error = checkDivisible(layout, global.getShape(), ranks))
    return std::move(error);
  std::vector<Tensor> locals;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    auto map = getShardMap(layout, global.getShape(), ranks, rank, packing);
    if (!map)
      return map.takeError();
    std::vector<int64_t> shape(global.getShape().begin(),
                               global.getShape().end());
    shape[map->dim] = static_cast<int64_t>(map->indices.size());
    Tensor local(global.getKind(), shape);
    copySlices(*map, global.getShape(), const_cast<double *>(global.getData()),
               local.getData(), /*toLocal=*/true);
    locals.push_back(std::move(local));
  }
  return locals;
}

llvm::Expected<Tensor>
mlir::gdn::interp::gatherFromRanks(llvm::ArrayRef<Tensor> locals,
                                   RankedTensorType localType,
                                   const PackingInfo *packing) {
  Attribute layout = getSequenceLayout(localType);
  const int64_t ranks = static_cast<int64_t>(locals.size());
  if (!layout) {
    for (int64_t rank = 1; rank < ranks; ++rank)
      if (locals[rank].getShape() != locals[0].getShape() ||
          std::memcmp(locals[rank].getData(), locals[0].getData(),
                      sizeof(double) * locals[0].getNumElements()) != 0)
        return llvm::createStringError(
            ("a value without a layout must be the same on every rank, but "
             "rank " +
             Twine(rank) +
             " differs from rank 0; give it a "
             "#gdn.seq or #gdn.heads layout")
                .str());
    return locals[0];
  }
  unsigned dim = isa<HeadsLayoutAttr>(layout) ? 1 : 0;
  std::vector<int64_t> shape(locals[0].getShape().begin(),
                             locals[0].getShape().end());
  shape[dim] *= ranks;
  Tensor global(locals[0].getKind(), shape);
  for (int64_t rank = 0; rank < ranks; ++rank) {
    auto map = getShardMap(layout, shape, ranks, rank, packing);
    if (!map)
      return map.takeError();
    copySlices(*map, shape, global.getData(),
               const_cast<double *>(locals[rank].getData()),
               /*toLocal=*/false);
  }
  return global;
}

llvm::Expected<ChunkwiseShard>
mlir::gdn::interp::getChunkwiseShard(const PackingInfo &packing, int64_t ranks,
                                     int64_t rank) {
  const int64_t rows = packing.getBufferTokens();
  if (rows % ranks != 0)
    return llvm::createStringError(
        ("chunkwise context parallelism cuts the buffer into " +
         Twine(ranks) + " equal contiguous shards, but it has " + Twine(rows) +
         " rows; pad the pack to a multiple of " + Twine(ranks))
            .str());
  ChunkwiseShard shard;
  shard.begin = rank * (rows / ranks);
  shard.end = shard.begin + rows / ranks;
  for (int64_t seq = 0; seq < packing.getNumSeqs(); ++seq) {
    // Real tokens are the first getLength(seq) rows of the slot.
    const int64_t first = packing.getBegin(seq);
    const int64_t last = first + packing.getLength(seq); // one past
    if (first < shard.begin && last > shard.begin)
      shard.continuing = seq;
    if (first < shard.end && last > shard.end)
      shard.leaving = seq;
  }
  return shard;
}

llvm::Expected<PackingInfo>
mlir::gdn::interp::getLocalPacking(const PackingInfo &packing,
                                   const ChunkwiseShard &shard) {
  auto clip = [&](int64_t row) {
    return std::clamp(row, shard.begin, shard.end) - shard.begin;
  };
  std::vector<int64_t> cuSeqlens = {0}, cuPadded = {0};
  for (int64_t seq = 0; seq < packing.getNumSeqs(); ++seq) {
    const int64_t first = packing.getBegin(seq);
    const int64_t realEnd = first + packing.getLength(seq);
    cuSeqlens.push_back(cuSeqlens.back() + clip(realEnd) - clip(first));
    if (packing.isPadded())
      cuPadded.push_back(clip(packing.getCuPadded()[seq + 1]));
  }
  std::optional<std::vector<int64_t>> padded;
  if (packing.isPadded())
    padded = std::move(cuPadded);
  return PackingInfo::create(std::move(cuSeqlens), std::move(padded),
                             shard.end - shard.begin);
}

int64_t mlir::gdn::interp::getSequenceOwner(const PackingInfo &packing,
                                            int64_t ranks, int64_t seq) {
  const int64_t rows = packing.getBufferTokens();
  const int64_t length = packing.getLength(seq);
  const int64_t row = packing.getBegin(seq) + std::max<int64_t>(length, 1) - 1;
  if (rows == 0)
    return 0;
  return std::min(ranks - 1, row / (rows / ranks));
}
