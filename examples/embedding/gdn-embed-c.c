//===- gdn-embed-c.c - compile a layer from C through the C API -----------===//
//
// What a C program (or another language's bindings) does: load the gdn
// dialects into an MLIR context, parse a layer, run gdn-pipeline and print
// the C header of the CUDA kernels it compiles to.
//
// Usage: gdn-embed-c <layer.mlir>
//
//===----------------------------------------------------------------------===//

#include "gdn-c/Dialects.h"
#include "gdn-c/Passes.h"
#include "gdn-c/Translate.h"

#include <stdio.h>

// The output goes to stdout and the diagnostics to stderr; the C API's
// callbacks share one user-data pointer, so the stream is in the function.
static void printToStdout(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

static void printToStderr(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stderr);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <layer.mlir>\n", argv[0]);
    return 2;
  }

  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  gdnRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);

  int status = 1;
  MlirModule module = mlirModuleCreateParseFromFile(
      context, mlirStringRefCreateFromCString(argv[1]));
  if (!mlirModuleIsNull(module)) {
    if (mlirLogicalResultIsSuccess(gdnRunPassPipeline(
            module, mlirStringRefCreateFromCString("gdn-pipeline"),
            printToStderr, NULL)) &&
        mlirLogicalResultIsSuccess(gdnTranslateToCudaHeader(
            module, printToStdout, printToStderr, NULL)))
      status = 0;
    mlirModuleDestroy(module);
  }
  mlirContextDestroy(context);
  return status;
}
