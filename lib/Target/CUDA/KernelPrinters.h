//===- KernelPrinters.h - printing one gdn_kernel op ------------*- C++ -*-===//
//
// Each kernel op prints three things: a Config struct (its specialization),
// the C entry point that checks tensors and launches the kernel, and the
// shapes of its results in terms of its operands' shapes. The function-level
// emitter (EmitCUDA.cpp) strings these together.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TARGET_CUDA_KERNELPRINTERS_H
#define GDN_LIB_TARGET_CUDA_KERNELPRINTERS_H

#include "mlir/IR/Operation.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::gdn::cuda {

/// A tensor shape as C++ expressions, one per dimension.
using ShapeExprs = std::vector<std::string>;

/// `__nv_bfloat16`, `__half`, `float` or `double`.
std::string getDeviceType(Type elementType);
/// `GDN_BF16`, ... for the ABI.
std::string getAbiDtype(Type elementType);

/// Everything the printers need to know about one kernel op.
struct KernelContext {
  Operation *op;
  std::string entryName;  ///< C symbol of the entry point
  std::string configName; ///< C++ name of its Config struct
};

/// The operands the entry point takes, in order (the packing excluded).
SmallVector<Value> getKernelTensorOperands(Operation *op);

/// Prints the banner comment and the Config struct.
void printKernelConfig(const KernelContext &kernel, llvm::raw_ostream &os);

/// Prints the `extern "C"` entry point definition.
void printKernelEntry(const KernelContext &kernel, llvm::raw_ostream &os);

/// Prints the entry point's prototype (for the header), without a `;`.
void printKernelPrototype(const KernelContext &kernel, llvm::raw_ostream &os);

/// The shapes of the op's results given its tensor operands' shapes and,
/// for kernels over a packing, the packing's sequence count expression.
std::vector<ShapeExprs> getResultShapes(Operation *op,
                                        llvm::ArrayRef<ShapeExprs> operands,
                                        const std::string &seqs);

/// True for ops that take a !gdn.packing.
bool usesPacking(Operation *op);

/// True for ops whose entry takes a `void *scratch` of
/// `<entry>_scratch_bytes(packing)` bytes (the delta rule's chunk tiles).
bool usesScratch(Operation *op);

} // namespace mlir::gdn::cuda

#endif // GDN_LIB_TARGET_CUDA_KERNELPRINTERS_H
