//===- ChunkwiseCP.cpp - a GDN core over token shards (state passing) -----===//
//
// Chunkwise context parallelism keeps every head on every rank and runs the
// core on the rank's contiguous token shard, with the packing clipped to it
// (gdn_comm.local_packing). Two sequences cross a shard's edges at most:
//
// - the conv of the sequence continuing from the previous rank reads the
//   previous rank's last W-1 rows (gdn_comm.halo_exchange), merged with that
//   sequence's initial conv state (gdn_comm.continue_conv_state);
// - the delta rule of that sequence starts from the state the previous rank
//   hands on. The state is affine in what a rank receives, so each rank
//   summarises the sequence that leaves it as (M, S) (gdn_comm.state_summary)
//   before it knows its own incoming state; gdn_comm.state_exchange chains the
//   summaries in fp32, and the core then runs once with the received state
//   (gdn_comm.continue_state) — exact, with no correction term.
//
// Each sequence's final states come from the rank that ends it
// (gdn_comm.gather_sequence_states). Only W-1 rows and one (M, S) pair per
// rank cross the network, whatever the token count.
//
//===----------------------------------------------------------------------===//

#include "ContextParallel.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cp;

LogicalResult cp::distributeChunkwise(func::FuncOp func, Core core,
                                      const DenseSet<Operation *> &coreOps,
                                      const Sharding &sharding) {
  const int64_t p = sharding.ranks;
  MLIRContext *context = func.getContext();
  // At the delta rule, which every operand of the core dominates (the
  // conv's need not: the gate inputs may be computed after it).
  OpBuilder builder(core.delta);
  Location loc = core.conv.getLoc();
  const comm::GroupAttr group = sharding.group;
  Value packing = core.conv.getPacking();
  auto global = cast<PackingType>(packing.getType());
  Value local = comm::LocalPackingOp::create(
      builder, loc,
      PackingType::get(context, global.getSeqs(),
                       divided(global.getTokens(), p), global.getPadded(),
                       global.getMaxLen()),
      packing, group);
  auto toContiguous = [&](Value value) {
    return sharding.toContiguous(builder, loc, value, packing);
  };
  // Inside the core every activation is this rank's contiguous shard.
  auto shardType = [&](Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    return withDim(type, 0, divided(type.getDimSize(0), p),
                   sharding.contiguous);
  };

  // The conv on the shard; the sequence continuing from the previous rank
  // takes its first W-1 taps from the buffer rows before the shard.
  CausalConv1dOp conv = core.conv;
  Value mixed = toContiguous(conv.getX());
  Value convState = conv.getInitialState();
  const int64_t taps = conv.getWidth() - 1;
  if (taps > 0) {
    auto mixedType = cast<RankedTensorType>(mixed.getType());
    auto haloType = RankedTensorType::get({taps, mixedType.getDimSize(1)},
                                          mixedType.getElementType());
    Value halo =
        comm::HaloExchangeOp::create(builder, loc, haloType, mixed, group, taps);
    auto stateType =
        convState ? cast<RankedTensorType>(convState.getType())
                  : RankedTensorType::get(
                        {global.getSeqs(), mixedType.getDimSize(1), taps},
                        mixedType.getElementType());
    convState = comm::ContinueConvStateOp::create(builder, loc, stateType, halo,
                                                  packing, convState, group);
  }
  Value convFinal = conv.getFinalState();
  auto localConv = CausalConv1dOp::create(
      builder, loc, shardType(conv.getY()),
      convFinal ? convFinal.getType() : Type(), mixed, conv.getWeight(), local,
      conv.getBias(), convState, conv.getWidthAttr(), conv.getActivationAttr());

  // split, the L2 norms and the gates work token by token: cloned with
  // token-shard types.
  IRMapping map;
  map.map(conv.getY(), localConv.getY());
  map.map(core.gates.getA(), toContiguous(core.gates.getA()));
  map.map(core.gates.getB(), toContiguous(core.gates.getB()));
  for (Operation *op : {core.split.getOperation(), core.normQ.getOperation(),
                        core.normK.getOperation(), core.gates.getOperation()}) {
    Operation *clone = builder.clone(*op, map);
    for (OpResult result : clone->getResults())
      result.setType(shardType(result));
  }

  // The delta rule: summarise the leaving sequence, chain, then run the
  // shard from the received state.
  DeltaRuleOp delta = core.delta;
  Value q = map.lookup(delta.getQ()), k = map.lookup(delta.getK()),
        v = map.lookup(delta.getV()), g = map.lookup(delta.getG()),
        beta = map.lookup(delta.getBeta());
  auto stateType = delta.getFinalState().getType();
  const int64_t heads = stateType.getDimSize(1);
  const int64_t keyDim = stateType.getDimSize(2),
                valueDim = stateType.getDimSize(3);
  auto transitionType = RankedTensorType::get({heads, keyDim, keyDim},
                                              stateType.getElementType());
  auto partialType = RankedTensorType::get({heads, keyDim, valueDim},
                                           stateType.getElementType());
  Value initial = delta.getInitialState();
  auto startType =
      initial ? cast<RankedTensorType>(initial.getType()) : stateType;
  auto summary = comm::StateSummaryOp::create(
      builder, loc, transitionType, partialType, q, k, v, g, beta, packing,
      initial, group);
  Value incoming = comm::StateExchangeOp::create(
      builder, loc, partialType, summary.getTransition(),
      summary.getPartialState(), group,
      comm::ChainKindAttr::get(context, sharding.chain));
  Value start = comm::ContinueStateOp::create(builder, loc, startType, incoming,
                                              packing, initial, group);
  auto localDelta = DeltaRuleOp::create(
      builder, loc, shardType(delta.getO()), stateType, q, k, v, g, beta, local,
      start, delta.getScaleAttr(), delta.getChunkSizeAttr());
  localDelta->setDiscardableAttrs(delta->getDiscardableAttrDictionary());

  // Back to the function's layout.
  Value o = sharding.toTokenShard(builder, loc, localDelta.getO(), packing);
  delta.getO().replaceAllUsesWith(o);
  if (failed(shardTokenValues({o}, coreOps, sharding)))
    return failure();
  delta.getFinalState().replaceAllUsesWith(comm::GatherSequenceStatesOp::create(
      builder, loc, stateType, localDelta.getFinalState(), packing, group));
  if (convFinal)
    convFinal.replaceAllUsesWith(comm::GatherSequenceStatesOp::create(
        builder, loc, convFinal.getType(), localConv.getFinalState(), packing,
        group));
  eraseCore(core);
  refreshFunctionType(func);
  return success();
}
