//===- GradientEngine.h - reverse-sweep internals ----------------*- C++
//-*-===//
//
// The gradient driver runs a program forward keeping every value, then walks
// its ops backwards. Each op's rule reads the forward values of its operands
// and results from the rank's Environment, takes the cotangents of its
// results from the rank's CotangentMap and adds the cotangents of its
// operands there. Local ops go one rank at a time; collectives, all ranks of
// a group at once, like the forward.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_INTERPRETER_GRADIENTS_GRADIENTENGINE_H
#define GDN_LIB_INTERPRETER_GRADIENTS_GRADIENTENGINE_H

#include "../Engine.h"

#include "gdn/Interpreter/ReferenceGradients.h"

#include <type_traits>

namespace mlir::gdn::interp {

/// The cotangents of one rank's values. A value without an entry has a
/// zero cotangent. Cotangents of several uses of a value add up; when the
/// reverse sweep reaches the op that defines a value, every use has been
/// swept, so its rule takes the value's cotangent out of the map.
class CotangentMap {
public:
  /// Adds `cotangent` to `value`'s (which must have its shape).
  void add(Value value, Tensor cotangent);
  /// True when one of `values` has a cotangent.
  bool hasAny(ValueRange values) const;
  /// Removes and returns `value`'s cotangent, zeros shaped like `like` when
  /// it has none.
  Tensor take(Value value, const Tensor &like);
  /// Removes and returns `value`'s cotangent if it has one.
  std::optional<Tensor> takeIfAny(Value value);

private:
  llvm::DenseMap<Value, Tensor> cotangents;
};

/// A rule: propagates the cotangents of `op`'s results (at least one has
/// one) to its operands on one rank. `options` are the forward's, for rules
/// that recompute inner values the way the forward computed them.
using GradientRule = llvm::Error (*)(Operation *op, const Environment &env,
                                     CotangentMap &cotangents,
                                     const InterpreterOptions &options);

/// Adapts `void rule(OpTy, const Environment &, CotangentMap &)`, for rules
/// that cannot fail, to a GradientRule.
template <class OpTy, void (*Rule)(OpTy, const Environment &, CotangentMap &)>
llvm::Error adaptRule(Operation *op, const Environment &env,
                      CotangentMap &cotangents, const InterpreterOptions &) {
  if constexpr (std::is_same_v<OpTy, Operation *>)
    Rule(op, env, cotangents);
  else
    Rule(llvm::cast<OpTy>(op), env, cotangents);
  return llvm::Error::success();
}

/// The rule of a primitive gdn op, a gdn_kernel op that is one primitive,
/// the glue (constants, packings, reshapes) or a local gdn_comm op; null
/// when `op` is none of them (LocalOpGradients.cpp).
GradientRule findLocalRule(Operation *op);

/// The rule of a composite op (gdn.layer, gdn_kernel.prologue), which
/// recomputes its inner values and composes the primitive VJPs
/// (CompositeGradients.cpp); null for other ops.
GradientRule findCompositeRule(Operation *op);

/// The rule of one of chunkwise CP's per-rank ops (ChunkwiseGradients.cpp);
/// null for other ops.
GradientRule findChunkwiseRule(Operation *op);

/// Propagates the cotangents of a non-collective op's results to its
/// operands on one rank. Ops without a rule are an error naming the op.
llvm::Error propagateLocalOp(Operation *op, const Environment &env,
                             CotangentMap &cotangents,
                             const InterpreterOptions &options);

/// Propagates through a collective for one group instance: rankOps[i],
/// envs[i] and cotangents[i] are the group's rank i.
llvm::Error propagateCollective(ArrayRef<Operation *> rankOps,
                                ArrayRef<const Environment *> envs,
                                ArrayRef<CotangentMap *> cotangents);

/// The error of an op the reverse sweep cannot differentiate.
llvm::Error makeNoRuleError(Operation *op, int64_t rank);

} // namespace mlir::gdn::interp

#endif // GDN_LIB_INTERPRETER_GRADIENTS_GRADIENTENGINE_H
