//===- SliceViews.cpp - leading-row slices read in place ------------------===//
//
// See SliceViews.h.
//
//===----------------------------------------------------------------------===//

#include "SliceViews.h"
#include "GradientSums.h"
#include "InsertChains.h"
#include "NormRecomputation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cuda;

namespace {

/// True when `value`'s buffer is its own: no folded sum accumulates into
/// it, no in-place insertion chain shares it, and no norm backward writes
/// it later (NormRecomputation.h).
bool ownsItsBuffer(Value value) {
  // A chain's fill or link that another insertion continues has the
  // chain's end as its storage, and a sum's term the sum.
  if (getGradientSumStorage(getInsertChainStorage(value)) != value)
    return false;
  if (auto norm = value.getDefiningOp<kernel::GatedRMSNormOp>())
    return !getFoldingBackward(norm);
  return true;
}

constexpr int64_t kViewAlignment = 256;

bool isReturned(Value value) {
  return llvm::any_of(value.getUsers(), [](Operation *user) {
    return isa<func::ReturnOp>(user);
  });
}

} // namespace

bool mlir::gdn::cuda::isLeadingRowsSlice(OffsetSizeAndStrideOpInterface slice,
                                         RankedTensorType whole) {
  ArrayRef<int64_t> offsets = slice.getStaticOffsets(),
                    sizes = slice.getStaticSizes(),
                    strides = slice.getStaticStrides();
  if (whole.getRank() == 0 ||
      offsets.size() != static_cast<size_t>(whole.getRank()))
    return false;
  for (int64_t d = 0; d < whole.getRank(); ++d) {
    if (ShapedType::isDynamic(offsets[d]) || ShapedType::isDynamic(sizes[d]) ||
        strides[d] != 1)
      return false;
    if (d > 0 && (offsets[d] != 0 || sizes[d] != whole.getDimSize(d)))
      return false;
  }
  return true;
}

int64_t mlir::gdn::cuda::getLeadingRowsOffsetBytes(
    OffsetSizeAndStrideOpInterface slice, RankedTensorType whole) {
  int64_t rowBytes = whole.getElementTypeBitWidth() / 8;
  for (int64_t d = 1; d < whole.getRank(); ++d)
    rowBytes *= whole.getDimSize(d);
  return slice.getStaticOffsets()[0] * rowBytes;
}

bool mlir::gdn::cuda::isColumnsSlice(OffsetSizeAndStrideOpInterface slice,
                                     RankedTensorType whole) {
  ArrayRef<int64_t> offsets = slice.getStaticOffsets(),
                    sizes = slice.getStaticSizes(),
                    strides = slice.getStaticStrides();
  if (whole.getRank() != 2 || offsets.size() != 2 || offsets[0] != 0 ||
      ShapedType::isDynamic(offsets[1]) || ShapedType::isDynamic(sizes[1]) ||
      strides[0] != 1 || strides[1] != 1)
    return false;
  return ShapedType::isDynamic(sizes[0]) ? whole.isDynamicDim(0)
                                         : sizes[0] == whole.getDimSize(0);
}

int64_t
mlir::gdn::cuda::getColumnsOffsetBytes(OffsetSizeAndStrideOpInterface slice,
                                       RankedTensorType whole) {
  return slice.getStaticOffsets()[1] * whole.getElementTypeBitWidth() / 8;
}

bool mlir::gdn::cuda::isSliceView(tensor::ExtractSliceOp slice) {
  RankedTensorType source = slice.getSourceType();
  // Workspace pieces start on 256-byte boundaries, which the kernels'
  // vector loads and TMA rely on; a view keeps its source's alignment.
  if (!isLeadingRowsSlice(slice, source) ||
      getLeadingRowsOffsetBytes(slice, source) % kViewAlignment != 0)
    return false;
  return !isReturned(slice.getResult()) && ownsItsBuffer(slice.getResult()) &&
         ownsItsBuffer(slice.getSource());
}

bool mlir::gdn::cuda::isReshapeView(tensor::CollapseShapeOp collapse) {
  if (tensor::InsertSliceOp insert = getInsertionOf(collapse.getSrc());
      insert && insert.getSource() == collapse.getResult() &&
      isWrittenByProducer(insert))
    return true;
  return !isReturned(collapse.getResult()) &&
         ownsItsBuffer(collapse.getResult()) &&
         ownsItsBuffer(collapse.getSrc());
}
