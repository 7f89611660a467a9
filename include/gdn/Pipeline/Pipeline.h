//===- Pipeline.h - the default gdn pipeline ----------------------*- C++ -*-===//
//
// `gdn-pipeline`: the passes a user runs on a layer without picking them,
// across the levels (gdn, gdn_comm, the conversion to gdn_kernel).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_PIPELINE_PIPELINE_H
#define GDN_PIPELINE_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::gdn {

struct GdnPipelineOptions : public PassPipelineOptions<GdnPipelineOptions> {
  Option<bool> f32Projections{
      *this, "f32-projections",
      llvm::cl::desc("Store the in_proj outputs that feed the conv and the "
                     "gate in f32 (docs/precision.md)"),
      llvm::cl::init(false)};
};

void buildGdnPipeline(OpPassManager &pm,
                      const GdnPipelineOptions &options = GdnPipelineOptions());

void registerGdnPipeline();

} // namespace mlir::gdn

#endif // GDN_PIPELINE_PIPELINE_H
