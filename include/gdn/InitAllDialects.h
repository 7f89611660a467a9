//===- InitAllDialects.h - register every gdn dialect -----------*- C++ -*-===//
//
// One call for tools and embedding compilers to register the project's
// dialects (and the upstream ones its IR uses) into a registry.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INITALLDIALECTS_H
#define GDN_INITALLDIALECTS_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::gdn {

/// Registers gdn, gdn_comm and the upstream dialects gdn programs are written
/// in (func for functions, arith for constants, tensor for glue).
inline void registerAllGdnDialects(DialectRegistry &registry) {
  registry.insert<GdnDialect, comm::GdnCommDialect, kernel::GdnKernelDialect,
                  func::FuncDialect,
                  arith::ArithDialect, tensor::TensorDialect>();
}

} // namespace mlir::gdn

#endif // GDN_INITALLDIALECTS_H
