//===- gdn-opt.cpp - the gdn optimizer driver -----------------------------===//
//
// mlir-opt for GDN programs: parses, verifies, runs gdn passes and pipelines,
// prints. The registry is explicit: the project's dialects, the upstream
// dialects gdn programs are written in, and the few upstream passes that are
// useful around ours.
//
//===----------------------------------------------------------------------===//

#include "gdn/InitAllDialects.h"
#include "gdn/InitAllPasses.h"
#include "gdn/Support/InputLimits.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::gdn::registerAllGdnPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();

  mlir::DialectRegistry registry;
  mlir::gdn::registerAllGdnDialects(registry);
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "GDN compiler optimizer driver\n", registry);
  // Input nested past what the parser's recursion survives is refused first
  // (not read at all when only dialects or passes are listed).
  const auto config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (!config.shouldShowDialects() && !config.shouldListPasses() &&
      !mlir::gdn::checkToolInput(input, "gdn-opt"))
    return 1;
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}
