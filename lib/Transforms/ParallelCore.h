//===- ParallelCore.h - what the parallel passes share ------------*- C++ -*-===//
//
// The GDN core as the parallel passes find it (from its delta rule), and
// the type arithmetic of splitting a dimension over a group.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TRANSFORMS_PARALLELCORE_H
#define GDN_LIB_TRANSFORMS_PARALLELCORE_H

#include "gdn/Dialect/Gdn/GdnOps.h"

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

inline std::optional<Core> findCore(DeltaRuleOp delta) {
  Core core;
  core.delta = delta;
  core.normQ = delta.getQ().getDefiningOp<L2NormOp>();
  core.normK = delta.getK().getDefiningOp<L2NormOp>();
  core.gates = delta.getG().getDefiningOp<GatesOp>();
  if (!core.normQ || !core.normK || !core.gates ||
      delta.getBeta().getDefiningOp<GatesOp>() != core.gates)
    return std::nullopt;
  core.split = core.normQ.getX().getDefiningOp<SplitQkvOp>();
  if (!core.split || core.normQ.getX() != core.split.getQ() ||
      core.normK.getX() != core.split.getK() ||
      delta.getV() != core.split.getV())
    return std::nullopt;
  core.conv = core.split.getMixedQkv().getDefiningOp<CausalConv1dOp>();
  if (!core.conv || core.conv.getPacking() != delta.getPacking())
    return std::nullopt;
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

} // namespace mlir::gdn

#endif // GDN_LIB_TRANSFORMS_PARALLELCORE_H
