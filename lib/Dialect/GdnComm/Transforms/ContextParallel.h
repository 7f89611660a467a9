//===- ContextParallel.h - what the two CP modes share ------------*- C++ -*-===//
//
// gdn-context-parallel finds the function's cores and token-indexed values
// (ContextParallel.cpp), then rewrites each core in the mode chosen for it:
// headwise (HeadwiseCP.cpp) or chunkwise (ChunkwiseCP.cpp). This header is
// the interface between the driver and the two rewrites.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TRANSFORMS_CONTEXTPARALLEL_H
#define GDN_LIB_TRANSFORMS_CONTEXTPARALLEL_H

#include "gdn/Analysis/GdnCore.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

namespace mlir::gdn::cp {

/// The group and the layouts of one pass run.
struct Sharding {
  int64_t ranks;
  comm::GroupAttr group;
  /// The function's token shards (contiguous or zigzag).
  SeqLayoutAttr tokenShard;
  /// The contiguous shard of the group, which collectives map to rank order.
  SeqLayoutAttr contiguous;
  /// How chunkwise mode chains the state summaries.
  comm::ChainKind chain;

  /// `value` (a token shard) as a contiguous shard: a no-op unless the
  /// function's shards are zigzag.
  Value toContiguous(OpBuilder &builder, Location loc, Value value,
                     Value packing) const;
  /// The inverse of toContiguous.
  Value toTokenShard(OpBuilder &builder, Location loc, Value value,
                     Value packing) const;
  /// The token shard of an SP group of `spRanks` ranks nested inside this
  /// rank's CP shard (SP innermost): contiguous over spRanks * P ranks, or
  /// zigzag over P with `inner = spRanks`.
  SeqLayoutAttr nestedIn(int64_t spRanks) const {
    return tokenShard.getKind() == SeqLayoutKind::Zigzag
               ? SeqLayoutAttr::get(tokenShard.getContext(),
                                    SeqLayoutKind::Zigzag, ranks, spRanks)
               : SeqLayoutAttr::get(tokenShard.getContext(),
                                    SeqLayoutKind::Contiguous, ranks * spRanks);
  }
};

/// Gives every token-indexed value reachable from `starts` through token-local
/// ops (gdn.linear's input, gdn.split_qkvz, gdn.gated_rmsnorm) the shard type,
/// stopping at `stops` (the cores); anything else that reads one is an error.
LogicalResult shardTokenValues(ArrayRef<Value> starts,
                               const llvm::DenseSet<Operation *> &stops,
                               const Sharding &sharding);

/// Rewrites `core` for this rank's heads (Ulysses); its token-indexed inputs
/// already carry the shard type.
LogicalResult distributeHeadwise(func::FuncOp func, Core core,
                                 const llvm::DenseSet<Operation *> &coreOps,
                                 const Sharding &sharding);

/// Rewrites `core` to run on this rank's contiguous token shard, with the
/// conv halo and the chained delta-rule states.
LogicalResult distributeChunkwise(func::FuncOp func, Core core,
                                  const llvm::DenseSet<Operation *> &coreOps,
                                  const Sharding &sharding);

/// Erases the core's original ops (after their results were replaced).
void eraseCore(Core core);

} // namespace mlir::gdn::cp

#endif // GDN_LIB_TRANSFORMS_CONTEXTPARALLEL_H
