//===- GdnDialect.h - the gdn dialect ---------------------------*- C++ -*-===//
//
// Declares the gdn dialect with its enums, attributes and types. Ops are in
// GdnOps.h, which includes this header.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_GDNDIALECT_H
#define GDN_DIALECT_GDN_GDNDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/TensorEncoding.h"

#include "gdn/Dialect/Gdn/IR/GdnDialect.h.inc"
#include "gdn/Dialect/Gdn/IR/GdnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnAttributes.h.inc"

#define GET_TYPEDEF_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnTypes.h.inc"

#endif // GDN_DIALECT_GDN_GDNDIALECT_H
