//===- GdnCommDialect.cpp - the gdn_comm dialect --------------------------===//
//
// Registers the gdn_comm attributes and ops, and verifies process groups.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gdn::comm;

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.cpp.inc"
#include "gdn/Dialect/GdnComm/IR/GdnCommEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "gdn/Dialect/GdnComm/IR/GdnCommAttributes.cpp.inc"

void GdnCommDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "gdn/Dialect/GdnComm/IR/GdnCommAttributes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "gdn/Dialect/GdnComm/IR/GdnCommOps.cpp.inc"
      >();
}

LogicalResult GroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                GroupKind kind, int64_t ranks) {
  if (ranks < 1)
    return emitError() << "a process group needs at least one rank, found "
                       << ranks;
  return success();
}
