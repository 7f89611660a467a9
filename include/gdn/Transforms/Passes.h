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
#include "mlir/Pass/PassOptions.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gdn/Transforms/Passes.h.inc"

/// Adds the default end-to-end pipeline (`gdn-pipeline`) to `pm`: expand
/// composite layers, fuse prologue and epilogue kernels, clean up. Later
/// stages join it as they land.
/// The options of gdn-pipeline: `f32-projections` is gdn-expand-layer's.
struct GdnPipelineOptions : public PassPipelineOptions<GdnPipelineOptions> {
  Option<bool> f32Projections{
      *this, "f32-projections",
      llvm::cl::desc("Store the in_proj outputs that feed the conv and the "
                     "gate in f32 (docs/precision.md)"),
      llvm::cl::init(false)};
};

void buildGdnPipeline(OpPassManager &pm,
                      const GdnPipelineOptions &options = GdnPipelineOptions());

/// Registers `gdn-pipeline` with the pass registry.
void registerGdnPipeline();

} // namespace mlir::gdn

#endif // GDN_TRANSFORMS_PASSES_H
