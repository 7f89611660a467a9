//===- Dialects.h - C API: the gdn dialects -----------------------*- C -*-===//
//
// Dialect handles for gdn, gdn_comm and gdn_kernel, in the style of MLIR's own
// mlir-c/Dialect/ headers, so that C programs and other languages' bindings can
// load the dialects into a context they own.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_C_DIALECTS_H
#define GDN_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

// mlirGetDialectHandle__gdn__(), __gdn_comm__() and __gdn_kernel__().
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Gdn, gdn);
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(GdnComm, gdn_comm);
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(GdnKernel, gdn_kernel);

/// Inserts every dialect a gdn program may use into `registry`: gdn, gdn_comm,
/// gdn_kernel and the upstream func, arith and tensor dialects (the same set
/// as mlir::gdn::registerAllGdnDialects and gdn-opt). Append the registry to a
/// context with mlirContextAppendDialectRegistry before parsing.
MLIR_CAPI_EXPORTED void gdnRegisterAllDialects(MlirDialectRegistry registry);

#ifdef __cplusplus
}
#endif

#endif // GDN_C_DIALECTS_H
