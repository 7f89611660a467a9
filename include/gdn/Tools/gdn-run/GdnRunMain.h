//===- GdnRunMain.h - gdn-run as a library ----------------------*- C++ -*-===//
//
// gdn-run, the float64 reference interpreter's driver, as a function a main
// calls (tools/gdn-run) and the options it runs with. The pieces it is built
// from live beside its implementation in lib/Tools/gdn-run.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TOOLS_GDN_RUN_GDNRUNMAIN_H
#define GDN_TOOLS_GDN_RUN_GDNRUNMAIN_H

#include "gdn/Interpreter/Interpreter.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::gdn {

/// Everything gdn-run's command line sets (docs/interpreter.md).
struct GdnRunOptions {
  /// The program, and with `compare` the reference program.
  std::vector<std::string> files;
  bool compare = false;
  /// Function(s) to run: one, or one per rank separated by commas.
  std::string entry, compareEntry;
  /// Simulated ranks; 0 asks the program's layouts and groups.
  int64_t ranks = 0;
  bool ranksGiven = false;
  /// Generated inputs: seed, real lengths and padded slots (empty: drawn).
  uint64_t seed = 0;
  std::vector<int64_t> seqlens, slots;
  /// Folders of argN.npy to use, to save the inputs in, and of results.
  std::string inputsDir, saveInputsDir, outputsDir;
  bool printValues = false;
  interp::DeltaRuleAlgorithm deltaRule = interp::DeltaRuleAlgorithm::Recurrent;
  std::optional<interp::DeltaRuleAlgorithm> compareDeltaRule;
  /// Gradients: the interpreter's sweep, or the generated backward.
  bool gradients = false, runBackward = false;
  std::string cotangentsDir;
  /// Finite-difference checks of the gradients.
  bool gradcheck = false;
  int64_t gradcheckEntries = 64;
  double gradcheckStep = 1e-3, gradcheckTolerance = 1e-6;
  std::string checkGradientsDir;
  /// Where every rank's own arguments and results go.
  std::string rankFilesDir;
  /// Largest relative RMS error --compare accepts.
  double rtol = 1e-12;
};

/// The first option, or combination of options, that gdn-run refuses, with
/// the fix; success when the options can run. `--run-backward` implies
/// `--gradients`, which this sets.
llvm::Error checkOptions(GdnRunOptions &options);

/// Runs gdn-run with `options` (checked): prints the results, their
/// comparison or the gradient check on stdout, errors on stderr. Returns the
/// process's exit code.
int runGdnRun(GdnRunOptions options);

/// gdn-run's main: parses the command line and runs it.
int gdnRunMain(int argc, char **argv);

} // namespace mlir::gdn

#endif // GDN_TOOLS_GDN_RUN_GDNRUNMAIN_H
