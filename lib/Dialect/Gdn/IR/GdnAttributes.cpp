//===- GdnAttributes.cpp - gdn enums and layout encodings -----------------===//
//
// Verifies the layout encodings: a layout must describe a real distribution
// (a shard over at least two ranks), and each encoding only fits tensors that
// have the dimension it distributes.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gdn;

#include "gdn/Dialect/Gdn/IR/GdnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnAttributes.cpp.inc"

void GdnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "gdn/Dialect/Gdn/IR/GdnAttributes.cpp.inc"
      >();
}

LogicalResult
SeqLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      SeqLayoutKind kind, int64_t ranks, int64_t inner) {
  if (inner < 1)
    return emitError() << "#gdn.seq needs inner >= 1, found inner = " << inner;
  if (inner > 1 && kind != SeqLayoutKind::Zigzag)
    return emitError()
           << "only zigzag shards nest an inner (SP) sharding; a "
           << stringifySeqLayoutKind(kind) << " shard over " << ranks
           << " ranks with inner = " << inner << " is #gdn.seq<contiguous, "
           << "ranks = " << ranks * inner << ">";
  if (kind == SeqLayoutKind::Natural) {
    if (ranks != 1)
      return emitError() << "#gdn.seq<natural> holds all tokens and takes no "
                            "rank count (found ranks = "
                         << ranks
                         << "); use #gdn.seq<contiguous, ranks = " << ranks
                         << "> for a shard";
    return success();
  }
  if (ranks < 2)
    return emitError() << "a " << stringifySeqLayoutKind(kind)
                       << " shard needs ranks >= 2, found ranks = " << ranks
                       << "; a single rank holds the natural layout";
  return success();
}

LogicalResult SeqLayoutAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type elementType,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.empty())
    return emitError() << "#gdn.seq needs a tensor with a token dimension "
                          "(rank >= 1), found a rank-0 tensor";
  return success();
}

LogicalResult
HeadsLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t ranks) {
  if (ranks < 2)
    return emitError() << "#gdn.heads needs ranks >= 2, found ranks = " << ranks
                       << "; a single rank holds all heads";
  return success();
}

LogicalResult HeadsLayoutAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type elementType,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() < 2)
    return emitError() << "#gdn.heads needs a [T, heads, ...] tensor (rank >= "
                          "2), found rank "
                       << shape.size();
  return success();
}
