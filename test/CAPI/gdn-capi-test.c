//===- gdn-capi-test.c - the C API, from C --------------------------------===//
//
// A C program (no C++) that drives the compiler through include/gdn-c and
// MLIR's core C API the way an embedder would, and prints what each step
// gives so that capi.test can check it: dialect handles, a layer parsed and
// compiled by gdn-pipeline (also with its f32-projections option), a pass
// created as an MlirPass, pipelines that fail
// (a pass that does not exist, an option a pass does not take, a function pass
// not nested, a pass that refuses the IR) and one that works after them, and
// the CUDA translation and its refusal.
//
// Usage: gdn-capi-test <layer.mlir>
//
//===----------------------------------------------------------------------===//

#include "gdn-c/Dialects.h"
#include "gdn-c/Passes.h"
#include "gdn-c/Translate.h"

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void printToStdout(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

// Error messages are printed with a prefix so that the checks can tell them
// from the module text, and counted so that a failure without one shows.
struct ErrorLog {
  int count;
};

static void printError(MlirStringRef text, void *userData) {
  ++((struct ErrorLog *)userData)->count;
  fputs("[error callback] ", stdout);
  fwrite(text.data, 1, text.length, stdout);
}

static MlirContext createContext(void) {
  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  gdnRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);
  return context;
}

/// The module in `path`; exits with a message when it does not parse.
static MlirModule parseFile(MlirContext context, const char *path) {
  MlirModule module = mlirModuleCreateParseFromFile(
      context, mlirStringRefCreateFromCString(path));
  if (mlirModuleIsNull(module)) {
    printf("cannot parse %s\n", path);
    mlirContextDestroy(context);
    exit(1);
  }
  return module;
}

static void testDialectHandles(void) {
  printf("== dialect handles\n");
  MlirDialectHandle handles[] = {mlirGetDialectHandle__gdn__(),
                                 mlirGetDialectHandle__gdn_comm__(),
                                 mlirGetDialectHandle__gdn_kernel__()};
  MlirContext context = mlirContextCreate();
  for (size_t i = 0; i < sizeof(handles) / sizeof(handles[0]); ++i) {
    MlirDialect dialect = mlirDialectHandleLoadDialect(handles[i], context);
    MlirStringRef ns = mlirDialectGetNamespace(dialect);
    printf("loaded %.*s\n", (int)ns.length, ns.data);
  }
  mlirContextDestroy(context);
}

static void runPipeline(MlirModule module, const char *pipeline) {
  struct ErrorLog errors = {0};
  MlirLogicalResult result = gdnRunPassPipeline(
      module, mlirStringRefCreateFromCString(pipeline), printError, &errors);
  printf("pipeline '%s': %s, %d error message(s)\n", pipeline,
         mlirLogicalResultIsSuccess(result) ? "success" : "failure",
         errors.count);
}

static void testLayer(const char *path) {
  printf("== layer\n");
  MlirContext context = createContext();
  MlirModule module = parseFile(context, path);

  // The pipeline string can name anything gdnRegisterAllPasses registered,
  // with or without the module anchor.
  runPipeline(module, "builtin.module(gdn-pipeline)");
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");

  printf("== CUDA source\n");
  struct ErrorLog errors = {0};
  MlirLogicalResult result =
      gdnTranslateToCuda(module, printToStdout, printError, &errors);
  printf("translation: %s, %d error message(s)\n",
         mlirLogicalResultIsSuccess(result) ? "success" : "failure",
         errors.count);

  printf("== CUDA header\n");
  result = gdnTranslateToCudaHeader(module, printToStdout, printError, &errors);
  printf("translation: %s, %d error message(s)\n",
         mlirLogicalResultIsSuccess(result) ? "success" : "failure",
         errors.count);

  mlirModuleDestroy(module);
  mlirContextDestroy(context);
}

// The generated per-pass functions, in a pass manager of MLIR's C API.
static void testPassObjects(const char *path) {
  printf("== pass objects\n");
  MlirContext context = createContext();
  MlirModule module = parseFile(context, path);
  MlirPassManager pm = mlirPassManagerCreate(context);
  mlirPassManagerAddOwnedPass(pm, mlirCreateGdnTransformsGdnExpandLayer());
  MlirLogicalResult result =
      mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  printf("gdn-expand-layer: %s\n",
         mlirLogicalResultIsSuccess(result) ? "success" : "failure");
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
}

// gdn-pipeline's option through the C API: the projections that feed the
// conv and the gate keep f32 outputs (docs/precision.md).
static void testPipelineOption(const char *path) {
  printf("== pipeline option\n");
  MlirContext context = createContext();
  MlirModule module = parseFile(context, path);
  runPipeline(module, "gdn-pipeline{f32-projections=true}");
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
}

// A gated RMSNorm over a dynamic head count: valid IR that the CUDA emitter
// refuses, since a kernel's head count is part of its specialisation.
static const char *dynamicHeads =
    "func.func @dynamic_heads(%o: tensor<?x?x128xbf16>, %z: "
    "tensor<?x?x128xbf16>, %w: tensor<128xbf16>) -> tensor<?x?x128xbf16> {\n"
    "  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, "
    "threads = 256 : i64} : (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, "
    "tensor<128xbf16>) -> tensor<?x?x128xbf16>\n"
    "  return %y : tensor<?x?x128xbf16>\n"
    "}\n";

static void testErrors(const char *path) {
  printf("== errors\n");
  MlirContext context = createContext();
  MlirModule module = parseFile(context, path);
  runPipeline(module, "gdn-expand-layer,gdn-no-such-pass");
  runPipeline(module, "gdn-fuse{tile=7}");
  runPipeline(module, "gdn-context-parallel{ranks=2}");
  runPipeline(module, "func.func(gdn-context-parallel{ranks=2})");
  // A failed pipeline leaves the module usable: the next one still runs.
  runPipeline(module,
              "gdn-expand-layer,func.func(gdn-context-parallel{ranks=2})");
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");
  mlirModuleDestroy(module);

  MlirModule kernels = mlirModuleCreateParse(
      context, mlirStringRefCreateFromCString(dynamicHeads));
  struct ErrorLog errors = {0};
  MlirLogicalResult result =
      gdnTranslateToCuda(kernels, printToStdout, printError, &errors);
  printf("translation: %s, %d error message(s)\n",
         mlirLogicalResultIsSuccess(result) ? "success" : "failure",
         errors.count);
  mlirModuleDestroy(kernels);

  // What mlirModuleCreateParse returns for text that does not parse.
  MlirModule null = {NULL};
  errors.count = 0;
  result =
      gdnRunPassPipeline(null, mlirStringRefCreateFromCString("gdn-pipeline"),
                         printError, &errors);
  printf("null module: %s, %d error message(s)\n",
         mlirLogicalResultIsSuccess(result) ? "success" : "failure",
         errors.count);
  mlirContextDestroy(context);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <layer.mlir>\n", argv[0]);
    return 2;
  }
  gdnRegisterAllPasses();
  gdnRegisterAllPasses(); // Registering twice is harmless.
  testDialectHandles();
  testLayer(argv[1]);
  testPassObjects(argv[1]);
  testPipelineOption(argv[1]);
  testErrors(argv[1]);
  return 0;
}
