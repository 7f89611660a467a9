//===- Diagnostics.h - C API diagnostics to a callback ----------*- C++ -*-===//
//
// The C API's entry points report problems through an MlirStringCallback
// rather than through whatever handlers the context has: a C caller gets
// each message as text it can log or show, without registering a handler of
// its own around every call. This helper does the routing for one call.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_CAPI_DIAGNOSTICS_H
#define GDN_LIB_CAPI_DIAGNOSTICS_H

#include "mlir-c/Support.h"
#include "mlir/IR/Diagnostics.h"

#include <string>

namespace mlir::gdn::capi {

/// Formats `diag` as one self-contained message: "file:line:col: error: ..."
/// (no location part for an unknown location), then one line per note.
std::string formatDiagnostic(const Diagnostic &diag);

/// While alive, passes every diagnostic emitted in `context` to `callback` as
/// one formatted message, and counts the errors. With a null callback it only
/// counts, and the diagnostics go on to the context's other handlers.
class DiagnosticForwarder {
public:
  DiagnosticForwarder(MLIRContext *context, MlirStringCallback callback,
                      void *userData);
  DiagnosticForwarder(const DiagnosticForwarder &) = delete;
  DiagnosticForwarder &operator=(const DiagnosticForwarder &) = delete;

  /// Reports `message` as an error with no location, through the same route
  /// as the diagnostics.
  void emitError(const llvm::Twine &message);

  /// Whether at least one error went through since construction; an entry
  /// point that fails with none adds its own, so that failure always comes
  /// with a message.
  bool sawError() const { return errorCount > 0; }

private:
  MLIRContext *context;
  unsigned errorCount = 0;
  ScopedDiagnosticHandler handler;
};

} // namespace mlir::gdn::capi

#endif // GDN_LIB_CAPI_DIAGNOSTICS_H
