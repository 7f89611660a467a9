//===- Passes.h - gdn transformation passes ---------------------*- C++ -*-===//
//
// Declarations and registration of the passes declared in Passes.td, and of
// the default pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TRANSFORMS_PASSES_H
#define GDN_TRANSFORMS_PASSES_H

#include "gdn/Dialect/Gdn/GdnOps.h"
#include "gdn/Dialect/GdnComm/GdnCommDialect.h"
#include "gdn/Dialect/GdnKernel/GdnKernelDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gdn/Transforms/Passes.h.inc"

/// Adds the default end-to-end pipeline (`gdn-pipeline`) to `pm`: expand
/// composite layers, fuse prologue and epilogue kernels, clean up. Later
/// stages join it as they land.
void buildGdnPipeline(OpPassManager &pm);

/// Registers `gdn-pipeline` with the pass registry.
void registerGdnPipeline();

} // namespace mlir::gdn

#endif // GDN_TRANSFORMS_PASSES_H
