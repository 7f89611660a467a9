//===- ReferenceKernels.h - float64 reference of every gdn op ---*- C++ -*-===//
//
// Straightforward float64 implementations of the functions in docs/spec.md.
// Callers check shapes first (the interpreter does, against the op's types);
// outputs are allocated by the kernels in the requested storage precision and
// rounded once at the end. Every kernel handles each sequence on its own, so
// packed results are bit-identical to running each sequence alone.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_REFERENCEKERNELS_H
#define GDN_INTERPRETER_REFERENCEKERNELS_H

#include "gdn/Interpreter/Packing.h"
#include "gdn/Interpreter/Tensor.h"

namespace mlir::gdn::interp {

struct ConvResult {
  Tensor y;
  Tensor finalState; // [N, C, W-1]; empty unless requested
};

/// Depthwise causal conv1d over packed sequences. `x [T, C]`, `weight
/// [C, W]`, optional `bias [C]` and `initialState [N, C, W-1]`.
ConvResult causalConv1d(const Tensor &x, const Tensor &weight,
                        const Tensor *bias, const PackingInfo &packing,
                        const Tensor *initialState, bool silu,
                        ElementKind yKind, bool wantFinalState,
                        ElementKind stateKind);

/// `x * rsqrt(sum(x^2) + eps)` along the last dimension.
Tensor l2norm(const Tensor &x, double eps);

struct GatesResult {
  Tensor g, beta;
};

/// Decay `g` and `beta` per token and value head (see gdn.gates).
GatesResult gates(const Tensor &a, const Tensor &b, const Tensor &aLog,
                  const Tensor &dtBias, bool allowNegEigval,
                  ElementKind resultKind);

struct DeltaRuleInputs {
  const Tensor &q, &k, &v, &g, &beta;
  const PackingInfo &packing;
  const Tensor *initialState;
  double scale;
};

struct DeltaRuleResult {
  Tensor o;          // [T, HV, V], zero on padding rows
  Tensor finalState; // [N, HV, K, V]
};

/// The gated delta rule by its definition, one token at a time.
DeltaRuleResult deltaRuleRecurrent(const DeltaRuleInputs &inputs,
                                   ElementKind oKind, ElementKind stateKind);

/// The same function by the chunked (WY) algorithm the GPU kernels use:
/// per chunk, cumulative decay, the unit-lower-triangular system
/// (I + A) D = R by forward substitution, W/U, then output and state.
DeltaRuleResult deltaRuleChunked(const DeltaRuleInputs &inputs,
                                 int64_t chunkSize, ElementKind oKind,
                                 ElementKind stateKind);

/// The chunkwise-CP summary of rows [firstRow, endRow) of sequence `seq`:
/// the transition M = prod_t exp(g_t) (I - beta_t k_t k_t^T) (latest on the
/// left) and the partial state S, so that the state after those rows is
/// M S_in + S for the state S_in before them. With `startsHere` the rows
/// begin the sequence: S starts from its initial state and M is 0.
struct DeltaRuleSummary {
  Tensor transition; // [HV, K, K]
  Tensor partial;    // [HV, K, V]
};
DeltaRuleSummary deltaRuleSummary(const DeltaRuleInputs &inputs, int64_t seq,
                                  int64_t firstRow, int64_t endRow,
                                  bool startsHere, ElementKind stateKind);

/// `weight * (x * rsqrt(mean(x^2) + eps)) * silu(z)` over the last dim.
Tensor gatedRMSNorm(const Tensor &x, const Tensor &z, const Tensor &weight,
                    double eps, ElementKind yKind);

/// `y[t] = W * flatten(x[t])`, reshaped to `yShape` (whose first dim is T).
Tensor linear(const Tensor &x, const Tensor &weight,
              std::vector<int64_t> yShape, ElementKind yKind);

struct SplitQkvzResult {
  Tensor mixedQkv, z, b, a;
};

/// De-interleaves Qwen3-Next's qkvz / ba (see gdn.split_qkvz).
SplitQkvzResult splitQkvz(const Tensor &qkvz, const Tensor &ba,
                          int64_t keyHeads, int64_t headDimK,
                          int64_t valueHeads, int64_t headDimV);

struct SplitQkvResult {
  Tensor q, k, v;
};

/// Splits `[q | k | v]` channels into per-head tensors.
SplitQkvResult splitQkv(const Tensor &mixed, int64_t keyHeads, int64_t headDimK,
                        int64_t valueHeads, int64_t headDimV);

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_REFERENCEKERNELS_H
