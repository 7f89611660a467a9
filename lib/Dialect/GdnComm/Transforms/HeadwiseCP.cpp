//===- HeadwiseCP.cpp - a GDN core over heads (Ulysses) -------------------===//
//
// Headwise context parallelism: the core's token shards go in, the conv
// channels are regrouped so that each rank's share of q, k and v is one block,
// one all_to_all trades the token shard for all tokens of 1/P of the heads,
// parameters are sliced per q/k/v section (the slicing frameworks get wrong
// when they cut the conv channels as one block) and by head, the core runs
// with the global packing, and the inverse all_to_all brings the output back.
//
//===----------------------------------------------------------------------===//

#include "ContextParallel.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cp;

LogicalResult cp::distributeHeadwise(func::FuncOp func, Core core,
                                     const DenseSet<Operation *> &coreOps,
                                     const Sharding &sharding) {
  const int64_t p = sharding.ranks;
  // At the delta rule, which every operand of the core dominates (the
  // conv's need not: the gate inputs may be computed after it).
  OpBuilder builder(core.delta);
  Location loc = core.conv.getLoc();
  Value packing = core.conv.getPacking();
  HeadSlicer slicer(builder, loc, sharding.group, core);
  // The all_to_all concatenates contiguous shards: a zigzag shard is
  // reordered first (and the output back after).
  auto toContiguous = [&](Value value) {
    return sharding.toContiguous(builder, loc, value, packing);
  };
  // Contiguous token shard [T/P, X] -> all tokens of this rank's part of X.
  auto toHeads = [&](Value value, RankedTensorType global) -> Value {
    return comm::AllToAllOp::create(
        builder, loc, withDim(global, 1, divided(global.getDimSize(1), p), {}),
        value, sharding.group, /*split_dim=*/1, /*concat_dim=*/0);
  };

  IRMapping map;
  // A token-indexed input's global type: all tokens (as many as the conv's
  // output has), no layout, its own element type.
  const int64_t globalTokens = core.conv.getY().getType().getDimSize(0);
  auto globalType = [&](Value value) {
    return withDim(cast<RankedTensorType>(value.getType()), 0, globalTokens,
                   {});
  };
  Value mixed = core.conv.getX(), a = core.gates.getA(), b = core.gates.getB();
  map.map(mixed,
          toHeads(slicer.regroup(toContiguous(mixed), 1, /*inverse=*/false),
                  globalType(mixed)));
  slicer.mapCoreParameters(core, map);
  map.map(a, toHeads(toContiguous(a), globalType(a)));
  map.map(b, toHeads(toContiguous(b), globalType(b)));

  // The core itself, cloned with every head count divided by P: activations
  // [T, C] or [T, H, D] and states [N, C or H, ...] are all distributed
  // along dimension 1.
  for (Operation *op : getCoreOps(core)) {
    Operation *clone = builder.clone(*op, map);
    for (OpResult result : clone->getResults())
      if (auto type = dyn_cast<RankedTensorType>(result.getType()))
        result.setType(type.getRank() >= 2
                           ? withDim(type, 1, divided(type.getDimSize(1), p), {})
                           : type);
  }

  // Back to the function's layout: the output to a token shard, the final
  // states gathered (the conv state's channels back to q | k | v order).
  auto oType = core.delta.getO().getType();
  Value o = comm::AllToAllOp::create(
      builder, loc,
      withDim(oType, 0, divided(oType.getDimSize(0), p), sharding.contiguous),
      map.lookup(core.delta.getO()), sharding.group, /*split_dim=*/0,
      /*concat_dim=*/1);
  o = sharding.toTokenShard(builder, loc, o, packing);
  core.delta.getO().replaceAllUsesWith(o);
  // What follows the core token by token (gated RMSNorm, out_proj) runs on
  // the token shard too.
  if (failed(shardTokenValues({o}, coreOps, sharding)))
    return failure();
  if (Value state = core.delta.getFinalState()) {
    Value gathered = comm::AllGatherOp::create(
        builder, loc, state.getType(), map.lookup(state), sharding.group, 1);
    state.replaceAllUsesWith(gathered);
  }
  if (Value state = core.conv.getFinalState()) {
    Value gathered = comm::AllGatherOp::create(
        builder, loc, state.getType(), map.lookup(state), sharding.group, 1);
    state.replaceAllUsesWith(slicer.regroup(gathered, 1, /*inverse=*/true));
  }
  eraseCore(core);
  refreshFunctionType(func);
  return success();
}
