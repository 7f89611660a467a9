//===- CommGradientEmitters.cpp - transposed communication, as IR ---------===//
//
// The VJP of a collective moves cotangents the opposite way: an all-gather's
// are reduce-scattered, a reduce-scatter's all-gathered, an all-to-all's go
// through the all-to-all with its dimensions swapped, a layout conversion's
// through the conversion back, a halo's return to the rows it copied
// (gdn_comm.return_halo), the chunkwise state chain runs backwards
// (gdn_comm.reverse_state_exchange), and final states' cotangents go to the
// ranks that own the sequences (gdn_comm.reduce_sequence_states). The
// per-rank ops of chunkwise CP get their *_grad ops, and a slice of a
// tensor every rank holds returns its cotangent into a zero tensor of the
// whole (gdn_comm.local_unshard), summed over the ranks at the argument.
// Cotangents keep getCotangentType's element type through the moves (an
// f32 projection output's cotangent travels in bf16).
//
//===----------------------------------------------------------------------===//

#include "BackwardBuilder.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {

LogicalResult emitLocalShard(comm::LocalShardOp op, BackwardBuilder &b) {
  auto unshard = comm::LocalUnshardOp::create(
      b.getBuilder(), op.getLoc(), getCotangentType(op.getInput()),
      b.getCotangentOrZeros(op.getResult()), op.getGroup(), op.getDim());
  b.addCotangent(op.getInput(), unshard.getResult());
  return success();
}

LogicalResult emitAllGather(comm::AllGatherOp op, BackwardBuilder &b) {
  auto scatter = comm::ReduceScatterOp::create(
      b.getBuilder(), op.getLoc(), getCotangentType(op.getInput()),
      b.getCotangentOrZeros(op.getResult()), op.getGroup(), op.getDim());
  b.addCotangent(op.getInput(), scatter.getResult());
  return success();
}

LogicalResult emitReduceScatter(comm::ReduceScatterOp op, BackwardBuilder &b) {
  auto gather = comm::AllGatherOp::create(
      b.getBuilder(), op.getLoc(), getCotangentType(op.getInput()),
      b.getCotangentOrZeros(op.getResult()), op.getGroup(), op.getDim());
  b.addCotangent(op.getInput(), gather.getResult());
  return success();
}

LogicalResult emitAllToAll(comm::AllToAllOp op, BackwardBuilder &b) {
  auto back = comm::AllToAllOp::create(
      b.getBuilder(), op.getLoc(), getCotangentType(op.getInput()),
      b.getCotangentOrZeros(op.getResult()), op.getGroup(), op.getConcatDim(),
      op.getSplitDim());
  b.addCotangent(op.getInput(), back.getResult());
  return success();
}

LogicalResult emitConvertLayout(ConvertLayoutOp op, BackwardBuilder &b) {
  Value dy = b.getCotangentOrZeros(op.getY());
  Value packing = b.materialize(op.getPacking());
  auto back = ConvertLayoutOp::create(b.getBuilder(), op.getLoc(),
                                      getCotangentType(op.getX()), dy, packing);
  b.addCotangent(op.getX(), back.getY());
  return success();
}

LogicalResult emitHaloExchange(comm::HaloExchangeOp op, BackwardBuilder &b) {
  Value dhalo = b.getCotangentOrZeros(op.getHalo());
  // The halo's rows return into the cotangent of the shard they came from.
  Value dest = b.takeCotangentOrZeros(op.getInput());
  auto returned = comm::ReturnHaloOp::create(
      b.getBuilder(), op.getLoc(), dest.getType(), dhalo, dest, op.getGroup());
  b.addCotangent(op.getInput(), returned.getResult());
  return success();
}

LogicalResult emitStateExchange(comm::StateExchangeOp op, BackwardBuilder &b) {
  Value dincoming = b.getCotangentOrZeros(op.getIncomingState());
  SmallVector<Value> in =
      b.materializeAll({op.getTransition(), op.getPartialState()});
  auto reverse = comm::ReverseStateExchangeOp::create(
      b.getBuilder(), op.getLoc(), op.getTransition().getType(),
      op.getPartialState().getType(), dincoming, in[0], in[1], op.getGroup(),
      op.getChain());
  b.addCotangent(op.getTransition(), reverse.getTransitionGrad());
  b.addCotangent(op.getPartialState(), reverse.getPartialStateGrad());
  return success();
}

LogicalResult emitGatherSequenceStates(comm::GatherSequenceStatesOp op,
                                       BackwardBuilder &b) {
  Value dy = b.getCotangentOrZeros(op.getResult());
  Value packing = b.materialize(op.getPacking());
  auto reduce = comm::ReduceSequenceStatesOp::create(
      b.getBuilder(), op.getLoc(), op.getInput().getType(), dy, packing,
      op.getGroup());
  b.addCotangent(op.getInput(), reduce.getResult());
  return success();
}

LogicalResult emitStateSummary(comm::StateSummaryOp op, BackwardBuilder &b) {
  Value initial = op.getInitialState();
  SmallVector<Value> d =
      b.getCotangentsOrZeros({op.getTransition(), op.getPartialState()});
  SmallVector<Value> in =
      b.materializeAll({op.getK(), op.getV(), op.getG(), op.getBeta(),
                        op.getPacking(), initial});
  auto grad = comm::StateSummaryGradOp::create(
      b.getBuilder(), op.getLoc(), op.getK().getType(), op.getV().getType(),
      op.getG().getType(), op.getBeta().getType(),
      initial ? initial.getType() : Type(), d[0], d[1], in[0], in[1], in[2],
      in[3], in[4], in[5], op.getGroup());
  b.addCotangent(op.getK(), grad.getKGrad());
  b.addCotangent(op.getV(), grad.getVGrad());
  b.addCotangent(op.getG(), grad.getGGrad());
  b.addCotangent(op.getBeta(), grad.getBetaGrad());
  if (initial)
    b.addCotangent(initial, grad.getInitialStateGrad());
  return success();
}

LogicalResult emitContinueConvState(comm::ContinueConvStateOp op,
                                    BackwardBuilder &b) {
  Value initial = op.getInitialState();
  Value dstate = b.getCotangentOrZeros(op.getState());
  Value packing = b.materialize(op.getPacking());
  auto grad = comm::ContinueConvStateGradOp::create(
      b.getBuilder(), op.getLoc(), getCotangentType(op.getHalo()),
      initial ? initial.getType() : Type(), dstate, packing, op.getGroup());
  b.addCotangent(op.getHalo(), grad.getHaloGrad());
  if (initial)
    b.addCotangent(initial, grad.getInitialStateGrad());
  return success();
}

LogicalResult emitContinueState(comm::ContinueStateOp op, BackwardBuilder &b) {
  Value initial = op.getInitialState();
  Value dstate = b.getCotangentOrZeros(op.getState());
  Value packing = b.materialize(op.getPacking());
  auto grad = comm::ContinueStateGradOp::create(
      b.getBuilder(), op.getLoc(), op.getIncoming().getType(),
      initial ? initial.getType() : Type(), dstate, packing, op.getGroup());
  b.addCotangent(op.getIncoming(), grad.getIncomingGrad());
  if (initial)
    b.addCotangent(initial, grad.getInitialStateGrad());
  return success();
}

} // namespace

LogicalResult mlir::gdn::emitCommGradient(Operation *op, BackwardBuilder &b) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](comm::LocalShardOp shard) { return emitLocalShard(shard, b); })
      .Case([&](comm::AllGatherOp gather) { return emitAllGather(gather, b); })
      .Case([&](comm::ReduceScatterOp scatter) {
        return emitReduceScatter(scatter, b);
      })
      .Case(
          [&](comm::AllToAllOp exchange) { return emitAllToAll(exchange, b); })
      .Case([&](ConvertLayoutOp convert) {
        return emitConvertLayout(convert, b);
      })
      .Case(
          [&](comm::HaloExchangeOp halo) { return emitHaloExchange(halo, b); })
      .Case([&](comm::StateExchangeOp exchange) {
        return emitStateExchange(exchange, b);
      })
      .Case([&](comm::GatherSequenceStatesOp gather) {
        return emitGatherSequenceStates(gather, b);
      })
      .Case([&](comm::StateSummaryOp summary) {
        return emitStateSummary(summary, b);
      })
      .Case([&](comm::ContinueConvStateOp state) {
        return emitContinueConvState(state, b);
      })
      .Case([&](comm::ContinueStateOp state) {
        return emitContinueState(state, b);
      })
      .Default([](Operation *) { return failure(); });
}

LogicalResult mlir::gdn::emitGradient(Operation *op, BackwardBuilder &b) {
  if (succeeded(emitGdnGradient(op, b)) || succeeded(emitCommGradient(op, b)))
    return success();
  return op->emitOpError() << "has no gradient op";
}

LogicalResult mlir::gdn::checkDifferentiable(Operation *op) {
  if (isa<CausalConv1dOp, L2NormOp, GatesOp, DeltaRuleOp, GatedRMSNormOp,
          LinearOp, SplitQkvzOp, SplitQkvOp, RegroupSectionsOp,
          tensor::CollapseShapeOp, tensor::ExpandShapeOp, comm::LocalShardOp,
          comm::AllGatherOp, comm::ReduceScatterOp, comm::AllToAllOp,
          comm::HaloExchangeOp, comm::StateExchangeOp,
          comm::GatherSequenceStatesOp, comm::StateSummaryOp,
          comm::ContinueConvStateOp, comm::ContinueStateOp>(op))
    return success();
  if (auto convert = dyn_cast<ConvertLayoutOp>(op)) {
    if (getSequenceLayout(convert.getX().getType()) &&
        getSequenceLayout(convert.getY().getType()))
      return success();
    return op->emitOpError()
           << "converts between a shard and a tensor every rank holds whole "
              "(from "
           << describeLayout(getSequenceLayout(convert.getX().getType()))
           << " to "
           << describeLayout(getSequenceLayout(convert.getY().getType()))
           << "); gdn-generate-backward transposes conversions between "
              "shards only: keep the function's activations sharded (as "
              "gdn-context-parallel and gdn-hoist-layouts leave them)";
  }
  if (isa<LayerOp>(op))
    return op->emitOpError()
           << "is a composite layer; run --gdn-expand-layer before "
              "--gdn-generate-backward, which differentiates the primitive "
              "ops";
  if (op->getDialect() && op->getDialect()->getNamespace() == "gdn_kernel")
    return op->emitOpError()
           << "is a fused kernel op; run --gdn-generate-backward before "
              "--gdn-fuse, on the primitive gdn ops";
  if (isa<func::CallOp>(op))
    return op->emitOpError()
           << "calls another function, which gdn-generate-backward does not "
              "differentiate through; inline it first (--inline)";
  return op->emitOpError()
         << "has no gradient op, and a differentiable value reaches a "
            "result through it; gdn-generate-backward differentiates the "
            "primitive gdn ops (conv, L2 norm, gates, delta rule, gated "
            "RMSNorm, linear, the splits and regroups, tensor reshapes), the "
            "gdn_comm "
            "collectives and chunkwise ops, and gdn.convert_layout between "
            "shards";
}
