//===- ContextParallel.cpp - the GDN core over a context-parallel group ---===//
//
// Implements gdn-context-parallel, mode=headwise (Ulysses). The function's
// core (conv -> split_qkv -> l2norm(q, k), gates -> delta_rule) is cloned
// into its per-rank form: token shards in, one all_to_all to head shards,
// parameters sliced per q/k/v section (the slicing frameworks get wrong when
// they cut the conv channels as one block), the core on all tokens with the
// global packing, and the inverse all_to_all out. gdn-run --compare checks
// the result against the P = 1 function.
//
//===----------------------------------------------------------------------===//

#include "gdn/Transforms/Passes.h"

#include "GdnCore.h"

#include "gdn/Dialect/Gdn/SequenceLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNCONTEXTPARALLEL
#include "gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

struct GdnContextParallelPass
    : public mlir::gdn::impl::GdnContextParallelBase<GdnContextParallelPass> {
  using GdnContextParallelBase::GdnContextParallelBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (mode != "headwise") {
      func.emitError() << "gdn-context-parallel: mode=" << mode
                       << " is not implemented yet; use mode=headwise";
      return signalPassFailure();
    }
    if (layout != "contiguous" && layout != "zigzag") {
      func.emitError() << "gdn-context-parallel: layout=" << layout
                       << " is not a token sharding; use contiguous or zigzag";
      return signalPassFailure();
    }
    if (failed(checkRanks(func, "gdn-context-parallel", ranks)))
      return signalPassFailure();
    if (ranks == 1)
      return;
    FailureOr<SmallVector<Core>> cores =
        findCores(func, "gdn-context-parallel");
    if (failed(cores))
      return signalPassFailure();
    if (!cores->empty() && failed(distributeAll(func, *cores)))
      return signalPassFailure();
  }

  /// Checks every core, shards the function's token-indexed values (a
  /// function-wide analysis, so that stacked layers work), then rewrites
  /// each core.
  LogicalResult distributeAll(func::FuncOp func, MutableArrayRef<Core> cores) {
    const int64_t p = ranks;
    if (!func.getBody().hasOneBlock())
      return func.emitError() << "gdn-context-parallel: expects a function "
                                 "of one block";
    DenseSet<Operation *> coreOps;
    for (Core &core : cores)
      for (Operation *op : getCoreOps(core))
        coreOps.insert(op);
    for (Core &core : cores) {
      // The core's inner values stop existing; its output and final states
      // are replaced by their distributed forms.
      SmallVector<Value> inner = {core.conv.getY(), core.normQ.getY(),
                                  core.normK.getY(), core.gates.getG(),
                                  core.gates.getBeta()};
      llvm::append_range(inner, core.split.getResults());
      if (Operation *user = findOutsideUser(inner, coreOps))
        return user->emitError()
               << "gdn-context-parallel: reads a value inside a GDN core, "
                  "which the pass replaces by its head-sharded form";
      auto qType = core.split.getQ().getType(),
           vType = core.split.getV().getType();
      if (qType.getDimSize(1) % p != 0 || vType.getDimSize(1) % p != 0)
        return core.delta.emitError()
               << "gdn-context-parallel: headwise needs the key heads ("
               << qType.getDimSize(1) << ") and value heads ("
               << vType.getDimSize(1) << ") divisible by ranks = " << p
               << "; use mode=chunkwise, which has no head-count constraint";
    }
    SetVector<BlockArgument> tokenArguments;
    for (Core &core : cores)
      if (failed(findTokenArguments(func, core, coreOps, tokenArguments)))
        return failure();
    // Zigzag cuts every sequence into 2P pieces, so the total is a
    // multiple of 2P too.
    const int64_t multiple = layout == "zigzag" ? 2 * p : p;
    for (BlockArgument argument : tokenArguments) {
      int64_t tokens = cast<RankedTensorType>(argument.getType()).getDimSize(0);
      if (!ShapedType::isDynamic(tokens) && tokens % multiple != 0)
        return cores.front().delta.emitError()
               << "gdn-context-parallel: " << tokens << " tokens do not split "
               << "into " << layout << " shards over " << p
               << " ranks; pad the pack to a multiple of " << multiple;
    }
    // The token-indexed arguments, and everything computed from them token
    // by token outside the cores, become this rank's token shard.
    SmallVector<Value> starts(tokenArguments.begin(), tokenArguments.end());
    if (failed(shardTokenValues(starts, coreOps, tokenShard(), p)))
      return failure();
    for (Core &core : cores)
      if (failed(distribute(func, core, coreOps)))
        return failure();
    return success();
  }

  /// The layout of the function's token shards.
  gdn::SeqLayoutAttr tokenShard() {
    return gdn::SeqLayoutAttr::get(&getContext(),
                                   layout == "zigzag" ? SeqLayoutKind::Zigzag
                                                      : SeqLayoutKind::Contiguous,
                                   ranks);
  }

  /// The function arguments the core's token-indexed inputs come from,
  /// through token-local ops only (the input projections, split_qkvz, the
  /// gated RMSNorm and out_proj of a layer before it) or another core.
  LogicalResult findTokenArguments(func::FuncOp func, Core &core,
                                   const DenseSet<Operation *> &coreOps,
                                   SetVector<BlockArgument> &arguments) {
    SmallVector<Value> worklist = {core.conv.getX(), core.gates.getA(),
                                   core.gates.getB()};
    // The gated RMSNorm that reads the core's output reads z token by token
    // with it: z is token-indexed too.
    for (Operation *user : core.delta.getO().getUsers())
      if (auto norm = dyn_cast<GatedRMSNormOp>(user))
        worklist.push_back(norm.getZ());
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      if (auto argument = dyn_cast<BlockArgument>(value)) {
        if (argument.getOwner() != &func.getBody().front())
          return core.delta.emitError()
                 << "gdn-context-parallel: the core's inputs must come from "
                    "the function's body block";
        if (getSequenceLayout(argument.getType()))
          return core.delta.emitError()
                 << "gdn-context-parallel: argument #"
                 << argument.getArgNumber() << " is already distributed";
        arguments.insert(argument);
        continue;
      }
      Operation *def = value.getDefiningOp();
      if (def && coreOps.contains(def) && isa<DeltaRuleOp>(def)) {
        continue; // another core's output: sharded when that core is
      } else if (auto linear = dyn_cast_or_null<LinearOp>(def)) {
        worklist.push_back(linear.getX());
      } else if (auto split = dyn_cast_or_null<SplitQkvzOp>(def)) {
        worklist.push_back(split.getQkvz());
        worklist.push_back(split.getBa());
      } else if (auto norm = dyn_cast_or_null<GatedRMSNormOp>(def)) {
        worklist.push_back(norm.getX());
        worklist.push_back(norm.getZ());
      } else {
        InFlightDiagnostic diag = core.delta.emitError()
                                  << "gdn-context-parallel: the core's token "
                                     "inputs must come from function "
                                     "arguments through gdn.linear, "
                                     "gdn.split_qkvz and gdn.gated_rmsnorm "
                                     "only";
        if (def)
          diag.attachNote(def->getLoc()) << "produced here by " << def->getName();
        return diag;
      }
    }
    return success();
  }

  /// Gives every token-indexed value reachable from `starts` through
  /// token-local ops (gdn.linear's input, gdn.split_qkvz, gdn.gated_rmsnorm)
  /// the shard type, stopping at `stops` (the core). Anything else that
  /// reads a token-indexed value cannot be distributed.
  LogicalResult shardTokenValues(ArrayRef<Value> starts,
                                 const DenseSet<Operation *> &stops,
                                 Attribute shard, int64_t p) {
    SmallVector<Value> worklist(starts.begin(), starts.end());
    DenseSet<Value> done;
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      if (!done.insert(value).second)
        continue;
      auto type = cast<RankedTensorType>(value.getType());
      if (!getSequenceLayout(type))
        value.setType(withDim(type, 0, divided(type.getDimSize(0), p), shard));
      for (OpOperand &use : value.getUses()) {
        Operation *user = use.getOwner();
        if (stops.contains(user) || isa<func::ReturnOp>(user))
          continue;
        auto linear = dyn_cast<LinearOp>(user);
        if ((linear && use.get() == linear.getX()) ||
            isa<SplitQkvzOp, GatedRMSNormOp>(user)) {
          for (Value result : user->getResults())
            worklist.push_back(result);
          continue;
        }
        return user->emitError()
               << "gdn-context-parallel: reads a token-indexed value but is "
                  "not one of the token-local ops the pass distributes "
                  "(gdn.linear's input, gdn.split_qkvz, gdn.gated_rmsnorm)";
      }
    }
    return success();
  }

  /// Rewrites one core for this rank's heads, between one all_to_all in
  /// and one out; its token-indexed inputs already carry the shard type.
  LogicalResult distribute(func::FuncOp func, Core &core,
                           const DenseSet<Operation *> &coreOps) {
    MLIRContext *context = &getContext();
    const int64_t p = ranks;
    auto contiguous =
        gdn::SeqLayoutAttr::get(context, SeqLayoutKind::Contiguous, p);
    gdn::SeqLayoutAttr shard = tokenShard();
    auto group = comm::GroupAttr::get(context, comm::GroupKind::CP, p);
    Value mixed = core.conv.getX(), a = core.gates.getA(), b = core.gates.getB();

    OpBuilder builder(core.conv);
    Location loc = core.conv.getLoc();
    Value packing = core.conv.getPacking();
    // The all_to_all concatenates contiguous shards: a zigzag shard is
    // reordered first (and the output back after).
    auto toContiguous = [&](Value value) -> Value {
      if (shard == contiguous)
        return value;
      auto type = cast<RankedTensorType>(value.getType());
      return ConvertLayoutOp::create(
          builder, loc, withDim(type, 0, type.getDimSize(0), contiguous), value,
          packing);
    };
    HeadSlicer slicer(builder, loc, group, core);
    // Token shard [T/P, X] -> all tokens of this rank's part of X.
    auto toHeads = [&](Value value, RankedTensorType global) -> Value {
      return comm::AllToAllOp::create(
          builder, loc, withDim(global, 1, divided(global.getDimSize(1), p), {}),
          value, group, /*split_dim=*/1, /*concat_dim=*/0);
    };

    IRMapping map;
    // A token-indexed input's global type: all tokens (as many as the
    // conv's output has), no layout, its own element type.
    const int64_t globalTokens = core.conv.getY().getType().getDimSize(0);
    auto globalType = [&](Value value) {
      return withDim(cast<RankedTensorType>(value.getType()), 0, globalTokens,
                     {});
    };
    map.map(core.conv.getX(),
            toHeads(slicer.regroup(toContiguous(mixed), 1, /*inverse=*/false),
                    globalType(mixed)));
    slicer.mapCoreParameters(core, map);
    map.map(core.gates.getA(), toHeads(toContiguous(a), globalType(a)));
    map.map(core.gates.getB(), toHeads(toContiguous(b), globalType(b)));

    // The core itself, cloned with every head count divided by P.
    auto headShard = [&](Operation *op) {
      Operation *clone = builder.clone(*op, map);
      for (OpResult result : clone->getResults())
        if (auto type = dyn_cast<RankedTensorType>(result.getType())) {
          // Activations [T, C] or [T, H, D] shard dim 1; states [N, C or H,
          // ...] too: every result of the core is distributed along dim 1.
          if (type.getRank() >= 2)
            result.setType(withDim(type, 1, divided(type.getDimSize(1), p), {}));
          else
            result.setType(type);
        }
      return clone;
    };
    for (Operation *op : {core.conv.getOperation(), core.split.getOperation(),
                          core.normQ.getOperation(), core.normK.getOperation(),
                          core.gates.getOperation(), core.delta.getOperation()})
      headShard(op);

    // Back to the function's layout: the output to a token shard, the final
    // states gathered (the conv state's channels back to q | k | v order).
    auto oType = core.delta.getO().getType();
    Value o = comm::AllToAllOp::create(
        builder, loc,
        withDim(oType, 0, divided(oType.getDimSize(0), p), contiguous),
        map.lookup(core.delta.getO()), group, /*split_dim=*/0,
        /*concat_dim=*/1);
    if (shard != contiguous)
      o = ConvertLayoutOp::create(
          builder, loc, withDim(oType, 0, divided(oType.getDimSize(0), p), shard),
          o, packing);
    for (OpOperand &use : llvm::make_early_inc_range(core.delta.getO().getUses()))
      use.set(o);
    // What follows the core token by token (gated RMSNorm, out_proj) runs on
    // the token shard too.
    if (failed(shardTokenValues({o}, coreOps, shard, p)))
      return failure();
    if (Value state = core.delta.getFinalState()) {
      Value gathered = comm::AllGatherOp::create(
          builder, loc, state.getType(), map.lookup(state), group, 1);
      state.replaceAllUsesWith(gathered);
    }
    if (Value state = core.conv.getFinalState()) {
      Value gathered = comm::AllGatherOp::create(
          builder, loc, state.getType(), map.lookup(state), group, 1);
      state.replaceAllUsesWith(slicer.regroup(gathered, 1, /*inverse=*/true));
    }

    SmallVector<Operation *, 6> replaced = getCoreOps(core);
    for (Operation *op : llvm::reverse(replaced))
      op->erase();
    refreshFunctionType(func);
    return success();
  }
};

} // namespace
