//===- HoistLayouts.cpp - conversions to where they move the fewest bytes -===//
//
// Implements gdn-hoist-layouts. A *region* is a connected set of
// token-indexed values linked by token-local ops (gdn.linear's input and
// result, gdn.split_qkvz, gdn.gated_rmsnorm); gdn.convert_layout ops, cores,
// function arguments and returns are its edges. All values of a region share
// one token layout. When every conversion on the region's edge goes to or
// comes from one other layout (the contiguous shard the cores need), the
// region can run in that layout instead: the edge conversions vanish, and
// the region's function arguments and returned values are converted instead
// (under sequence parallelism, the results of the SP gathers and the inputs
// of the SP reduce-scatters play the part of arguments and returns).
// The pass does that when the second set moves fewer bytes per token row.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnComm/Transforms/Passes.h"

#include "gdn/Analysis/GdnCore.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNHOISTLAYOUTS
#include "gdn/Dialect/GdnComm/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// Token-indexed operands and results an op links into one region, or
/// nothing when the op is not token-local.
SmallVector<Value> linkedValues(Operation *op) {
  SmallVector<Value> values;
  if (auto linear = dyn_cast<LinearOp>(op)) {
    values = {linear.getX(), linear.getY()};
  } else if (isa<SplitQkvzOp, GatedRMSNormOp>(op)) {
    // Every operand of these that carries a token layout is token-indexed.
    for (Value operand : op->getOperands())
      if (isa_and_nonnull<SeqLayoutAttr>(getSequenceLayout(operand.getType())))
        values.push_back(operand);
    llvm::append_range(values, op->getResults());
  }
  return values;
}

/// Bytes of one token row of `value`.
int64_t rowBytes(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t elements = 1;
  for (int64_t size : type.getShape().drop_front())
    elements *= size;
  return elements *
         static_cast<int64_t>(type.getElementTypeBitWidth() / 8);
}

/// One region and its edges.
struct Region {
  SetVector<Value> values;
  SmallVector<ConvertLayoutOp> edgeConverts; // read or write a region value
  SmallVector<BlockArgument> arguments;      // function arguments inside
  SmallVector<OpOperand *> returned;         // return operands inside
  SmallVector<Value> gathered;               // SP gather results inside
  SmallVector<OpOperand *> scattered;        // SP reduce-scatter inputs
  bool closed = true; // false when another op reads a region value
};

/// gdn-sequence-parallel's gather of a layer's input or reduce-scatter of
/// its output: the tokens cross the SP group there, so a region ends there.
bool isSequenceParallel(Operation *op) {
  if (auto gather = dyn_cast<comm::AllGatherOp>(op))
    return gather.getGroup().getKind() == comm::GroupKind::SP &&
           gather.getDim() == 0;
  if (auto scatter = dyn_cast<comm::ReduceScatterOp>(op))
    return scatter.getGroup().getKind() == comm::GroupKind::SP &&
           scatter.getDim() == 0;
  return false;
}

Region collectRegion(Value start, Operation *returnOp) {
  Region region;
  SmallVector<Value> worklist = {start};
  DenseSet<Operation *> converts;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!region.values.insert(value))
      continue;
    if (auto argument = dyn_cast<BlockArgument>(value))
      region.arguments.push_back(argument);
    auto visit = [&](Operation *op) {
      if (auto convert = dyn_cast<ConvertLayoutOp>(op)) {
        if (converts.insert(op).second)
          region.edgeConverts.push_back(convert);
        return;
      }
      SmallVector<Value> linked = linkedValues(op);
      if (!llvm::is_contained(linked, value)) {
        region.closed = false;
        return;
      }
      for (Value next : linked)
        worklist.push_back(next);
    };
    if (Operation *def = value.getDefiningOp()) {
      if (isSequenceParallel(def))
        region.gathered.push_back(value);
      else
        visit(def);
    }
    for (OpOperand &use : value.getUses()) {
      if (use.getOwner() == returnOp) {
        region.returned.push_back(&use);
        continue;
      }
      if (isSequenceParallel(use.getOwner())) {
        region.scattered.push_back(&use);
        continue;
      }
      visit(use.getOwner());
    }
  }
  return region;
}

struct GdnHoistLayoutsPass
    : public mlir::gdn::impl::GdnHoistLayoutsBase<GdnHoistLayoutsPass> {
  using GdnHoistLayoutsBase::GdnHoistLayoutsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    Operation *returnOp = func.getBody().front().getTerminator();
    // Moving a region erases conversions, so the walk restarts after each
    // move; regions that stay are remembered by their values until then (a
    // move changes its neighbours' edges, so they are weighed again).
    DenseSet<Value> kept;
    bool moved = true;
    while (moved) {
      moved = false;
      kept.clear();
      SmallVector<ConvertLayoutOp> converts;
      func.walk([&](ConvertLayoutOp convert) { converts.push_back(convert); });
      for (ConvertLayoutOp convert : converts) {
        for (Value start : {convert.getX(), convert.getY()}) {
          if (kept.contains(start) || !isa_and_nonnull<SeqLayoutAttr>(
                                          getSequenceLayout(start.getType())))
            continue;
          Region region = collectRegion(start, returnOp);
          if (tryMove(func, region)) {
            ++numRegionsMoved;
            moved = true;
            break;
          }
          for (Value value : region.values)
            kept.insert(value);
        }
        if (moved)
          break;
      }
    }
    refreshFunctionType(func);
  }

  /// Runs `region` in the layout on the other side of its edge conversions
  /// when that moves fewer bytes; returns whether it did.
  bool tryMove(func::FuncOp func, Region &region) {
    if (!region.closed || region.edgeConverts.empty())
      return false;
    auto current = cast<SeqLayoutAttr>(
        getSequenceLayout(region.values.front().getType()));
    SeqLayoutAttr target;
    int64_t edgeBytes = 0;
    for (ConvertLayoutOp convert : region.edgeConverts) {
      const bool reads = region.values.contains(convert.getX());
      Value outside = reads ? convert.getY() : convert.getX();
      auto other = dyn_cast_or_null<SeqLayoutAttr>(
          getSequenceLayout(outside.getType()));
      // Both sides token shards of the same group, and one target layout.
      if (!other || other.getRanks() != current.getRanks() ||
          (target && other != target) ||
          region.values.contains(convert.getX()) ==
              region.values.contains(convert.getY()))
        return false;
      target = other;
      edgeBytes += rowBytes(convert.getX());
    }
    int64_t movedBytes = 0;
    for (BlockArgument argument : region.arguments)
      movedBytes += rowBytes(argument);
    for (OpOperand *use : region.returned)
      movedBytes += rowBytes(use->get());
    for (Value value : region.gathered)
      movedBytes += rowBytes(value);
    for (OpOperand *use : region.scattered)
      movedBytes += rowBytes(use->get());
    if (movedBytes >= edgeBytes)
      return false;

    // The conversions at the arguments need the packing first: build it at
    // the top of the body (its operands are arguments) if it is not there.
    Value packing = region.edgeConverts.front().getPacking();
    Block &body = func.getBody().front();
    if (packing.getParentBlock() != &body)
      return false;
    if (Operation *def = packing.getDefiningOp()) {
      if (!llvm::all_of(def->getOperands(), [&](Value operand) {
            return isa<BlockArgument>(operand);
          }))
        return false;
      def->moveBefore(&body, body.begin());
    }
    // Retype the region, convert at its new edge, drop the old one.
    for (Value value : region.values)
      value.setType(withLayout(value, target));
    OpBuilder builder(func.getContext());
    for (BlockArgument argument : region.arguments) {
      // The argument keeps the function's layout; the region reads its
      // conversion, placed right after the packing.
      Type inside = argument.getType();
      argument.setType(withLayout(argument, current));
      if (Operation *def = packing.getDefiningOp())
        builder.setInsertionPointAfter(def);
      else
        builder.setInsertionPointToStart(&body);
      auto convert = ConvertLayoutOp::create(builder, argument.getLoc(),
                                             inside, argument, packing);
      argument.replaceAllUsesExcept(convert.getY(), convert);
    }
    for (Value value : region.gathered) {
      // The gather keeps producing the SP-nested layout's CP shard; the
      // region reads its conversion.
      Type inside = value.getType();
      value.setType(withLayout(value, current));
      builder.setInsertionPointAfter(value.getDefiningOp());
      auto convert =
          ConvertLayoutOp::create(builder, value.getLoc(), inside, value, packing);
      value.replaceAllUsesExcept(convert.getY(), convert);
    }
    SmallVector<OpOperand *> leaving(region.returned);
    llvm::append_range(leaving, region.scattered);
    for (OpOperand *use : leaving) {
      builder.setInsertionPoint(use->getOwner());
      Value value = use->get();
      use->set(ConvertLayoutOp::create(builder, value.getLoc(),
                                       withLayout(value, current), value,
                                       packing));
    }
    for (ConvertLayoutOp convert : region.edgeConverts) {
      convert.getY().replaceAllUsesWith(convert.getX());
      convert.erase();
    }
    return true;
  }

  static RankedTensorType withLayout(Value value, SeqLayoutAttr layout) {
    auto type = cast<RankedTensorType>(value.getType());
    return RankedTensorType::get(type.getShape(), type.getElementType(),
                                 layout);
  }
};

} // namespace
