//===- NormRecomputation.h - y of the norm from its backward -*- C++ -*-===//
//
// A generated backward that did not keep the gated RMSNorm's output y
// (save=inputs) runs the norm again only for out_proj's weight gradient:
//
//   y = gated_rmsnorm(o, z, w)                   (reads o, z; writes y)
//   dy_norm, dW_out = linear_grad(dy, y, W_out)  (data GEMM, weight GEMM)
//   do, dz, dw = gated_rmsnorm_grad(dy_norm, o, z, w)
//
// The norm's backward reads o and z anyway and forms y on the way, so it
// writes y too (epilogue_backward.cuh), and the projection's gradient runs
// in halves around it: the data GEMM first (the backward needs dy_norm),
// the weight GEMM after (it needs y). At 32K tokens of Qwen3-Next that is
// one pass over o and z (0.8 GB) less a step. These queries say which ops
// fold that way.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TARGET_CUDA_NORMRECOMPUTATION_H
#define GDN_LIB_TARGET_CUDA_NORMRECOMPUTATION_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

namespace mlir::gdn::cuda {

/// The recomputed norm whose output `grad` also writes, or null: the
/// norm's only use is a gdn.linear_grad's x, whose x gradient's only use
/// is `grad`, on the norm's own operands and eps, in one block, and every
/// use of the projection's weight gradient comes after `grad`.
kernel::GatedRMSNormOp getFoldedRecomputation(kernel::GatedRMSNormGradOp grad);

/// The norm backward that writes `norm`'s output instead of `norm` running
/// (getFoldedRecomputation), or null.
kernel::GatedRMSNormGradOp getFoldingBackward(kernel::GatedRMSNormOp norm);

/// For a gdn.linear_grad whose x is such a recomputation: the norm
/// backward between its data GEMM and its weight GEMM, or null.
kernel::GatedRMSNormGradOp getSplittingBackward(LinearGradOp grad);

} // namespace mlir::gdn::cuda

#endif // GDN_LIB_TARGET_CUDA_NORMRECOMPUTATION_H
