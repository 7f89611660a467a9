//===- InitAllPasses.h - register every gdn pass ----------------*- C++ -*-===//
//
// One call for tools and embedding compilers to register the project's passes
// and pipelines with the global pass registry.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INITALLPASSES_H
#define GDN_INITALLPASSES_H

#include "gdn/Transforms/Passes.h"

namespace mlir::gdn {

/// Registers every pass of Passes.td and the `gdn-pipeline` pipeline.
inline void registerAllGdnPasses() {
  registerGdnTransformsPasses();
  registerGdnPipeline();
}

} // namespace mlir::gdn

#endif // GDN_INITALLPASSES_H
