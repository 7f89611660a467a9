//===- Passes.h - gdn -> gdn: layer expansion and the backward program ---*- C++ -*-===//
//
// Declarations and registration of the passes in Passes.td beside this
// header (gdn -> gdn: layer expansion and the backward program).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_TRANSFORMS_PASSES_H
#define GDN_DIALECT_GDN_TRANSFORMS_PASSES_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"

} // namespace mlir::gdn

#endif // GDN_DIALECT_GDN_TRANSFORMS_PASSES_H
