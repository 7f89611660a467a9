//===- Translate.h - C API: kernel-level IR to CUDA C++ -----------*- C -*-===//
//
// The translations of gdn-translate --gdn-to-cuda and --gdn-to-cuda-header, for
// embedders that compile a layer and hand the .cu to nvcc themselves.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_C_TRANSLATE_H
#define GDN_C_TRANSLATE_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Prints the CUDA source (.cu) of `module`: one specialised kernel and one
/// `extern "C"` entry point per gdn_kernel op, and a whole-function entry
/// point where a function consists of kernels only. Run gdn-pipeline first:
/// ops above the kernel level get no code (the source says which).
///
/// On success the whole source is passed to `outputCallback` in one call; on
/// failure nothing is, and every diagnostic goes to
/// `errorCallback` as in gdnRunPassPipeline (to the context's handlers when
/// it is NULL).
MLIR_CAPI_EXPORTED MlirLogicalResult
gdnTranslateToCuda(MlirModule module, MlirStringCallback outputCallback,
                   MlirStringCallback errorCallback, void *userData);

/// Prints the C header declaring the entry points gdnTranslateToCuda
/// defines; callbacks as in gdnTranslateToCuda.
MLIR_CAPI_EXPORTED MlirLogicalResult
gdnTranslateToCudaHeader(MlirModule module, MlirStringCallback outputCallback,
                         MlirStringCallback errorCallback, void *userData);

#ifdef __cplusplus
}
#endif

#endif // GDN_C_TRANSLATE_H
