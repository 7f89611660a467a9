//===- Passes.h - gdn_kernel -> gdn_kernel: tile selection ------*- C++ -*-===//
//
// Declarations and registration of the passes in Passes.td beside this
// header (gdn_kernel -> gdn_kernel: tile selection).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDNKERNEL_TRANSFORMS_PASSES_H
#define GDN_DIALECT_GDNKERNEL_TRANSFORMS_PASSES_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Dialect/GdnKernel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gdn/Dialect/GdnKernel/Transforms/Passes.h.inc"

} // namespace mlir::gdn

#endif // GDN_DIALECT_GDNKERNEL_TRANSFORMS_PASSES_H
