//===- InsertChains.cpp - insertions into a zero fill, in place -----------===//
//
// See InsertChains.h.
//
//===----------------------------------------------------------------------===//

#include "InsertChains.h"
#include "GradientSums.h"
#include "SliceViews.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <algorithm>
#include <utility>
#include <vector>

using namespace mlir;
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

bool mlir::gdn::cuda::isOverwrittenFill(Operation *fill) {
  if (!isFill(fill))
    return false;
  auto type = cast<RankedTensorType>(fill->getResult(0).getType());
  if (!type.hasStaticShape() || type.getRank() == 0)
    return false;
  // The rows each insertion writes (its later dimensions whole: the only
  // slices the target runs), then whether they cover [0, rows).
  std::vector<std::pair<int64_t, int64_t>> written;
  for (tensor::InsertSliceOp insert = continuation(fill->getResult(0)); insert;
       insert = continuation(insert.getResult())) {
    ArrayRef<int64_t> offsets = insert.getStaticOffsets(), sizes = insert.getStaticSizes();
    for (int64_t d = 1; d < type.getRank(); ++d)
      if (offsets[d] != 0 || sizes[d] != type.getDimSize(d))
        return false;
    if (ShapedType::isDynamic(offsets[0]) || ShapedType::isDynamic(sizes[0]))
      return false;
    written.emplace_back(offsets[0], offsets[0] + sizes[0]);
  }
  std::sort(written.begin(), written.end());
  int64_t covered = 0;
  for (auto [begin, end] : written) {
    if (begin > covered)
      return false;
    covered = std::max(covered, end);
  }
  return covered >= type.getDimSize(0);
}

bool mlir::gdn::cuda::isWrittenByProducer(tensor::InsertSliceOp insert) {
  if (!insertsInPlace(insert))
    return false;
  RankedTensorType dest = insert.getDestType();
  // Workspace pieces start on 256-byte boundaries, which kernels rely on.
  if (!dest.hasStaticShape() || !isLeadingRowsSlice(insert, dest) ||
      getLeadingRowsOffsetBytes(insert, dest) % 256 != 0)
    return false;
  Value source = insert.getSource();
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
  std::vector<std::pair<int64_t, int64_t>> written;
  for (tensor::InsertSliceOp link = continuation(fill->getResult(0)); link;
       link = continuation(link.getResult())) {
    ArrayRef<int64_t> at = link.getStaticOffsets(), size = link.getStaticSizes();
    if (ShapedType::isDynamic(at[0]) || ShapedType::isDynamic(size[0]))
      return false;
    written.emplace_back(at[0], at[0] + size[0]);
  }
  std::sort(written.begin(), written.end());
  for (size_t i = 1; i < written.size(); ++i)
    if (written[i].first < written[i - 1].second)
      return false;
  return true;
}
