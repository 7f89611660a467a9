//===- GdnCommDialect.h - the gdn_comm dialect ------------------*- C++ -*-===//
//
// Declares the gdn_comm dialect: process groups and the collectives that the
// sequence- and context-parallel passes insert.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDNCOMM_GDNCOMMDIALECT_H
#define GDN_DIALECT_GDNCOMM_GDNCOMMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

// The chunkwise-CP ops take a !gdn.packing.
#include "gdn/Dialect/Gdn/IR/GdnDialect.h"

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h.inc"
#include "gdn/Dialect/GdnComm/IR/GdnCommEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "gdn/Dialect/GdnComm/IR/GdnCommAttributes.h.inc"

#define GET_OP_CLASSES
#include "gdn/Dialect/GdnComm/IR/GdnCommOps.h.inc"

#endif // GDN_DIALECT_GDNCOMM_GDNCOMMDIALECT_H
