//===- Passes.cpp - C API: gdn passes and pipelines -----------------------===//
//
// Registration, the generated per-pass C functions, and gdnRunPassPipeline
// (see include/gdn-c/Passes.h).
//
//===----------------------------------------------------------------------===//

#include "gdn-c/Passes.h"

#include "Diagnostics.h"

#include "gdn/InitAllPasses.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::gdn;

// The generated definitions call register<Pass>() and create<Pass>()
// unqualified, hence the using-directive above.
#include "Passes.capi.cpp.inc"

void gdnRegisterAllPasses(void) {
  // A pipeline name may be registered once per process (MLIR asserts on a
  // second `gdn-pipeline`), and C callers cannot be expected to know whether
  // someone registered before them.
  static const bool registered = [] {
    registerAllGdnPasses();
    registerCanonicalizerPass();
    registerCSEPass();
    registerSymbolDCEPass();
    return true;
  }();
  (void)registered;
}

/// The text of `pipeline` without an outer `builtin.module(...)`: the pass
/// manager is already anchored on the module, and parsing the anchor as a
/// nested pipeline would run the passes on modules inside the module, that
/// is, silently on nothing.
static StringRef stripModuleAnchor(StringRef pipeline) {
  StringRef inner = pipeline.trim();
  if (inner.consume_front("builtin.module(") && inner.consume_back(")"))
    return inner;
  return pipeline.trim();
}

/// MLIR's pipeline parser separates its messages with blank lines, which
/// would split one diagnostic into what reads as several.
static std::string withoutBlankLines(StringRef text) {
  SmallVector<StringRef> lines;
  text.split(lines, '\n', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  return llvm::join(lines, "\n");
}

MlirLogicalResult gdnRunPassPipeline(MlirModule module, MlirStringRef pipeline,
                                     MlirStringCallback errorCallback,
                                     void *userData) {
  if (mlirModuleIsNull(module)) {
    if (errorCallback)
      errorCallback(wrap(StringRef(
                        "error: gdnRunPassPipeline was given a null module\n")),
                    userData);
    return mlirLogicalResultFailure();
  }
  gdnRegisterAllPasses();

  ModuleOp moduleOp = unwrap(module);
  MLIRContext *context = moduleOp.getContext();
  capi::DiagnosticForwarder diagnostics(context, errorCallback, userData);

  PassManager pm(context, ModuleOp::getOperationName());
  StringRef text = unwrap(pipeline);
  std::string parseErrors;
  llvm::raw_string_ostream parseErrorStream(parseErrors);
  if (failed(
          parsePassPipeline(stripModuleAnchor(text), pm, parseErrorStream))) {
    diagnostics.emitError("invalid pass pipeline '" + text +
                          "': " + withoutBlankLines(parseErrors));
    return mlirLogicalResultFailure();
  }

  if (failed(pm.run(moduleOp))) {
    if (!diagnostics.sawError())
      diagnostics.emitError("pass pipeline '" + text +
                            "' failed without a diagnostic");
    return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}
