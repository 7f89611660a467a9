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

//===----------------------------------------------------------------------===//
// VJPs of the copies and the communication, on tensors
//===----------------------------------------------------------------------===//
//
// The sweep's rules above and the interpreter's execution of the gradient
// ops of a generated backward program (GradientOpExecution.cpp) both call
// these, so each rule exists once.

/// Moves cotangent slices back along `dim`: result index i of `dy` was read
/// from operand index `source(i)`; the other indices of `like`'s shape get
/// zero.
Tensor scatterAlong(const Tensor &dy, const Tensor &like, unsigned dim,
                    llvm::function_ref<int64_t(int64_t)> source);

/// VJP of gdn_comm.local_shard on rank `rankInGroup`: `dy` placed at the
/// rank's block of a zero tensor shaped like `input`.
Tensor localShardVJP(const Tensor &dy, const Tensor &input, unsigned dim,
                     int64_t rankInGroup);

/// VJP of gdn_comm.halo_exchange: adds each rank's halo cotangent
/// (`dhalo[r]`) onto the rows of `dx` (the ranks' shards) it was copied
/// from.
void accumulateHaloExchangeVJP(ArrayRef<Tensor> dhalo,
                               MutableArrayRef<Tensor> dx);

struct StateExchangeGradients {
  std::vector<Tensor> dtransitions, dpartials; ///< one per rank
};

/// VJP of gdn_comm.state_exchange by the reverse chain, at every rank's
/// transition and partial state, given every rank's incoming-state
/// cotangent.
StateExchangeGradients stateExchangeVJP(ArrayRef<const Tensor *> transitions,
                                        ArrayRef<const Tensor *> partials,
                                        ArrayRef<Tensor> dIncoming);

/// VJP of gdn_comm.gather_sequence_states: every rank's cotangent of
/// sequence i, summed onto the rank that owns i.
std::vector<Tensor> gatherSequenceStatesVJP(ArrayRef<Tensor> dy,
                                            const PackingInfo &packing);

/// The cotangents of what a continue_conv_state or continue_state op read:
/// the received halo or incoming state, and the per-sequence initial state
/// (what no initial state read is left out when the op has none).
struct ContinuedStateGradients {
  Tensor dreceived, dinitialState;
};

/// VJP of gdn_comm.continue_conv_state on `shard`, from the cotangent of
/// its result.
ContinuedStateGradients continueConvStateVJP(Tensor dState,
                                             const PackingInfo &packing,
                                             const ChunkwiseShard &shard,
                                             bool hasInitialState);

/// VJP of gdn_comm.continue_state on `shard`.
ContinuedStateGradients continueStateVJP(Tensor dState,
                                         const ChunkwiseShard &shard);

/// The operands of gdn_comm.state_summary or state_summary_grad as the
/// delta rule's bundle (`q`, which no summary reads, given by the caller).
template <class Op>
DeltaRuleInputs summaryInputsOf(Op op, const Environment &env,
                                const Tensor &q) {
  return {q,
          env.tensor(op.getK()),
          env.tensor(op.getV()),
          env.tensor(op.getG()),
          env.tensor(op.getBeta()),
          env.packing(op.getPacking()),
          env.optionalTensor(op.getInitialState()),
          /*scale=*/1.0};
}

/// VJP of gdn_comm.state_summary on `shard`; std::nullopt when no sequence
/// leaves the shard (the summary is constant, every cotangent zero).
std::optional<DeltaRuleSummaryGradients>
stateSummaryVJP(const DeltaRuleInputs &inputs, const ChunkwiseShard &shard,
                const Tensor *dtransition, const Tensor *dpartial);

/// The operands of a fused prologue (gdn_kernel.prologue, or the
/// prologue_grad that is its VJP as an op).
struct PrologueInputs {
  const Tensor &mixed, &convWeight;
  const Tensor *bias, *initialState;
  const Tensor &a, &b, &aLog, &dtBias;
  const PackingInfo &packing;
  bool silu, allowNegEigval;
  int64_t keyHeads, headDimK, valueHeads, headDimV;
  double l2normEps;
};

template <class Op>
PrologueInputs prologueInputsOf(Op op, const Environment &env) {
  return {env.tensor(op.getMixedQkv()),
          env.tensor(op.getConvWeight()),
          env.optionalTensor(op.getConvBias()),
          env.optionalTensor(op.getConvInitialState()),
          env.tensor(op.getA()),
          env.tensor(op.getB()),
          env.tensor(op.getALog()),
          env.tensor(op.getDtBias()),
          env.packing(op.getPacking()),
          op.getActivation() == Activation::Silu,
          op.getAllowNegEigval(),
          static_cast<int64_t>(op.getKeyHeads()),
          static_cast<int64_t>(op.getHeadDimK()),
          static_cast<int64_t>(op.getValueHeads()),
          static_cast<int64_t>(op.getHeadDimV()),
          op.getL2normEps().convertToDouble()};
}

struct PrologueGradients {
  ConvGradients conv;
  GatesGradients gates;
};

/// VJP of the fused prologue: recomputes the conv (float64), then runs the
/// gates', the L2 norms', the split's and the conv's VJPs. `dq` and `dk`
/// are the cotangents after the norms; `dg`, `dbeta` and `dfinalState`
/// may be null (zero).
PrologueGradients prologueVJP(const PrologueInputs &inputs, const Tensor &dq,
                              const Tensor &dk, const Tensor &dv,
                              const Tensor *dg, const Tensor *dbeta,
                              const Tensor *dfinalState);

} // namespace mlir::gdn::interp

#endif // GDN_LIB_INTERPRETER_GRADIENTS_GRADIENTENGINE_H
