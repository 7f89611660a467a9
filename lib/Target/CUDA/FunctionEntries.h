//===- FunctionEntries.h - whole-function entry points ----------*- C++ -*-===//
//
// A function whose ops all have a CUDA lowering (kernels, gdnrt calls,
// copies) gets C entry points that run it whole: a signature table, the
// workspace and result-shape queries, the function itself on a gdnrt
// context, and the status check. EmitCUDA.cpp plans each function and calls
// these printers.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TARGET_CUDA_FUNCTIONENTRIES_H
#define GDN_LIB_TARGET_CUDA_FUNCTIONENTRIES_H

#include "KernelPrinters.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::gdn::cuda {

/// How one function is printed.
struct FunctionPlan {
  mutable func::FuncOp function; // op handles are const-incorrect
  std::string prefix;            ///< gdn_<function>
  std::vector<KernelContext> kernels;
  /// What the whole-function entry point runs, in program order: kernel ops
  /// and runtime calls (RuntimeCalls.h).
  std::vector<Operation *> steps;
  /// Why the function has no whole-function entry point; empty if it has one.
  std::string notEmittable;
};

/// Prints the definitions of the whole-function entry points (.cu).
void printFunctionEntries(const FunctionPlan &plan, llvm::raw_ostream &os);

/// Prints the kernel prototypes and, when the function has them, the
/// whole-function prototypes (.h); otherwise a comment saying why not.
void printFunctionPrototypes(const FunctionPlan &plan, llvm::raw_ostream &os);

} // namespace mlir::gdn::cuda

#endif // GDN_LIB_TARGET_CUDA_FUNCTIONENTRIES_H
