//===- InitAllPasses.h - register every gdn pass ----------------*- C++ -*-===//
//
// One call for tools and embedding compilers to register the project's passes
// and pipelines with the global pass registry.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INITALLPASSES_H
#define GDN_INITALLPASSES_H

#include "gdn/Conversion/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Dialect/GdnComm/Transforms/Passes.h"
#include "gdn/Dialect/GdnKernel/Transforms/Passes.h"
#include "gdn/Pipeline/Pipeline.h"

namespace mlir::gdn {

/// Registers the passes of every level (include/gdn/Passes.td). The C API's
/// mlirRegisterGdnTransformsPasses() calls this.
inline void registerGdnTransformsPasses() {
  registerGdnPasses();
  registerGdnCommPasses();
  registerGdnConversionPasses();
  registerGdnKernelPasses();
}

/// Registers every pass and the `gdn-pipeline` pipeline.
inline void registerAllGdnPasses() {
  registerGdnTransformsPasses();
  registerGdnPipeline();
}

} // namespace mlir::gdn

#endif // GDN_INITALLPASSES_H
