//===- Registration.cpp - the CUDA translations ---------------------------===//
//
// Registers --gdn-to-cuda and --gdn-to-cuda-header with mlir-translate's
// registry, with the dialects kernel-level programs are written in.
//
//===----------------------------------------------------------------------===//

#include "gdn/Target/CUDA.h"

#include "gdn/InitAllDialects.h"

#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;

void mlir::gdn::registerToCudaTranslations() {
  static TranslateFromMLIRRegistration source(
      "gdn-to-cuda", "Print kernel-level GDN IR as CUDA C++ (.cu)",
      [](Operation *op, llvm::raw_ostream &os) {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return LogicalResult(op->emitError("expected a module"));
        return translateToCudaSource(module, os);
      },
      [](DialectRegistry &registry) { registerAllGdnDialects(registry); });
  static TranslateFromMLIRRegistration header(
      "gdn-to-cuda-header",
      "Print the C header of the entry points --gdn-to-cuda defines",
      [](Operation *op, llvm::raw_ostream &os) {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return LogicalResult(op->emitError("expected a module"));
        return translateToCudaHeader(module, os);
      },
      [](DialectRegistry &registry) { registerAllGdnDialects(registry); });
}
