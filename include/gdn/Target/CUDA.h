//===- CUDA.h - translation of kernel-level IR to CUDA C++ ------*- C++ -*-===//
//
// gdn-translate --gdn-to-cuda prints a .cu with one specialised kernel and one
// C entry point per gdn_kernel op, plus a whole-function entry point where a
// function consists of kernels only; --gdn-to-cuda-header prints the matching
// .h. The emitter only prints: every decision is already in the IR.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TARGET_CUDA_H
#define GDN_TARGET_CUDA_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::gdn {

/// Prints the CUDA source for every function of `module`.
LogicalResult translateToCudaSource(ModuleOp module, llvm::raw_ostream &os);

/// Prints the C header declaring the entry points of translateToCudaSource.
LogicalResult translateToCudaHeader(ModuleOp module, llvm::raw_ostream &os);

/// Registers both translations with mlir-translate's registry.
void registerToCudaTranslations();

} // namespace mlir::gdn

#endif // GDN_TARGET_CUDA_H
