//===- GdnRun.h - the pieces gdn-run is built from --------------*- C++ -*-===//
//
// Private to lib/Tools/gdn-run: loading the programs, the .npy folders
// gdn-run reads and writes, what it prints, and the gradient check.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TOOLS_GDN_RUN_GDNRUN_H
#define GDN_LIB_TOOLS_GDN_RUN_GDNRUN_H

#include "gdn/Interpreter/Interpreter.h"
#include "gdn/Interpreter/Tensor.h"
#include "gdn/Tools/gdn-run/GdnRunMain.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::gdn::run {

/// Prints "gdn-run: error: MESSAGE" and returns the exit code 1.
int fail(const llvm::Twine &message);

//===- Programs (Program.cpp) ---------------------------------------------===//

/// A parsed program and the functions each rank runs.
struct Program {
  OwningOpRef<ModuleOp> module;
  std::vector<func::FuncOp> rankFunctions;
  std::string path;
};

/// Parses `path` and picks the function(s) of `entryList` (empty: the only
/// function, or @main), each checked to be runnable.
llvm::Expected<Program> loadProgram(MLIRContext &context, llvm::StringRef path,
                                    llvm::StringRef entryList);

/// One function per rank: an MPMD list as given, or the SPMD function
/// repeated for the ranks it needs (or `requested`, when not 0).
llvm::Error expandRanks(Program &program, int64_t requested);

/// --run-backward: the generated @F_forward and @F_backward of the entry
/// function F, one per rank like the entry's.
llvm::Expected<std::pair<std::vector<func::FuncOp>, std::vector<func::FuncOp>>>
findGeneratedBackward(Program &program);

//===- .npy folders (TensorFiles.cpp) -------------------------------------===//

/// argN.npy of `directory` (empty: none) for `function`'s arguments.
llvm::Expected<std::map<unsigned, interp::Tensor>>
loadProvidedInputs(llvm::StringRef directory, func::FuncOp function);

/// Writes `prefix`N.npy for each tensor into `directory` (created).
llvm::Error writeTensors(llvm::StringRef directory, llvm::StringRef prefix,
                         const std::vector<interp::Tensor> &tensors);

/// Converts inputs drawn for one program to another program's dtypes.
llvm::Expected<std::vector<interp::Tensor>>
convertInputs(const std::vector<interp::Tensor> &inputs, func::FuncOp function);

/// The cotangents of `function`'s results: cotangentN.npy from `directory`
/// where present, random (from `seed`) otherwise.
llvm::Expected<std::vector<interp::Tensor>>
loadCotangents(func::FuncOp function,
               const std::vector<interp::Tensor> &results, uint64_t seed,
               llvm::StringRef directory);

/// --check-gradients: gradN.npy of `directory` for every differentiable
/// argument.
llvm::Expected<std::vector<std::optional<interp::Tensor>>>
loadGradients(func::FuncOp function, const std::vector<interp::Tensor> &inputs,
              llvm::StringRef directory);

/// Writes gradN.npy for every argument that has a gradient.
llvm::Error
writeGradients(llvm::StringRef directory,
               const std::vector<std::optional<interp::Tensor>> &gradients);

//===- Rank files (RankFiles.cpp) -----------------------------------------===//

/// --rank-files: every rank's own arguments and results (and, for a
/// generated backward, cotangents and gradients), with where each rank's
/// share of a result or gradient sits in the global tensor, so that a
/// P-rank run elsewhere (the GPU harness) can be checked rank by rank and
/// gathered. A value with a layout goes to DIR/rank<r>/; one without (the
/// same on every rank: weights, their gradients) once to DIR/all/.
/// `numResults` results of each rank's list are written (a generated
/// forward's saved values are not results); `globalResults` and `gradients`
/// give the global shapes.
llvm::Error
writeRankFiles(llvm::StringRef directory, func::FuncOp function,
               const interp::RankViews &views, size_t numResults,
               const std::vector<interp::Tensor> &globalResults,
               const std::vector<std::optional<interp::Tensor>> &gradients,
               const std::vector<interp::Tensor> &globalInputs);

//===- What gdn-run prints (Reports.cpp) ----------------------------------===//

/// "WHAT #INDEX: shape  rms = ..  max_abs = ..", and with `printValues`
/// every value.
void printSummary(const interp::Tensor &tensor, unsigned index,
                  llvm::StringRef what, bool printValues);

/// A summary line per gradient, or why an argument has none.
void printGradientSummaries(
    func::FuncOp function,
    const std::vector<std::optional<interp::Tensor>> &gradients,
    bool printValues);

/// Prints a comparison line and returns whether the relative RMS error is
/// at most `rtol`.
bool printComparison(llvm::StringRef what, unsigned index,
                     const interp::Tensor &actual,
                     const interp::Tensor &expected, double rtol);

/// `[i, j, k]`: the multi-index of row-major entry `index` of `shape`.
std::string describeEntry(llvm::ArrayRef<int64_t> shape, int64_t index);

//===- The gradient check (GradientCheck.cpp) -----------------------------===//

/// --gradcheck: prints one line per argument and fails on the first
/// argument whose worst entry exceeds the tolerance. Returns the exit code.
int runGradientCheck(const Program &program,
                     const std::vector<interp::Tensor> &inputs,
                     const interp::InterpreterOptions &interpreterOptions,
                     const GdnRunOptions &options);

} // namespace mlir::gdn::run

#endif // GDN_LIB_TOOLS_GDN_RUN_GDNRUN_H
