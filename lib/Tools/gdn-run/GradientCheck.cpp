//===- GradientCheck.cpp - gdn-run --gradcheck ----------------------------===//
//
// Checks a program's gradients (the interpreter's, or another
// implementation's from --check-gradients) against central finite
// differences of the float64 program, one line per argument
// (docs/gradients.md).
//
//===----------------------------------------------------------------------===//

#include "GdnRun.h"

#include "gdn/Interpreter/Gradients.h"
#include "gdn/Interpreter/InputGenerator.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;
using namespace mlir::gdn::run;

int run::runGradientCheck(const Program &program,
                          const std::vector<Tensor> &inputs,
                          const InterpreterOptions &interpreterOptions,
                          const GdnRunOptions &options) {
  func::FuncOp function = program.rankFunctions[0];
  auto forward = runOnGlobalInputs(program.rankFunctions, inputs,
                                   interpreterOptions);
  if (!forward)
    return fail(llvm::toString(forward.takeError()));
  auto cotangents = loadCotangents(function, *forward, options.seed,
                                   options.cotangentsDir);
  if (!cotangents)
    return fail(llvm::toString(cotangents.takeError()));
  if (!options.saveInputsDir.empty())
    if (auto error =
            writeTensors(options.saveInputsDir, "cotangent", *cotangents))
      return fail(llvm::toString(std::move(error)));
  std::vector<std::optional<Tensor>> gradients;
  if (options.checkGradientsDir.empty()) {
    auto run = runWithGradients(program.rankFunctions, inputs, *cotangents,
                                interpreterOptions);
    if (!run)
      return fail(llvm::toString(run.takeError()));
    gradients = std::move(run->gradients);
  } else {
    auto loaded = loadGradients(function, inputs, options.checkGradientsDir);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    gradients = std::move(*loaded);
  }
  GradientCheckOptions checkOptions;
  checkOptions.maxEntries = options.gradcheckEntries;
  checkOptions.step = options.gradcheckStep;
  checkOptions.tolerance = options.gradcheckTolerance;
  checkOptions.seed = options.seed;
  auto checks = checkGradients(program.rankFunctions, inputs, *cotangents,
                               gradients, interpreterOptions, checkOptions);
  if (!checks)
    return fail(llvm::toString(checks.takeError()));

  llvm::outs() << "gradient check of @" << function.getName() << " ("
               << program.rankFunctions.size() << " rank(s)"
               << (options.checkGradientsDir.empty()
                       ? ""
                       : ", gradients from " + options.checkGradientsDir)
               << llvm::format("): step %.1e, tolerance %.1e\n",
                               options.gradcheckStep,
                               options.gradcheckTolerance);
  // Arguments are named by the role the input generator reads from their
  // uses (as arguments have no names in the IR).
  std::vector<InputRole> roles = inferInputRoles(function);
  const ArgumentCheck *firstFailure = nullptr;
  for (const ArgumentCheck &check : *checks) {
    const Tensor &argument = inputs[check.argument];
    llvm::outs() << "gradient #" << check.argument << " ("
                 << getInputRoleName(roles[check.argument])
                 << "): " << argument.describe() << "  checked "
                 << check.entries.size() << " of " << check.total
                 << llvm::format("  max_rel_err = %.2e  ", check.worst.error)
                 << (check.passed ? "ok" : "FAIL") << "\n";
    if (!check.passed && !firstFailure)
      firstFailure = &check;
  }
  if (!firstFailure)
    return 0;
  const EntryCheck &worst = firstFailure->worst;
  return fail(llvm::formatv(
      "gradient check failed: argument #{0} ({1}) entry {2}: the gradient is "
      "{3:e} but finite differences give {4:e} (relative error {5:e} > {6:e})",
      firstFailure->argument, getInputRoleName(roles[firstFailure->argument]),
      describeEntry(inputs[firstFailure->argument].getShape(), worst.index),
      worst.analytic, worst.numeric, worst.error,
      options.gradcheckTolerance));
}
