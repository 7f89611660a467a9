//===- gdn-compile-fuzzer.cpp - libFuzzer over parse, verify, pipeline ----===//
//
// Each input is MLIR text. It goes where gdn-opt and gdn-translate take a
// user's program: the nesting check, the parser and verifier, then, when it
// verifies, one of the pass pipelines users run (chosen by the input's
// length, so each seed reaches all of them as it mutates) and the CUDA
// emitter. Diagnostics are the expected answer to bad input and are
// dropped; a crash, a sanitizer report or a hang is a bug.
//
//===----------------------------------------------------------------------===//

#include "gdn/InitAllDialects.h"
#include "gdn/InitAllPasses.h"
#include "gdn/Support/InputLimits.h"
#include "gdn/Target/CUDA.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <iterator>
#include <string>

using namespace mlir;

namespace {
/// The pipelines of gdn-opt's users, nested as gdn-opt nests their flags
/// (the SP, CP and layout passes run on functions).
constexpr const char *kPipelines[] = {
    "",
    "gdn-expand-layer,gdn-pipeline",
    "gdn-expand-layer,gdn-generate-backward,gdn-pipeline",
    "gdn-expand-layer,func.func(gdn-context-parallel{ranks=2 mode=chunkwise}),"
    "gdn-generate-backward,gdn-pipeline",
    "gdn-expand-layer,func.func(gdn-context-parallel{ranks=2 mode=headwise "
    "layout=zigzag},gdn-hoist-layouts),gdn-pipeline",
    "gdn-expand-layer,func.func(gdn-sequence-parallel{ranks=2},"
    "gdn-context-parallel{ranks=2 mode=auto}),gdn-pipeline",
};

/// Inputs beyond this many bytes are skipped: they only slow the search.
constexpr size_t kMaxInputBytes = 1 << 16;
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  gdn::registerAllGdnPasses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return 0;
  // MLIR's lexer reads up to a terminating NUL, as every file buffer has.
  const std::string input(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text = input;
  // The tools refuse such input before parsing; so does the fuzzer.
  if (gdn::checkNestingDepth(text, "input"))
    return 0;
  DialectRegistry registry;
  gdn::registerAllGdnDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler dropDiagnostics(
      &context, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module)
    return 0;
  PassManager pm(&context, ModuleOp::getOperationName());
  const char *pipeline = kPipelines[size % std::size(kPipelines)];
  if (failed(parsePassPipeline(pipeline, pm)))
    __builtin_trap(); // the pipelines above are fixed: a typo here is a bug
  if (failed(pm.run(*module)))
    return 0;
  std::string source, header;
  llvm::raw_string_ostream sourceStream(source), headerStream(header);
  (void)gdn::translateToCudaSource(*module, sourceStream);
  (void)gdn::translateToCudaHeader(*module, headerStream);
  return 0;
}
