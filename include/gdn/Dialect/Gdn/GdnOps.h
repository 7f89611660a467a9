//===- GdnOps.h - gdn operations --------------------------------*- C++ -*-===//
//
// Declares the operations of the gdn dialect (generated from GdnOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDNOPS_H
#define GDN_DIALECT_GDN_GDNOPS_H

#include "gdn/Dialect/Gdn/GdnDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "gdn/Dialect/Gdn/GdnOps.h.inc"

namespace mlir::gdn {

/// The scale the delta rule applies to q when none is given: K^-1/2.
double getDefaultDeltaRuleScale(int64_t headDimK);

} // namespace mlir::gdn

#endif // GDN_DIALECT_GDN_GDNOPS_H
