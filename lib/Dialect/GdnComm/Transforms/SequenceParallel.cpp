//===- SequenceParallel.cpp - Megatron SP (with TP over heads) ------------===//
//
// Implements gdn-sequence-parallel on an expanded layer: all_gather the
// token-sharded hidden states, run the layer for this rank's heads with
// every weight sliced the way its rows are laid out (per key-head group,
// per q/k/v section or per head), and reduce-scatter out_proj's partial
// sums back to a token shard. gdn-run --compare checks it against P = 1.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnComm/Transforms/Passes.h"

#include "gdn/Analysis/GdnCore.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNSEQUENCEPARALLEL
#include "gdn/Dialect/GdnComm/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The ops of one expanded layer around its core.
struct Layer {
  Core core;
  SmallVector<LinearOp> projections; ///< the input projections
  SplitQkvzOp splitQkvz;             ///< Qwen3-Next only
  GatedRMSNormOp norm;
  LinearOp outProj;
  /// The hidden states: a function argument, or the previous layer's
  /// (already distributed) output.
  Value hidden;
};

struct GdnSequenceParallelPass
    : public mlir::gdn::impl::GdnSequenceParallelBase<GdnSequenceParallelPass> {
  using GdnSequenceParallelBase::GdnSequenceParallelBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (failed(checkRanks(func, "gdn-sequence-parallel", ranks)))
      return signalPassFailure();
    if (ranks == 1)
      return;
    FailureOr<SmallVector<Core>> cores =
        findCores(func, "gdn-sequence-parallel");
    if (failed(cores))
      return signalPassFailure();
    if (!cores->empty() && !func.getBody().hasOneBlock()) {
      func.emitError() << "gdn-sequence-parallel: expects a function of one "
                          "block";
      return signalPassFailure();
    }
    // In program order: a stacked layer reads the token shard its
    // predecessor's reduce-scatter produced.
    for (Core &core : *cores) {
      std::optional<Layer> layer = findLayer(func, core);
      if (!layer || failed(distribute(func, *layer)))
        return signalPassFailure();
    }
  }

  /// The projection (or split_qkvz) a core input comes from.
  std::optional<Layer> findLayer(func::FuncOp func, Core &core) {
    Layer layer;
    layer.core = core;
    auto fail = [&](const Twine &why) -> std::optional<Layer> {
      core.delta.emitError() << "gdn-sequence-parallel: " << why;
      return std::nullopt;
    };
    auto projection = [&](Value value) -> LinearOp {
      auto linear = value.getDefiningOp<LinearOp>();
      if (linear && !llvm::is_contained(layer.projections, linear))
        layer.projections.push_back(linear);
      return linear;
    };
    Value mixed = core.conv.getX();
    if ((layer.splitQkvz = mixed.getDefiningOp<SplitQkvzOp>())) {
      if (core.gates.getA() != layer.splitQkvz.getA() ||
          core.gates.getB() != layer.splitQkvz.getB() ||
          !projection(layer.splitQkvz.getQkvz()) ||
          !projection(layer.splitQkvz.getBa()))
        return fail("expects in_proj_qkvz and in_proj_ba feeding split_qkvz, "
                    "which feeds the conv and the gates (run "
                    "gdn-expand-layer first)");
    } else if (!projection(mixed) || !projection(core.gates.getA()) ||
               !projection(core.gates.getB())) {
      return fail("expects the conv input and the gate inputs to be "
                  "projections of the hidden states (run gdn-expand-layer "
                  "first)");
    }
    if (!core.delta.getO().hasOneUse() ||
        !(layer.norm = dyn_cast<GatedRMSNormOp>(
              *core.delta.getO().getUsers().begin())) ||
        layer.norm.getX() != core.delta.getO())
      return fail("expects the delta rule's output to feed the gated RMSNorm "
                  "alone");
    Value z = layer.norm.getZ();
    if (layer.splitQkvz ? z != layer.splitQkvz.getZ() : !projection(z))
      return fail("expects the gated RMSNorm's z to come from the input "
                  "projections");
    if (!layer.norm.getY().hasOneUse() ||
        !(layer.outProj =
              dyn_cast<LinearOp>(*layer.norm.getY().getUsers().begin())))
      return fail("expects out_proj to read the gated RMSNorm");
    for (OpOperand &use : layer.outProj.getY().getUses()) {
      auto next = dyn_cast<LinearOp>(use.getOwner());
      if (!isa<func::ReturnOp>(use.getOwner()) &&
          !(next && next.getX() == use.get()))
        return fail("expects out_proj's result to be returned or read by the "
                    "next layer's input projections");
    }
    // Every value inside the layer is replaced by its head-sharded form, so
    // nothing outside may read one.
    llvm::DenseSet<Operation *> inside;
    for (Operation *op : getCoreOps(core))
      inside.insert(op);
    for (LinearOp linear : layer.projections)
      inside.insert(linear);
    if (layer.splitQkvz)
      inside.insert(layer.splitQkvz);
    inside.insert(layer.norm);
    inside.insert(layer.outProj);
    SmallVector<Value> inner = {core.conv.getY(), core.normQ.getY(),
                                core.normK.getY(), core.gates.getG(),
                                core.gates.getBeta(), core.delta.getO(),
                                layer.norm.getY()};
    llvm::append_range(inner, core.split.getResults());
    for (LinearOp linear : layer.projections)
      inner.push_back(linear.getY());
    if (layer.splitQkvz)
      llvm::append_range(inner, layer.splitQkvz.getResults());
    if (Operation *user = findOutsideUser(inner, inside)) {
      user->emitError() << "gdn-sequence-parallel: reads a value inside a "
                           "GDN layer, which the pass replaces by its "
                           "head-sharded form";
      return std::nullopt;
    }
    Value hidden = layer.projections[0].getX();
    auto argument = dyn_cast<BlockArgument>(hidden);
    if (argument ? argument.getOwner() != &func.getBody().front()
                 : !hidden.getDefiningOp<comm::ReduceScatterOp>())
      return fail("expects the projections to read a function argument or "
                  "the previous layer's output");
    for (LinearOp linear : layer.projections)
      if (linear.getX() != hidden)
        return fail("expects every input projection to read the same hidden "
                    "states");
    for (Operation *user : hidden.getUsers())
      if (!llvm::is_contained(layer.projections, dyn_cast<LinearOp>(user)))
        return fail("the hidden states are also used outside the layer");
    if (argument && getSequenceLayout(hidden.getType()))
      return fail("the hidden states are already distributed");
    layer.hidden = hidden;
    return layer;
  }

  LogicalResult distribute(func::FuncOp func, Layer &layer) {
    MLIRContext *context = &getContext();
    const int64_t p = ranks;
    Core &core = layer.core;
    auto qType = core.split.getQ().getType(), vType = core.split.getV().getType();
    const int64_t keyHeads = qType.getDimSize(1),
                  valueHeads = vType.getDimSize(1);
    if (keyHeads % p != 0 || valueHeads % p != 0)
      return core.delta.emitError()
             << "gdn-sequence-parallel: the key heads (" << keyHeads
             << ") and value heads (" << valueHeads
             << ") must be divisible by ranks = " << p
             << ": each rank computes a share of the heads";
    // The hidden states' global type (a stacked layer's input is already a
    // token shard).
    auto hiddenType = cast<RankedTensorType>(layer.hidden.getType());
    const bool alreadySharded = getSequenceLayout(hiddenType) != nullptr;
    if (alreadySharded) {
      const int64_t rows = hiddenType.getDimSize(0);
      hiddenType = withDim(hiddenType, 0,
                           ShapedType::isDynamic(rows) ? rows : rows * p, {});
    }
    if (!ShapedType::isDynamic(hiddenType.getDimSize(0)) &&
        hiddenType.getDimSize(0) % p != 0)
      return core.delta.emitError()
             << "gdn-sequence-parallel: " << hiddenType.getDimSize(0)
             << " tokens do not split into " << p
             << " equal contiguous shards; pad the pack to a multiple of " << p;

    auto shard = gdn::SeqLayoutAttr::get(context, SeqLayoutKind::Contiguous, p);
    auto group = comm::GroupAttr::get(context, comm::GroupKind::SP, p);
    auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    OpBuilder builder(returnOp);
    // Slicing ops take the location of the op whose weight they slice; the
    // gather and the reduce-scatter those of the layer's first and last op.
    Location loc = layer.projections.front().getLoc();
    HeadSlicer slicer(builder, loc, group, core);

    // The hidden states: a token shard in, all tokens inside.
    if (!alreadySharded)
      layer.hidden.setType(
          withDim(hiddenType, 0, divided(hiddenType.getDimSize(0), p), shard));
    IRMapping map;
    map.map(layer.hidden,
            comm::AllGatherOp::create(builder, loc, hiddenType, layer.hidden,
                                      group, 0));
    // Every weight sliced the way its rows (or columns) are laid out.
    for (LinearOp linear : layer.projections) {
      Value weight = linear.getWeight();
      if (map.contains(weight))
        continue;
      const bool qkvSections =
          !layer.splitQkvz && linear.getY() == core.conv.getX();
      map.map(weight, qkvSections ? slicer.bySection(weight, 0)
                                  : slicer.localShard(weight, 0));
    }
    slicer.mapCoreParameters(core, map);
    map.map(layer.outProj.getWeight(),
            slicer.localShard(layer.outProj.getWeight(), 1));

    // The layer, cloned in order for this rank's heads: every result's
    // dimension 1 (features, channels or heads) is divided by P, except
    // out_proj's, which is a partial sum of the full output.
    SmallVector<Operation *> ops;
    for (LinearOp linear : layer.projections)
      ops.push_back(linear);
    if (layer.splitQkvz)
      ops.push_back(layer.splitQkvz);
    for (Operation *op : {core.conv.getOperation(), core.split.getOperation(),
                          core.normQ.getOperation(), core.normK.getOperation(),
                          core.gates.getOperation(), core.delta.getOperation(),
                          layer.norm.getOperation(), layer.outProj.getOperation()})
      ops.push_back(op);
    llvm::sort(ops, [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
    for (Operation *op : ops) {
      Operation *clone = builder.clone(*op, map);
      if (op == layer.outProj)
        continue;
      if (auto split = dyn_cast<SplitQkvzOp>(clone))
        split.setKeyHeads(keyHeads / p);
      for (OpResult result : clone->getResults())
        if (auto type = dyn_cast<RankedTensorType>(result.getType());
            type && type.getRank() >= 2)
          result.setType(withDim(type, 1, divided(type.getDimSize(1), p), {}));
    }
    auto yType = layer.outProj.getY().getType();
    Value y = comm::ReduceScatterOp::create(
        builder, layer.outProj.getLoc(),
        withDim(yType, 0, divided(yType.getDimSize(0), p), shard),
        map.lookup(layer.outProj.getY()), group, 0);
    layer.outProj.getY().replaceAllUsesWith(y);
    // Final states read by the caller: each rank holds its heads' (and its
    // channels', per q/k/v section), gathered over the group; the conv
    // state's channels go back to q | k | v order.
    if (Value state = core.delta.getFinalState(); !state.use_empty())
      state.replaceAllUsesWith(comm::AllGatherOp::create(
          builder, core.delta.getLoc(), state.getType(), map.lookup(state),
          group, 1));
    if (Value state = core.conv.getFinalState(); state && !state.use_empty())
      state.replaceAllUsesWith(slicer.regroup(
          comm::AllGatherOp::create(builder, core.conv.getLoc(),
                                    state.getType(), map.lookup(state), group,
                                    1),
          1, /*inverse=*/true));
    for (Operation *op : llvm::reverse(ops))
      op->erase();
    refreshFunctionType(func);
    return success();
  }
};

} // namespace
