//===- Dialects.cpp - C API: the gdn dialects -----------------------------===//
//
// Dialect handles for C callers (see include/gdn-c/Dialects.h).
//
//===----------------------------------------------------------------------===//

#include "gdn-c/Dialects.h"

#include "gdn/InitAllDialects.h"

#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Gdn, gdn, mlir::gdn::GdnDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(GdnComm, gdn_comm,
                                      mlir::gdn::comm::GdnCommDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(GdnKernel, gdn_kernel,
                                      mlir::gdn::kernel::GdnKernelDialect)

void gdnRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::gdn::registerAllGdnDialects(*unwrap(registry));
}
