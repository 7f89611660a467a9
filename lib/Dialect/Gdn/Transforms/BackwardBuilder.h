//===- BackwardBuilder.h - building one backward function -------*- C++ -*-===//
//
// gdn-generate-backward walks a forward function from its return to its
// first op and asks, for each op on the path from the arguments to the
// results, its gradient emitter (GradientEmitters.cpp,
// CommGradientEmitters.cpp) to add the op's VJP to the backward function.
// An emitter needs two things this builder provides: the backward's copy
// of a forward value (an argument, a saved value, or the value recomputed
// in the backward, as the save policy says), and the cotangents of values,
// which add up over uses.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TRANSFORMS_BACKWARDBUILDER_H
#define GDN_LIB_TRANSFORMS_BACKWARDBUILDER_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::gdn {

/// What the forward keeps for the backward (the pass's `save` option).
enum class SavePolicy {
  Activations, ///< every forward value a gradient op reads
  Inputs,      ///< the results of projections, delta rules and collectives
  Operands,    ///< Inputs, and the per-token values those ops read
  None,        ///< nothing but the arguments
};

/// How the backward obtains a forward op's results when it needs them.
enum class RecomputeCost {
  Free,      ///< metadata, constants, slices of weights: always recomputed
  Cheap,     ///< per-token, memory-bound ops: recomputed unless saving all
  Expensive, ///< GEMMs, the delta rule and its summary, communication
};

/// True for the values that have cotangents: tensors of floating-point
/// elements (offsets and other integers have none).
bool isDifferentiableType(Type type);

/// The cost class of `op`'s results.
RecomputeCost getRecomputeCost(Operation *op);

/// The type a cotangent of the forward value `primal` is stored in: the
/// primal's own type, except for an activation widened only for the
/// forward's precision (a gdn.linear result wider than its input, and what
/// the splits, regroupings, reshapes, collectives and layout conversions
/// move of it), whose cotangent keeps
/// the linear input's element type: its only consumer is that linear's
/// gradient GEMM, which reads it in that type anyway. Only where every use
/// of the widened value has a gradient op that can return a narrower
/// cotangent (the conv's input, the gated RMSNorm's operands, the conv
/// state's halo); otherwise the primal's type.
RankedTensorType getCotangentType(Value primal);

/// The process groups of a program: the SP and CP groups its gdn_comm ops
/// name (a CP group of the layouts' rank count when only gdn.convert_layout
/// distributes it). Empty for a one-rank program.
SmallVector<comm::GroupAttr> findProcessGroups(func::FuncOp function);

/// The forward values on the path from the float arguments to the float
/// results: varied (they depend on a differentiable argument) and useful
/// (a result depends on them). Only ops with an active result get a VJP,
/// and only active values receive cotangents.
class Activity {
public:
  explicit Activity(func::FuncOp function);

  bool isActive(Value value) const { return active.contains(value); }
  bool isActive(Operation *op) const;

private:
  llvm::DenseSet<Value> active;
};

class BackwardBuilder {
public:
  /// Builds into `backward`, whose entry block already has one argument per
  /// argument of `forward` followed by the cotangent arguments; saved
  /// values become arguments inserted before the cotangents.
  BackwardBuilder(func::FuncOp forward, func::FuncOp backward,
                  SavePolicy policy, const Activity &activity);

  OpBuilder &getBuilder() { return builder; }
  const Activity &getActivity() const { return activity; }

  /// The backward's copy of the forward value `value`: an argument, a saved
  /// value (a new argument of the backward), or `value` recomputed by
  /// cloning its defining op after materialising its operands.
  Value materialize(Value value);

  /// materialize() of each of `values` in order (so that recomputed ops
  /// appear in a fixed order); null values stay null.
  SmallVector<Value> materializeAll(ArrayRef<Value> values);

  /// Adds `cotangent` (of getCotangentType(primal)) to the cotangent of the
  /// forward value `primal`; values that are not active receive nothing.
  void addCotangent(Value primal, Value cotangent);

  /// The cotangent of `primal` accumulated so far, or null.
  Value getCotangent(Value primal) const { return cotangents.lookup(primal); }

  /// The cotangent of `primal`, or a tensor of zeros of its cotangent type.
  Value getCotangentOrZeros(Value primal);

  /// getCotangentOrZeros() of each of `values` in order.
  SmallVector<Value> getCotangentsOrZeros(ArrayRef<Value> values);

  /// Removes and returns the cotangent of `primal`, or zeros (for ops that
  /// accumulate into it, such as gdn_comm.return_halo).
  Value takeCotangentOrZeros(Value primal);

  /// A tensor of zeros of `like`'s type and (run-time) shape; `like` is a
  /// value of the backward function.
  Value zerosLike(Value like);
  /// A tensor of zeros of `type`, its dynamic sizes read from `sizesOf` (a
  /// value of the backward function; null when `type` is static).
  Value zeros(RankedTensorType type, Value sizesOf, Location loc);

  /// The forward values the backward takes as saved arguments, in order.
  ArrayRef<Value> getSaved() const { return saved.getArrayRef(); }

  /// How many forward values the backward takes as saved arguments.
  unsigned getNumSaved() const { return saved.size(); }

private:
  bool shouldSave(Value value) const;

  func::FuncOp forward, backward;
  SavePolicy policy;
  const Activity &activity;
  OpBuilder builder;
  IRMapping forwardToBackward;
  llvm::DenseMap<Value, Value> cotangents;
  llvm::SetVector<Value> saved;
};

/// Adds the VJP of the forward op `op` (whose results' cotangents are
/// complete) to the backward. Fails, with a diagnostic on `op`, for ops
/// that have none (isDifferentiableOp said so before anything was built).
LogicalResult emitGradient(Operation *op, BackwardBuilder &builder);

/// Emitters of the gdn ops and of the gdn_comm ops (and gdn.convert_layout);
/// each returns failure() when `op` is not its kind.
LogicalResult emitGdnGradient(Operation *op, BackwardBuilder &builder);
LogicalResult emitCommGradient(Operation *op, BackwardBuilder &builder);

/// Checks that `op`, an active op of a forward function, has a gradient,
/// and otherwise emits an error that names it and the fix.
LogicalResult checkDifferentiable(Operation *op);

} // namespace mlir::gdn

#endif // GDN_LIB_TRANSFORMS_BACKWARDBUILDER_H
