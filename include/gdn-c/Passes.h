//===- Passes.h - C API: gdn passes and pipelines -----------------*- C -*-===//
//
// Registration of the gdn passes, the passes one by one as MlirPass objects
// (generated from Passes.td), and a one-call driver that runs a textual
// pipeline on a module and reports every diagnostic through a callback, for
// embedders that do not want to assemble an MlirPassManager themselves.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_C_PASSES_H
#define GDN_C_PASSES_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Registers every gdn pass, the `gdn-pipeline` pipeline and the upstream
/// canonicalize, cse and symbol-dce passes (what gdn-opt offers) with the
/// global pass registry, so that textual pipelines can name them. Safe to call
/// more than once; gdnRunPassPipeline calls it itself.
MLIR_CAPI_EXPORTED void gdnRegisterAllPasses(void);

/// Parses `pipeline` and runs it on `module`, in place.
///
/// `pipeline` is MLIR's textual pipeline, as gdn-opt's --pass-pipeline takes
/// it, with or without the `builtin.module(...)` anchor: "gdn-pipeline" and
/// "builtin.module(gdn-pipeline)" are the same. Passes that run on functions
/// (gdn-context-parallel, gdn-sequence-parallel, gdn-hoist-layouts) are
/// nested explicitly, as in
/// "gdn-expand-layer,func.func(gdn-context-parallel{ranks=4 mode=chunkwise})".
///
/// Every error, warning and remark, including a pipeline that does not parse,
/// is passed to `errorCallback` as one complete message per call
/// ("file:line:col: error: ...", notes on the following lines, a final
/// newline). With a NULL callback they go to the context's diagnostic
/// handlers instead. Returns failure when the pipeline does not parse, a pass
/// fails, or the result does not verify; the module may then be half
/// transformed.
MLIR_CAPI_EXPORTED MlirLogicalResult
gdnRunPassPipeline(MlirModule module, MlirStringRef pipeline,
                   MlirStringCallback errorCallback, void *userData);

#ifdef __cplusplus
}
#endif

// Generated from Passes.td: mlirRegisterGdnTransformsPasses(), and for each
// pass mlirCreateGdnTransforms<Pass>() (an MlirPass for
// mlirPassManagerAddOwnedPass) and mlirRegisterGdnTransforms<Pass>().
#include "gdn-c/Passes.capi.h.inc"

#endif // GDN_C_PASSES_H
