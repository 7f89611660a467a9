//===- Passes.h - gdn -> gdn_kernel: the lowering to generated kernels ---*- C++ -*-===//
//
// Declarations and registration of the passes in Passes.td beside this
// header (gdn -> gdn_kernel: the lowering to generated kernels).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_CONVERSION_PASSES_H
#define GDN_CONVERSION_PASSES_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gdn/Conversion/Passes.h.inc"

} // namespace mlir::gdn

#endif // GDN_CONVERSION_PASSES_H
