//===- InsertChains.cpp - insertions into a zero fill, in place -----------===//
//
// See InsertChains.h.
//
//===----------------------------------------------------------------------===//

#include "InsertChains.h"
#include "GradientSums.h"
#include "SliceViews.h"

#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <algorithm>
#include <utility>
#include <vector>

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cuda;

namespace {

/// A zero fill as the CUDA target runs it (a memset): tensor.splat or a
/// tensor-typed arith.constant (getDeviceCallLimitation refuses non-zero
/// ones before anything is printed).
bool isFill(Operation *op) {
  return op && (isa<tensor::SplatOp>(op) ||
                (isa<arith::ConstantOp>(op) &&
                 isa<RankedTensorType>(op->getResult(0).getType())));
}

/// The insertion that continues `value` in place, if any.
tensor::InsertSliceOp continuation(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  auto insert = dyn_cast<tensor::InsertSliceOp>(*value.getUsers().begin());
  return insert && insert.getDest() == value && insertsInPlace(insert) ? insert : nullptr;
}

} // namespace

bool mlir::gdn::cuda::insertsInPlace(tensor::InsertSliceOp insert) {
  Value dest = insert.getDest();
  if (!dest.hasOneUse())
    return false;
  Operation *producer = dest.getDefiningOp();
  if (isFill(producer))
    return true;
  auto previous = dyn_cast_or_null<tensor::InsertSliceOp>(producer);
  return previous && insertsInPlace(previous);
}

Value mlir::gdn::cuda::getInsertChainStorage(Value value) {
  Operation *producer = value.getDefiningOp();
  auto insert = dyn_cast_or_null<tensor::InsertSliceOp>(producer);
  if (!isFill(producer) && !(insert && insertsInPlace(insert)))
    return value;
  while (tensor::InsertSliceOp next = continuation(value))
    value = next.getResult();
  return value;
}

namespace {

/// The [begin, end) ranges that the insertions of the chain starting at
/// `fill` write along `dim`: rows (dim 0) when every insertion is a block
/// of leading rows, columns (dim 1) when every insertion is a block of
/// columns; nothing when they mix or a range is dynamic.
std::optional<std::vector<std::pair<int64_t, int64_t>>>
getWrittenRanges(Operation *fill, int64_t dim) {
  auto type = cast<RankedTensorType>(fill->getResult(0).getType());
  std::vector<std::pair<int64_t, int64_t>> written;
  for (tensor::InsertSliceOp insert = continuation(fill->getResult(0)); insert;
       insert = continuation(insert.getResult())) {
    const bool block = dim == 0 ? isLeadingRowsSlice(insert, type)
                                : isColumnsSlice(insert, type);
    if (!block)
      return std::nullopt;
    const int64_t offset = insert.getStaticOffsets()[dim];
    written.emplace_back(offset, offset + insert.getStaticSizes()[dim]);
  }
  std::sort(written.begin(), written.end());
  return written;
}

} // namespace

bool mlir::gdn::cuda::isOverwrittenFill(Operation *fill) {
  if (!isFill(fill))
    return false;
  auto type = cast<RankedTensorType>(fill->getResult(0).getType());
  if (type.getRank() == 0)
    return false;
  // The rows (or the columns) the insertions write, then whether they
  // cover all of them.
  for (int64_t dim : {int64_t{0}, int64_t{1}}) {
    if (dim >= type.getRank() || type.isDynamicDim(dim))
      continue;
    std::optional<std::vector<std::pair<int64_t, int64_t>>> written =
        getWrittenRanges(fill, dim);
    if (!written || written->empty())
      continue;
    int64_t covered = 0;
    for (auto [begin, end] : *written) {
      if (begin > covered)
        break;
      covered = std::max(covered, end);
    }
    if (covered >= type.getDimSize(dim))
      return true;
  }
  return false;
}

namespace {

/// The kernel result that a column block inserts: its source, or the
/// source of the tensor.collapse_shape that flattens a token's features
/// into one row (and that the insertion alone uses).
Value getInsertedResult(tensor::InsertSliceOp insert) {
  Value source = insert.getSource();
  if (auto collapse = source.getDefiningOp<tensor::CollapseShapeOp>();
      collapse && source.hasOneUse() &&
      collapse.getReassociationIndices().size() == 2 &&
      collapse.getReassociationIndices()[0].size() == 1)
    return collapse.getSrc();
  return source;
}

/// isWrittenByProducer without the partners of a column block (below).
bool isWrittenInPlace(tensor::InsertSliceOp insert) {
  if (!insertsInPlace(insert))
    return false;
  RankedTensorType dest = insert.getDestType();
  const bool columns = isColumnsSlice(insert, dest);
  // Workspace pieces start on 256-byte boundaries, which kernels rely on.
  // A block of columns is written by a kernel that strides its rows
  // (kernel::writesStridedRows), in 16-byte vectors or in elements
  // (kernel::getStridedRowsAlignment).
  if (columns) {
    const int64_t elementBytes = dest.getElementTypeBitWidth() / 8;
    Value part = getInsertedResult(insert);
    if (dest.isDynamicDim(1) || !kernel::writesStridedRows(part))
      return false;
    const int64_t alignment = kernel::getStridedRowsAlignment(part);
    if (getColumnsOffsetBytes(insert, dest) % alignment != 0 ||
        dest.getDimSize(1) * elementBytes % alignment != 0)
      return false;
  } else if (!dest.hasStaticShape() || !isLeadingRowsSlice(insert, dest) ||
             getLeadingRowsOffsetBytes(insert, dest) % 256 != 0) {
    return false;
  }
  Value source = columns ? getInsertedResult(insert) : insert.getSource();
  Operation *producer = source.getDefiningOp();
  // Fills, slices and insertions are places of other buffers, not writers.
  if (!source.hasOneUse() || !producer ||
      isa<tensor::ExtractSliceOp, tensor::InsertSliceOp>(producer) ||
      isFill(producer) || producer->getBlock() != insert->getBlock())
    return false;
  if (getGradientSumStorage(source) != source)
    return false;
  // The rows may be written before the insertion's turn in the chain, so
  // nothing else may write them: the chain's insertions write disjoint
  // rows, and its fill is skipped or runs before the producer.
  Operation *fill = insert.getDest().getDefiningOp();
  while (auto previous = dyn_cast_or_null<tensor::InsertSliceOp>(fill))
    fill = previous.getDest().getDefiningOp();
  if (!isFill(fill) || fill->getBlock() != producer->getBlock() ||
      !(isOverwrittenFill(fill) || fill->isBeforeInBlock(producer)))
    return false;
  std::optional<std::vector<std::pair<int64_t, int64_t>>> written =
      getWrittenRanges(fill, columns ? 1 : 0);
  if (!written)
    return false;
  for (size_t i = 1; i < written->size(); ++i)
    if ((*written)[i].first < (*written)[i - 1].second)
      return false;
  return true;
}

/// The results that one row stride of their kernel's Config covers with
/// `result` (prologue_grad's a and b gradients: kGateGradRowStride).
SmallVector<Value> getStridePartners(Value result) {
  if (auto grad = result.getDefiningOp<kernel::PrologueGradOp>())
    if (result == grad.getAGrad() || result == grad.getBGrad())
      return {grad.getAGrad(), grad.getBGrad()};
  return {result};
}

} // namespace

tensor::InsertSliceOp mlir::gdn::cuda::getInsertionOf(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  Operation *user = *value.getUsers().begin();
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(user))
    if (auto insert = getInsertionOf(collapse.getResult());
        insert && getInsertedResult(insert) == value)
      return insert;
  auto insert = dyn_cast<tensor::InsertSliceOp>(user);
  return insert && insert.getSource() == value ? insert : nullptr;
}

bool mlir::gdn::cuda::isWrittenByProducer(tensor::InsertSliceOp insert) {
  if (!isWrittenInPlace(insert))
    return false;
  if (!isColumnsSlice(insert, insert.getDestType()))
    return true;
  // Results that share a row stride are written in place into chains of
  // the same width, or none of them is.
  const int64_t width = insert.getDestType().getDimSize(1);
  return llvm::all_of(
      getStridePartners(getInsertedResult(insert)), [&](Value partner) {
        tensor::InsertSliceOp other = getInsertionOf(partner);
        return other && isColumnsSlice(other, other.getDestType()) &&
               other.getDestType().getDimSize(1) == width &&
               isWrittenInPlace(other);
      });
}

std::optional<int64_t> mlir::gdn::cuda::getStridedRowElements(Value result) {
  tensor::InsertSliceOp insert = getInsertionOf(result);
  if (!insert || !isColumnsSlice(insert, insert.getDestType()) ||
      !isWrittenByProducer(insert))
    return std::nullopt;
  return insert.getDestType().getDimSize(1);
}
