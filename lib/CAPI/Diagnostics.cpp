//===- Diagnostics.cpp - diagnostics of a C API call to a callback --------===//
//
// Formats MLIR diagnostics the way gdn-opt prints them, so that messages a C
// caller receives read the same as the command line's.
//
//===----------------------------------------------------------------------===//

#include "Diagnostics.h"

#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gdn::capi;

static void printLocationPrefix(Location loc, llvm::raw_ostream &os) {
  // Name and call-site locations wrap the file location the user wants to see.
  if (auto file = loc->findInstanceOf<FileLineColLoc>()) {
    os << file.getFilename().getValue() << ':' << file.getLine() << ':'
       << file.getColumn() << ": ";
    return;
  }
  if (!isa<UnknownLoc>(loc))
    os << loc << ": ";
}

static StringRef severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  llvm_unreachable("unknown diagnostic severity");
}

std::string mlir::gdn::capi::formatDiagnostic(const Diagnostic &diag) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printLocationPrefix(diag.getLocation(), os);
  os << severityName(diag.getSeverity()) << ": " << diag << '\n';
  for (const Diagnostic &note : diag.getNotes()) {
    printLocationPrefix(note.getLocation(), os);
    os << "note: " << note << '\n';
  }
  return text;
}

DiagnosticForwarder::DiagnosticForwarder(MLIRContext *context,
                                         MlirStringCallback callback,
                                         void *userData)
    : context(context),
      handler(context, [this, callback, userData](Diagnostic &diag) {
        if (diag.getSeverity() == DiagnosticSeverity::Error)
          ++errorCount;
        if (!callback)
          return failure(); // Not handled: on to the context's handlers.
        std::string message = formatDiagnostic(diag);
        callback(wrap(StringRef(message)), userData);
        return success();
      }) {}

void DiagnosticForwarder::emitError(const llvm::Twine &message) {
  mlir::emitError(UnknownLoc::get(context)) << message;
}
