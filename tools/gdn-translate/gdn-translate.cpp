//===- gdn-translate.cpp - translations out of gdn IR ---------------------===//
//
// mlir-translate for GDN programs: kernel-level IR to CUDA C++ and its header.
//
//===----------------------------------------------------------------------===//

#include "gdn/Support/InputLimits.h"
#include "gdn/Target/CUDA.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "llvm/ADT/StringRef.h"

/// The input file among the arguments, as mlirTranslateMain will take it:
/// the one positional argument (standard input, "-", when there is none).
/// Options are expected in `--name=value` form but for `-o FILE`; a value
/// given as a separate word would be taken for the input, which the check
/// then reads instead (it refuses nothing the parser would accept).
static llvm::StringRef findInputArgument(int argc, char **argv) {
  llvm::StringRef input = "-";
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--help" || arg == "-help" || arg == "--version")
      return ""; // nothing is read
    if (arg == "--") {
      if (i + 1 < argc)
        input = argv[i + 1];
      break;
    }
    if (arg == "-o" || arg == "--o") {
      ++i;
      continue;
    }
    if (arg == "-" || !arg.starts_with("-"))
      input = arg;
  }
  return input;
}

int main(int argc, char **argv) {
  // Input nested past what the parser's recursion survives is refused first.
  if (!mlir::gdn::checkToolInput(findInputArgument(argc, argv),
                                 "gdn-translate"))
    return 1;
  mlir::gdn::registerToCudaTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "GDN translation driver\n"));
}
