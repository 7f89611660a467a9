//===- SliceViews.h - leading-row slices read in place ----------*- C++ -*-===//
//
// gdn-split-projections slices each regrouped weight into its parts'
// rows (Qwen3-Next: the mixed and z rows of the 50 MB qkvz weight, the b
// and a rows of ba); as device-to-device copies those slices would move 48
// MB in the forward and again in the backward a step. A block of leading
// rows of a row-major tensor is contiguous, so where nothing writes the
// sliced buffer or the slice afterwards, the slice is a view: a tensor at
// an offset into its source's buffer, with no workspace and no copy. The
// same holds for a tensor.collapse_shape that flattens a token's features
// into one row (isReshapeView). Blocks of columns, which are not
// contiguous, are only recognised here (isColumnsSlice); InsertChains.h
// says when they are written in place.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TARGET_CUDA_SLICEVIEWS_H
#define GDN_LIB_TARGET_CUDA_SLICEVIEWS_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::gdn::cuda {

/// True for a slice the target runs: a block of leading rows of `whole`
/// (an offset and extent along dimension 0 only, unit strides, every later
/// dimension whole), so its bytes are contiguous.
bool isLeadingRowsSlice(OffsetSizeAndStrideOpInterface slice,
                        RankedTensorType whole);

/// The byte offset of such a slice's rows in `whole`.
int64_t getLeadingRowsOffsetBytes(OffsetSizeAndStrideOpInterface slice,
                                  RankedTensorType whole);

/// True for a block of columns of a 2-D `whole` (every row, static
/// columns, unit strides): gdn-merge-projection-grads stacks cotangents so,
/// and the target writes them in place or copies them row by row
/// (cudaMemcpy2DAsync). Its rows are `whole`'s, so a dynamic extent along
/// dimension 0 is every row.
bool isColumnsSlice(OffsetSizeAndStrideOpInterface slice,
                    RankedTensorType whole);

/// The byte offset of such a slice's first column in a row of `whole`.
int64_t getColumnsOffsetBytes(OffsetSizeAndStrideOpInterface slice,
                              RankedTensorType whole);

/// True when `slice` is read in place of its source: a block of leading
/// rows (static, every later dimension whole) at a multiple of 256 bytes
/// (the alignment of workspace pieces), not returned (results live
/// in the caller's buffers), and neither it nor its source shares its
/// buffer with values written later (a term of a folded gradient sum, a
/// link of an in-place insertion chain, a recomputed norm that its backward
/// writes).
bool isSliceView(tensor::ExtractSliceOp slice);

/// True when `collapse` (a tensor.collapse_shape) is a view of its source:
/// the flattened rows of a part its kernel writes in place as columns of a
/// stack (InsertChains.h), which only that insertion names, or of a source
/// that owns its buffer, the result not returned. Else it is a copy.
bool isReshapeView(tensor::CollapseShapeOp collapse);

} // namespace mlir::gdn::cuda

#endif // GDN_LIB_TARGET_CUDA_SLICEVIEWS_H
