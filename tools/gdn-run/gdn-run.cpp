//===- gdn-run.cpp - the reference interpreter driver ---------------------===//
//
// gdn-run runs gdn programs in float64 on simulated ranks and compares them
// (docs/interpreter.md). The tool is lib/Tools/gdn-run; this is its main.
//
//===----------------------------------------------------------------------===//

#include "gdn/Tools/gdn-run/GdnRunMain.h"

#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return mlir::gdn::gdnRunMain(argc, argv);
}
