//===- gdn-run-fuzzer.cpp - libFuzzer over gdn-run's inputs ---------------===//
//
// Each input is what a user hands gdn-run besides the program: the bytes of
// an .npy file of offsets (read, checked, and, when valid, run), or, when
// the first byte is '#', a comma-separated --seqlens / --slots pair
// ("#5,0,64;8,8,64"). Either feeds the input generator and the interpreter
// on a small padded program (a conv and a delta rule), the paths that size
// tensors and validate packings. Errors
// are the expected answer; a crash, a sanitizer report, an allocation past
// the fuzzer's limit or a hang is a bug.
//
//===----------------------------------------------------------------------===//

#include "gdn/InitAllDialects.h"
#include "gdn/Interpreter/InputGenerator.h"
#include "gdn/Interpreter/Interpreter.h"
#include "gdn/Interpreter/Npy.h"
#include "gdn/Support/PackingValidation.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

using namespace mlir;
using namespace mlir::gdn::interp;

namespace {
/// A padded pack: the conv reads cu_padded's slots, the delta rule the real
/// lengths. Small head sizes keep one run well under a millisecond.
constexpr const char *kProgram = R"mlir(
func.func @main(%x: tensor<?x8xf64>, %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>,
                %w: tensor<8x4xf64>, %g: tensor<?x2xf64>, %beta: tensor<?x2xf64>)
    -> (tensor<?x2x2xf64>, tensor<?x2x2x2xf64>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %c = gdn.causal_conv1d %x, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x8xf64>, tensor<8x4xf64>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> tensor<?x8xf64>
  %q, %k, %v = gdn.split_qkv %c
      : tensor<?x8xf64> -> tensor<?x1x2xf64>, tensor<?x1x2xf64>, tensor<?x2x2xf64>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x1x2xf64>, tensor<?x1x2xf64>, tensor<?x2x2xf64>, tensor<?x2xf64>,
         tensor<?x2xf64>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> (tensor<?x2x2xf64>, tensor<?x2x2x2xf64>)
  return %o, %s : tensor<?x2x2xf64>, tensor<?x2x2x2xf64>
}
)mlir";

/// Packs beyond this many rows are skipped (valid, but slow to interpret).
constexpr int64_t kMaxRows = 4096;

/// Parses "a,b,c" into non-negative integers; false on anything else.
bool parseLengths(llvm::StringRef text, std::vector<int64_t> &out) {
  llvm::SmallVector<llvm::StringRef> pieces;
  text.split(pieces, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef piece : pieces) {
    int64_t value;
    if (piece.trim().getAsInteger(10, value) || value < 0)
      return false;
    out.push_back(value);
  }
  return !out.empty();
}

MLIRContext &getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    gdn::registerAllGdnDialects(registry);
    auto *made = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    made->loadAllAvailableDialects();
    return made;
  }();
  return *context;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kProgram, &getContext());
  if (!module)
    __builtin_trap(); // the fixed program must parse
  func::FuncOp main = *module->getOps<func::FuncOp>().begin();

  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  GeneratorOptions options;
  std::map<unsigned, Tensor> provided;
  if (bytes.consume_front("#")) {
    auto [lengthsText, slotsText] = bytes.split(';');
    std::vector<int64_t> lengths, slots;
    if (!parseLengths(lengthsText, lengths))
      return 0;
    options.seqlens = lengths;
    if (!slotsText.empty()) {
      if (!parseLengths(slotsText, slots))
        return 0;
      options.slots = slots;
    }
  } else {
    llvm::Expected<Tensor> offsets = parseNpy(bytes, "arg1.npy");
    if (!offsets) {
      llvm::consumeError(offsets.takeError());
      return 0;
    }
    provided.emplace(1, std::move(*offsets));
  }
  // Valid packs beyond kMaxRows only cost time: skip them before drawing.
  // Packs past the int32 limit stay: the generator must refuse them before
  // it allocates anything.
  auto tooSlow = [](int64_t rows) {
    return rows > kMaxRows && rows <= gdn::kMaxPackedTokens;
  };
  for (const std::optional<std::vector<int64_t>> &list :
       {options.seqlens, options.slots}) {
    int64_t rows = 0; // saturates past the int32 limit
    for (int64_t length : list ? *list : std::vector<int64_t>())
      rows = std::min<int64_t>(rows + std::min<int64_t>(length, INT64_MAX / 2),
                               gdn::kMaxPackedTokens + int64_t(1));
    if (tooSlow(rows))
      return 0;
  }
  if (auto it = provided.find(1);
      it != provided.end() &&
      (it->second.getNumElements() > kMaxRows ||
       llvm::any_of(it->second.values(), [&](double v) {
         // NaN, fractions and huge values stay: the checks are under test.
         // Clamped on both sides: converting a double outside int64's
         // range is undefined.
         return std::isfinite(v) && tooSlow(static_cast<int64_t>(
                                        std::clamp(v, -1e18, 1e18)));
       })))
    return 0;

  llvm::Expected<std::vector<Tensor>> inputs =
      generateGlobalInputs(main, /*ranks=*/1, options, provided);
  if (!inputs) {
    llvm::consumeError(inputs.takeError());
    return 0;
  }
  llvm::Expected<std::vector<Tensor>> results =
      runOnGlobalInputs({main}, *inputs, InterpreterOptions());
  if (!results)
    llvm::consumeError(results.takeError());
  return 0;
}
