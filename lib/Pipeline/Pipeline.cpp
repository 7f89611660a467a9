//===- Pipeline.cpp - the default gdn pipeline ----------------------------===//
//
// `gdn-pipeline` is what users run on a layer when they do not want to pick
// passes: it grows as the compiler's stages land (parallelism, kernel
// selection, the delta-rule kernels), so the README's main command keeps
// meaning "compile this layer". Today: expand, compute chunkwise CP's state
// summaries with the delta rule, project straight into the split layouts,
// fuse (and lower the delta rule), merge the input projections' gradient
// GEMMs, select kernel tiles, clean up.
//
//===----------------------------------------------------------------------===//

#include "gdn/Pipeline/Pipeline.h"

#include "gdn/InitAllPasses.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::gdn::buildGdnPipeline(OpPassManager &pm,
                                 const GdnPipelineOptions &options) {
  GdnExpandLayerOptions expand;
  expand.f32Projections = options.f32Projections;
  pm.addPass(createGdnExpandLayer(expand));
  pm.addPass(createGdnLowerStateSummaries());
  pm.addPass(createGdnSplitProjections());
  pm.addPass(createGdnFuse());
  pm.addPass(createGdnMergeProjectionGrads());
  pm.addPass(createGdnSelectKernels());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::gdn::registerGdnPipeline() {
  PassPipelineRegistration<GdnPipelineOptions>(
      "gdn-pipeline",
      "The default GDN pipeline: expand layers into primitive ops, fuse the "
      "prologue and epilogue kernels, lower the delta rule and select the "
      "kernels' tiles (more stages join as they land)",
      [](OpPassManager &pm, const GdnPipelineOptions &options) {
        buildGdnPipeline(pm, options);
      });
}
