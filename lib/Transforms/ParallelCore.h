//===- ParallelCore.h - what the parallel passes share ------------*- C++ -*-===//
//
// The GDN core as the parallel passes find it (from its delta rule), and
// the type arithmetic of splitting a dimension over a group.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TRANSFORMS_PARALLELCORE_H
#define GDN_LIB_TRANSFORMS_PARALLELCORE_H

#include "gdn/Dialect/Gdn/GdnOps.h"

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

inline RankedTensorType withDim(RankedTensorType type, unsigned dim, int64_t size,
                         Attribute encoding) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return RankedTensorType::get(shape, type.getElementType(), encoding);
}

/// `size` split over `ranks` (dynamic stays dynamic).
inline int64_t divided(int64_t size, int64_t ranks) {
  return ShapedType::isDynamic(size) ? size : size / ranks;
}

} // namespace mlir::gdn

#endif // GDN_LIB_TRANSFORMS_PARALLELCORE_H
