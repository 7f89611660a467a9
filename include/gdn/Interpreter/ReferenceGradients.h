//===- ReferenceGradients.h - float64 VJPs of the reference kernels -*- C++
//-*-===//
//
// Reverse-mode derivatives (vector-Jacobian products) of the functions in
// ReferenceKernels.h: given the forward inputs and the cotangents of the
// outputs, each returns the cotangents of the inputs. They are the gradient
// oracle of the project (GPU backward kernels and generated backward
// programs are checked against them), so they are written to be read:
// each recomputes what it needs of the forward from the inputs and walks
// the forward's loops backwards.
//
// Cotangents are float64 and never rounded to a storage precision: for a
// bf16 or f32 program they are the exact derivatives of the function at the
// stored forward values (rounding counts as the identity, as in autograd).
// Every rule is deterministic: sums run in a fixed order, so the same inputs
// give bit-identical gradients.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_REFERENCEGRADIENTS_H
#define GDN_INTERPRETER_REFERENCEGRADIENTS_H

#include "gdn/Interpreter/ReferenceKernels.h"

namespace mlir::gdn::interp {

/// A float64 tensor of zeros shaped like `like`.
Tensor zerosLike(const Tensor &like);

/// `into += addend` elementwise (same shapes).
void accumulateInto(Tensor &into, const Tensor &addend);

struct ConvGradients {
  Tensor dx, dweight;
  Tensor dbias;         ///< empty without a bias
  Tensor dinitialState; ///< empty without an initial state
};

/// VJP of causalConv1d. `dy` is the cotangent of y; `dfinalState` (may be
/// null) that of the final conv state. No gradient crosses a sequence
/// boundary; padding rows get zero.
ConvGradients causalConv1dVJP(const Tensor &x, const Tensor &weight,
                              const Tensor *bias, const PackingInfo &packing,
                              const Tensor *initialState, bool silu,
                              const Tensor &dy, const Tensor *dfinalState);

/// VJP of l2norm along the last dimension.
Tensor l2normVJP(const Tensor &x, double eps, const Tensor &dy);

struct GatesGradients {
  Tensor da, db, daLog, ddtBias;
};

/// VJP of gates; `dg` or `dbeta` may be null (zero cotangent).
GatesGradients gatesVJP(const Tensor &a, const Tensor &b, const Tensor &aLog,
                        const Tensor &dtBias, bool allowNegEigval,
                        const Tensor *dg, const Tensor *dbeta);

struct DeltaRuleGradients {
  Tensor dq, dk, dv, dg, dbeta;
  Tensor dinitialState; ///< empty without an initial state
};

/// VJP of the gated delta rule by an exact reverse sweep over its
/// recurrence (the definition; the chunked form computes the same function).
/// `dfinalState` may be null.
DeltaRuleGradients deltaRuleVJP(const DeltaRuleInputs &inputs,
                                const Tensor &dout, const Tensor *dfinalState);

struct DeltaRuleSummaryGradients {
  Tensor dk, dv, dg, dbeta; ///< q does not enter a summary
  Tensor dinitialState;     ///< empty without an initial state
};

/// VJP of deltaRuleSummary (chunkwise CP's per-rank summary), by a reverse
/// sweep over its rows. `dtransition` and `dpartial` ([HV, K, K] and
/// [HV, K, V]) may be null.
DeltaRuleSummaryGradients deltaRuleSummaryVJP(const DeltaRuleInputs &inputs,
                                              int64_t seq, int64_t firstRow,
                                              int64_t endRow, bool startsHere,
                                              const Tensor *dtransition,
                                              const Tensor *dpartial);

struct GatedRMSNormGradients {
  Tensor dx, dz, dweight;
};

/// VJP of gatedRMSNorm.
GatedRMSNormGradients gatedRMSNormVJP(const Tensor &x, const Tensor &z,
                                      const Tensor &weight, double eps,
                                      const Tensor &dy);

struct LinearGradients {
  Tensor dx, dweight;
};

/// VJP of linear: `dy` has y's shape (first dim T, the rest flattened).
LinearGradients linearVJP(const Tensor &x, const Tensor &weight,
                          const Tensor &dy);

struct SplitQkvzGradients {
  Tensor dqkvz, dba;
};

/// VJP of splitQkvz: the cotangents of its four results (any may be null)
/// go back to the interleaved positions they were read from.
SplitQkvzGradients splitQkvzVJP(const Tensor *dmixedQkv, const Tensor *dz,
                                const Tensor *db, const Tensor *da,
                                const Tensor &qkvz, const Tensor &ba,
                                int64_t keyHeads, int64_t headDimK,
                                int64_t valueHeads, int64_t headDimV);

/// VJP of splitQkv: concatenates the channels back (null means zero).
Tensor splitQkvVJP(const Tensor *dq, const Tensor *dk, const Tensor *dv,
                   const Tensor &mixed, int64_t keyHeads, int64_t headDimK,
                   int64_t valueHeads, int64_t headDimV);

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_REFERENCEGRADIENTS_H
