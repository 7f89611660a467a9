//===- gdn-embed.cpp - compile a layer from C++ through the libraries -----===//
//
// What a C++ compiler embedding GDN does: register the dialects into its own
// context and the passes into the registry, parse a layer, run gdn-pipeline
// and look at the kernel ops that come out. Prints one line per kernel op.
//
// Usage: gdn-embed <layer.mlir>
//
//===----------------------------------------------------------------------===//

#include "gdn/InitAllDialects.h"
#include "gdn/InitAllPasses.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: " << argv[0] << " <layer.mlir>\n";
    return 2;
  }

  mlir::DialectRegistry registry;
  mlir::gdn::registerAllGdnDialects(registry);
  mlir::gdn::registerAllGdnPasses();
  mlir::MLIRContext context(registry);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1; // The parser has reported why.

  // By name, through the registry, as a driver taking a pipeline option
  // would; mlir::gdn::buildGdnPipeline(pm) adds the same passes directly.
  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::parsePassPipeline("gdn-pipeline", pm, llvm::errs())) ||
      mlir::failed(pm.run(*module)))
    return 1;

  module->walk([](mlir::Operation *op) {
    if (!llvm::isa<mlir::gdn::kernel::GdnKernelDialect>(op->getDialect()))
      return;
    llvm::outs() << "kernel " << op->getName() << " in @"
                 << op->getParentOfType<mlir::func::FuncOp>().getSymName()
                 << '\n';
  });
  return 0;
}
