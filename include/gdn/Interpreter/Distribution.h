//===- Distribution.h - global tensors to rank-local shards -----*- C++ -*-===//
//
// A tensor's layout encoding says how the global tensor is spread over ranks.
// These functions move between the two views: the interpreter uses them to
// scatter a program's global inputs, gather its outputs, and to execute
// gdn.convert_layout. Zigzag layouts cut each sequence's slot into 2P pieces,
// so they need the global packing.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_DISTRIBUTION_H
#define GDN_INTERPRETER_DISTRIBUTION_H

#include "gdn/Interpreter/Packing.h"
#include "gdn/Interpreter/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace mlir::gdn::interp {

/// The global shape of a value whose rank-local type is `localType` (known
/// dimensions only; dynamic ones stay dynamic).
std::vector<int64_t> getGlobalShape(RankedTensorType localType);

/// Each rank's share of `global` under `localType`'s layout. Tensors without
/// a layout are replicated. `packing` is required for zigzag layouts.
llvm::Expected<std::vector<Tensor>> scatterToRanks(const Tensor &global,
                                                   RankedTensorType localType,
                                                   int64_t ranks,
                                                   const PackingInfo *packing);

/// Where rank `rank`'s share of a tensor of `localType` sits in the global
/// tensor of `globalShape`: local index i along `dim` is global index
/// `indices[i]`. std::nullopt for tensors without a layout (replicated).
struct ShardIndices {
  unsigned dim = 0;
  std::vector<int64_t> indices;
};
llvm::Expected<std::optional<ShardIndices>>
getShardIndices(RankedTensorType localType, llvm::ArrayRef<int64_t> globalShape,
                int64_t ranks, int64_t rank, const PackingInfo *packing);

/// The inverse of scatterToRanks. Tensors without a layout must be equal on
/// all ranks (the result is rank 0's); a difference is reported.
llvm::Expected<Tensor> gatherFromRanks(llvm::ArrayRef<Tensor> locals,
                                       RankedTensorType localType,
                                       const PackingInfo *packing);

/// Global token rows held by `rank` under a zigzag layout, in local order.
llvm::Expected<std::vector<int64_t>> getZigzagRows(const PackingInfo &packing,
                                                   int64_t ranks, int64_t rank);

/// Rank `rank`'s contiguous shard of a packed buffer under chunkwise context
/// parallelism, and the (at most two) sequences that cross its edges.
struct ChunkwiseShard {
  int64_t begin = 0, end = 0; ///< buffer rows [begin, end)
  /// The sequence whose real tokens begin before the shard and reach into it.
  std::optional<int64_t> continuing;
  /// The sequence whose real tokens reach past the shard's end.
  std::optional<int64_t> leaving;
};

/// The shard of `rank` among `ranks`; an error when the buffer does not
/// split into equal shards.
llvm::Expected<ChunkwiseShard>
getChunkwiseShard(const PackingInfo &packing, int64_t ranks, int64_t rank);

/// `packing` clipped to `shard`: every sequence's slot and real tokens cut
/// to the shard's rows, with offsets relative to its first row.
llvm::Expected<PackingInfo> getLocalPacking(const PackingInfo &packing,
                                            const ChunkwiseShard &shard);

/// The rank whose shard holds sequence `seq`'s last real token (for an
/// empty sequence, its slot's first row; the last rank past the buffer).
int64_t getSequenceOwner(const PackingInfo &packing, int64_t ranks,
                         int64_t seq);

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_DISTRIBUTION_H
