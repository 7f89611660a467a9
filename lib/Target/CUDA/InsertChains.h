//===- InsertChains.h - insertions into a zero fill, in place ---*- C++ -*-===//
//
// gdn-split-projections stacks the parts of a weight gradient into zeros: a
// zero fill, then one tensor.insert_slice per part, each into the previous
// result. Lowered one op at a time, every insertion copies its whole
// destination before writing its rows (two full copies of a 50 MB weight
// gradient a step for Qwen3-Next's qkvz). When the fill and each insertion
// feed nothing but the next insertion, the chain runs in one buffer: each
// insertion copies only its rows, and the fill is skipped where the
// insertions write every row. These queries say which ops of a chain do so
// and where the chain lives, and which parts need no copy at all: those
// whose op writes them into the chain's rows. gdn-merge-projection-grads
// builds the same chains out of blocks of columns (the input projections'
// cotangents side by side): there a part needs no copy where its kernel
// writes its rows with the chain's row stride, which the kernel's Config
// then names (getStridedRowElements); else it is copied row by row.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TARGET_CUDA_INSERTCHAINS_H
#define GDN_LIB_TARGET_CUDA_INSERTCHAINS_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <optional>

namespace mlir::gdn::cuda {

/// True when `insert` writes into its destination's buffer: the destination
/// is a zero fill (tensor.splat, or an arith.constant tensor) or an in-place
/// insertion, and this insertion is its only use.
bool insertsInPlace(tensor::InsertSliceOp insert);

/// The value whose buffer holds `value`: for a fill or an insertion that an
/// in-place insertion continues, the chain's last insertion; else `value`.
Value getInsertChainStorage(Value value);

/// True when `fill` (a zero fill) starts an in-place chain whose insertions
/// write all of its rows (static sizes): nothing reads its zeros.
bool isOverwrittenFill(Operation *fill);

/// True when `insert` (in place: leading rows at a multiple of 256 bytes,
/// or a block of columns whose source a kernel writes with a row stride,
/// its first column and the rows on the boundaries that kernel stores at)
/// copies nothing: its source is a result that
/// the insertion alone uses,
/// that shares its buffer with nothing (GradientSums.h), and whose op runs
/// after the insertion's destination is complete, so that op writes it
/// straight into the destination's rows (a weight gradient's parts after
/// gdn-split-projections).
bool isWrittenByProducer(tensor::InsertSliceOp insert);

/// The insertion into a chain whose source `value` is (through the
/// tensor.collapse_shape that flattens a token's features into one row,
/// which gdn-merge-projection-grads makes), when it is `value`'s one use.
tensor::InsertSliceOp getInsertionOf(Value value);

/// For a kernel result written in place as a block of columns of a chain
/// (gdn-merge-projection-grads' stacked cotangents; isWrittenByProducer),
/// the elements between its rows: the chain's width, which the kernel's
/// Config then names. Results whose Config member is shared (the prologue
/// backward's a and b gradients) are written so together or not at all.
std::optional<int64_t> getStridedRowElements(Value result);

} // namespace mlir::gdn::cuda

#endif // GDN_LIB_TARGET_CUDA_INSERTCHAINS_H
