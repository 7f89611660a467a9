//===- gdn-translate.cpp - translations out of gdn IR ---------------------===//
//
// mlir-translate for GDN programs: kernel-level IR to CUDA C++ and its header.
//
//===----------------------------------------------------------------------===//

#include "gdn/Target/CUDA.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::gdn::registerToCudaTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "GDN translation driver\n"));
}
