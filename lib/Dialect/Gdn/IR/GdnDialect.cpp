//===- GdnDialect.cpp - the gdn dialect -----------------------------------===//
//
// Registers the attributes, types and ops of the gdn dialect.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

using namespace mlir;
using namespace mlir::gdn;

#include "gdn/Dialect/Gdn/IR/GdnDialect.cpp.inc"

void GdnDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "gdn/Dialect/Gdn/IR/GdnOps.cpp.inc"
      >();
}
