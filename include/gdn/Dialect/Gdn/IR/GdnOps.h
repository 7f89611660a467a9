//===- GdnOps.h - gdn operations --------------------------------*- C++ -*-===//
//
// Declares the operations of the gdn dialect (generated from GdnOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDNOPS_H
#define GDN_DIALECT_GDN_GDNOPS_H

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnOps.h.inc"

namespace mlir::gdn {

/// The scale the delta rule applies to q when none is given: K^-1/2.
double getDefaultDeltaRuleScale(int64_t headDimK);

/// True when `narrow` and `wide` are float types and `narrow` has fewer
/// bits: how a cotangent may be stored beside a primal kept wider for the
/// forward's precision (an f32 projection output, docs/precision.md).
bool isNarrowerFloat(Type narrow, Type wide);

} // namespace mlir::gdn

#endif // GDN_DIALECT_GDN_GDNOPS_H
