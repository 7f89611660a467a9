//===- GdnCore.h - the GDN core as the passes find it -------------*- C++ -*-===//
//
// The GDN core (conv -> split_qkv -> l2norm(q, k), gates -> delta rule) as
// gdn-fuse and the parallel passes find it from its delta rule, and what the
// parallel passes share: the type arithmetic of splitting a dimension over
// a group, the ranks option's check, and the per-head / per-section
// slicing of what every rank holds whole.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_ANALYSIS_GDNCORE_H
#define GDN_ANALYSIS_GDNCORE_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace mlir::gdn {

/// The ops of one GDN core, found from its delta rule.
struct Core {
  CausalConv1dOp conv;
  SplitQkvOp split;
  L2NormOp normQ, normK;
  GatesOp gates;
  DeltaRuleOp delta;
};

/// The prologue ops (conv, split, norms, gates; `delta` left null) that
/// compute a delta rule's or its gradient's q, k, v, g and beta over
/// `packing`.
inline std::optional<Core> findCoreInputs(Value q, Value k, Value v, Value g,
                                          Value beta, Value packing) {
  Core core;
  core.normQ = q.getDefiningOp<L2NormOp>();
  core.normK = k.getDefiningOp<L2NormOp>();
  core.gates = g.getDefiningOp<GatesOp>();
  if (!core.normQ || !core.normK || !core.gates ||
      beta.getDefiningOp<GatesOp>() != core.gates ||
      g != core.gates.getG() || beta != core.gates.getBeta())
    return std::nullopt;
  core.split = core.normQ.getX().getDefiningOp<SplitQkvOp>();
  if (!core.split || core.normQ.getX() != core.split.getQ() ||
      core.normK.getX() != core.split.getK() || v != core.split.getV())
    return std::nullopt;
  core.conv = core.split.getMixedQkv().getDefiningOp<CausalConv1dOp>();
  if (!core.conv || core.conv.getPacking() != packing)
    return std::nullopt;
  return core;
}

inline std::optional<Core> findCore(DeltaRuleOp delta) {
  std::optional<Core> core =
      findCoreInputs(delta.getQ(), delta.getK(), delta.getV(), delta.getG(),
                     delta.getBeta(), delta.getPacking());
  if (core)
    core->delta = delta;
  return core;
}

/// `type` with dimension `dim` of `size` and the given encoding.
inline RankedTensorType withDim(RankedTensorType type, unsigned dim,
                                int64_t size, Attribute encoding) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return RankedTensorType::get(shape, type.getElementType(), encoding);
}

/// `size` split over `ranks` (dynamic stays dynamic).
inline int64_t divided(int64_t size, int64_t ranks) {
  return ShapedType::isDynamic(size) ? size : size / ranks;
}

/// The core's ops.
inline SmallVector<Operation *, 6> getCoreOps(const Core &core) {
  return {core.conv, core.split, core.normQ, core.normK, core.gates,
          core.delta};
}

/// Every gdn.delta_rule of `func` as a core, or an error naming one the
/// passes cannot distribute (so that they never silently do nothing).
inline FailureOr<SmallVector<Core>> findCores(Operation *func,
                                              StringRef pass) {
  SmallVector<Core> cores;
  WalkResult walk = func->walk([&](Operation *op) {
    if (isa<LayerOp>(op)) {
      op->emitError() << pass
                      << ": run gdn-expand-layer first; the pass distributes "
                         "the layer's primitive ops";
      return WalkResult::interrupt();
    }
    auto delta = dyn_cast<DeltaRuleOp>(op);
    if (!delta)
      return WalkResult::advance();
    std::optional<Core> core = findCore(delta);
    if (!core) {
      delta.emitError() << pass
                        << ": expects the delta rule's q and k to be L2 norms "
                           "of a split_qkv of the conv, its v that split's, "
                           "and g and beta one gates op (run the pass before "
                           "gdn-fuse)";
      return WalkResult::interrupt();
    }
    cores.push_back(*core);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return cores;
}

/// The values that exist only inside a distributed region must not be read
/// outside it (`inside`): the pass replaces the region's ops. Returns the
/// first op that reads one, or null.
inline Operation *findOutsideUser(ArrayRef<Value> values,
                                  const llvm::DenseSet<Operation *> &inside) {
  for (Value value : values)
    for (Operation *user : value.getUsers())
      if (!inside.contains(user))
        return user;
  return nullptr;
}

/// Gives `func` the types its arguments and return now have (a parallel
/// pass changes them in place).
inline void refreshFunctionType(func::FuncOp func) {
  Block &body = func.getBody().front();
  func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                 body.getTerminator()->getOperandTypes()));
}

/// The `ranks` option of a parallel pass: an error below 1.
inline LogicalResult checkRanks(Operation *op, StringRef pass, int64_t ranks) {
  if (ranks >= 1)
    return success();
  return op->emitError() << pass << ": ranks must be >= 1, found " << ranks;
}

/// Slices tensors every rank holds whole into this rank's share, by head
/// (`localShard`) or per q/k/v section of the conv channels (`bySection`).
struct HeadSlicer {
  HeadSlicer(OpBuilder &builder, Location loc, comm::GroupAttr group,
             Core core)
      : builder(builder), loc(loc), group(group), ranks(group.getRanks()) {
    auto q = core.split.getQ().getType(), v = core.split.getV().getType();
    const int64_t keyDim = q.getDimSize(1) * q.getDimSize(2);
    sections = {keyDim, keyDim, v.getDimSize(1) * v.getDimSize(2)};
  }

  /// Block `rank` of `ranks` along `dim`.
  Value localShard(Value value, unsigned dim) {
    auto type = cast<RankedTensorType>(value.getType());
    return comm::LocalShardOp::create(
        builder, loc,
        withDim(type, dim, divided(type.getDimSize(dim), ranks), {}), value,
        group, dim);
  }
  /// The q/k/v sections regrouped by rank along `dim` (or back).
  Value regroup(Value value, unsigned dim, bool inverse) {
    return RegroupSectionsOp::create(builder, loc, value.getType(), value, dim,
                                     sections, ranks, inverse);
  }
  /// This rank's share of every q/k/v section along `dim`.
  Value bySection(Value value, unsigned dim) {
    return localShard(regroup(value, dim, /*inverse=*/false), dim);
  }
  /// Maps the core's parameters and initial states to this rank's share:
  /// the conv's per q/k/v section, the gates' and the delta rule's by head.
  void mapCoreParameters(Core core, IRMapping &map) {
    map.map(core.conv.getWeight(), bySection(core.conv.getWeight(), 0));
    if (Value bias = core.conv.getBias())
      map.map(bias, bySection(bias, 0));
    if (Value state = core.conv.getInitialState())
      map.map(state, bySection(state, 1));
    map.map(core.gates.getALog(), localShard(core.gates.getALog(), 0));
    map.map(core.gates.getDtBias(), localShard(core.gates.getDtBias(), 0));
    if (Value state = core.delta.getInitialState())
      map.map(state, localShard(state, 1));
  }

  OpBuilder &builder;
  Location loc;
  comm::GroupAttr group;
  int64_t ranks;
  SmallVector<int64_t> sections;
};

} // namespace mlir::gdn

#endif // GDN_ANALYSIS_GDNCORE_H
