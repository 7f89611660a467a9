//===- Translate.cpp - C API: kernel-level IR to CUDA C++ -----------------===//
//
// gdnTranslateToCuda and gdnTranslateToCudaHeader (see
// include/gdn-c/Translate.h).
//
//===----------------------------------------------------------------------===//

#include "gdn-c/Translate.h"

#include "Diagnostics.h"

#include "gdn/Target/CUDA.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

using ModulePrinter = LogicalResult (*)(ModuleOp, llvm::raw_ostream &);

/// Runs `print` on `module` into a buffer and hands the buffer over only on
/// success, so that a caller writing a file never gets half a translation.
static MlirLogicalResult translate(StringRef entryPoint, ModulePrinter print,
                                   MlirModule module,
                                   MlirStringCallback outputCallback,
                                   MlirStringCallback errorCallback,
                                   void *userData) {
  if (mlirModuleIsNull(module)) {
    if (errorCallback) {
      std::string message =
          ("error: " + entryPoint + " was given a null module\n").str();
      errorCallback(wrap(StringRef(message)), userData);
    }
    return mlirLogicalResultFailure();
  }
  ModuleOp moduleOp = unwrap(module);
  gdn::capi::DiagnosticForwarder diagnostics(moduleOp.getContext(),
                                             errorCallback, userData);
  // The emitter assumes verified IR; a C caller may have edited the module
  // since it was parsed.
  if (failed(verify(moduleOp)))
    return mlirLogicalResultFailure();

  std::string text;
  llvm::raw_string_ostream os(text);
  if (failed(print(moduleOp, os))) {
    if (!diagnostics.sawError())
      diagnostics.emitError(entryPoint + " failed without a diagnostic");
    return mlirLogicalResultFailure();
  }
  if (outputCallback)
    outputCallback(wrap(StringRef(text)), userData);
  return mlirLogicalResultSuccess();
}

MlirLogicalResult gdnTranslateToCuda(MlirModule module,
                                     MlirStringCallback outputCallback,
                                     MlirStringCallback errorCallback,
                                     void *userData) {
  return translate("gdnTranslateToCuda", gdn::translateToCudaSource, module,
                   outputCallback, errorCallback, userData);
}

MlirLogicalResult gdnTranslateToCudaHeader(MlirModule module,
                                           MlirStringCallback outputCallback,
                                           MlirStringCallback errorCallback,
                                           void *userData) {
  return translate("gdnTranslateToCudaHeader", gdn::translateToCudaHeader,
                   module, outputCallback, errorCallback, userData);
}
