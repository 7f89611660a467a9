//===- GradientSums.h - sums of projections' input gradients ----*- C++ -*-===//
//
// The backward of a layer sums the input gradients of the projections that
// read one x: `arith.addf` of gdn.linear_grad x gradients (Qwen3-Next: two,
// Qwen3.5: a chain of three additions over four projections). Such a sum
// costs no kernel: every projection's data GEMM writes into one buffer, the
// first in program order overwriting it and each later one accumulating
// onto it (gdnrt_linear_grad_accumulate, beta = 1). These queries say which
// additions fold that way and where each folded value lives.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TARGET_CUDA_GRADIENTSUMS_H
#define GDN_LIB_TARGET_CUDA_GRADIENTSUMS_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace mlir::gdn::cuda {

/// True when `add` sums, through additions of its own, x gradients of
/// gdn.linear_grad ops only, each value of the sum used by it alone: the
/// additions then run as accumulating GEMMs.
bool isFoldedGradientSum(arith::AddFOp add);

/// The value whose buffer holds `value`: the outermost folded sum that
/// `value` is a term of (an x gradient or a partial sum), else `value`.
Value getGradientSumStorage(Value value);

/// True when `op`'s x gradient is a term of a folded sum that an earlier
/// op's GEMM has already written: `op` accumulates onto it.
bool accumulatesInputGradient(LinearGradOp op);

} // namespace mlir::gdn::cuda

#endif // GDN_LIB_TARGET_CUDA_GRADIENTSUMS_H
