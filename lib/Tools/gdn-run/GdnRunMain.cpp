//===- GdnRunMain.cpp - gdn-run's flow ------------------------------------===//
//
// Runs a gdn program in float64 on the CPU, on one or P simulated ranks, with
// seeded realistic inputs or .npy files, and prints or saves its results.
// `--compare A B` runs two programs on the same global inputs and fails when
// they differ by more than --rtol: this is how passes and kernels are checked.
// `--gradients` also differentiates the program (and compares gradients with
// --compare); `--gradcheck` checks those gradients against finite
// differences (docs/gradients.md). The steps are in this folder's other
// files; this one strings them together.
//
//===----------------------------------------------------------------------===//

#include "GdnRun.h"

#include "gdn/InitAllDialects.h"
#include "gdn/Interpreter/Gradients.h"
#include "gdn/Interpreter/InputGenerator.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;
using namespace mlir::gdn::run;

namespace {
/// What the first program produced: its results and, with --gradients,
/// the cotangents (shared with the reference program) and the gradients.
struct FirstRun {
  std::vector<Tensor> results;
  std::vector<Tensor> cotangents;
  std::vector<std::optional<Tensor>> gradients;
  RankViews views;
};

/// Runs the first program on `inputs`: its results, and with --gradients
/// its gradients by the interpreter's sweep or the generated backward.
llvm::Expected<FirstRun> runFirst(Program &program,
                                  const std::vector<Tensor> &inputs,
                                  const InterpreterOptions &interpreterOptions,
                                  const GdnRunOptions &options) {
  FirstRun run;
  RankViews *views = options.rankFilesDir.empty() ? nullptr : &run.views;
  auto outputs = runOnGlobalInputs(program.rankFunctions, inputs,
                                   interpreterOptions, views);
  if (!outputs)
    return outputs.takeError();
  run.results = std::move(*outputs);
  if (!options.gradients)
    return std::move(run);

  func::FuncOp function = program.rankFunctions[0];
  auto cotangents = loadCotangents(function, run.results, options.seed,
                                   options.cotangentsDir);
  if (!cotangents)
    return cotangents.takeError();
  run.cotangents = std::move(*cotangents);
  if (!options.saveInputsDir.empty())
    if (auto error =
            writeTensors(options.saveInputsDir, "cotangent", run.cotangents))
      return std::move(error);
  auto gradients = [&]() -> llvm::Expected<GradientRun> {
    if (!options.runBackward)
      return runWithGradients(program.rankFunctions, inputs, run.cotangents,
                              interpreterOptions);
    auto generated = findGeneratedBackward(program);
    if (!generated)
      return generated.takeError();
    return runGeneratedBackward(function, generated->first, generated->second,
                                inputs, run.cotangents, interpreterOptions,
                                views);
  }();
  if (!gradients)
    return gradients.takeError();
  run.gradients = std::move(gradients->gradients);
  // The generated forward's results are the ones compared and printed.
  if (options.runBackward)
    run.results = std::move(gradients->results);
  return std::move(run);
}

/// Without --compare: prints the results (and gradients) and writes what
/// --outputs and --rank-files ask for.
int report(func::FuncOp function, const FirstRun &run,
           const std::vector<Tensor> &inputs, const GdnRunOptions &options) {
  for (auto [index, tensor] : llvm::enumerate(run.results))
    printSummary(tensor, index, "result", options.printValues);
  if (options.gradients)
    printGradientSummaries(function, run.gradients, options.printValues);
  if (!options.outputsDir.empty()) {
    if (auto error = writeTensors(options.outputsDir, "result", run.results))
      return fail(llvm::toString(std::move(error)));
    if (options.gradients)
      if (auto error = writeGradients(options.outputsDir, run.gradients))
        return fail(llvm::toString(std::move(error)));
  }
  if (!options.rankFilesDir.empty())
    if (auto error = writeRankFiles(options.rankFilesDir, function, run.views,
                                    run.results.size(), run.results,
                                    run.gradients, inputs))
      return fail(llvm::toString(std::move(error)));
  return 0;
}

/// --compare: runs the reference program on the same inputs (converted to
/// its dtypes) and cotangents, prints one line per result and gradient, and
/// fails when any differs by more than --rtol.
int compareWithReference(MLIRContext &context, const Program &first,
                         const FirstRun &run, const std::vector<Tensor> &inputs,
                         const GdnRunOptions &options) {
  func::FuncOp function = first.rankFunctions[0];
  auto second =
      loadProgram(context, options.files[1],
                  options.compareEntry.empty() ? options.entry
                                               : options.compareEntry);
  if (!second)
    return fail(llvm::toString(second.takeError()));
  if (auto error = expandRanks(*second, /*requested=*/0))
    return fail(llvm::toString(std::move(error)));
  func::FuncOp reference = second->rankFunctions[0];
  if (reference.getNumArguments() != function.getNumArguments() ||
      reference.getNumResults() != function.getNumResults())
    return fail("the programs have different signatures: @" +
                function.getName() + " and @" + reference.getName());
  InterpreterOptions referenceOptions;
  referenceOptions.deltaRule =
      options.compareDeltaRule.value_or(options.deltaRule);
  auto referenceInputs = convertInputs(inputs, reference);
  if (!referenceInputs)
    return fail(llvm::toString(referenceInputs.takeError()));
  auto expected = runOnGlobalInputs(second->rankFunctions, *referenceInputs,
                                    referenceOptions);
  if (!expected)
    return fail(llvm::toString(expected.takeError()));
  std::vector<std::optional<Tensor>> expectedGradients;
  if (options.gradients) {
    auto gradients = runWithGradients(second->rankFunctions, *referenceInputs,
                                      run.cotangents, referenceOptions);
    if (!gradients)
      return fail(llvm::toString(gradients.takeError()));
    expectedGradients = std::move(gradients->gradients);
  }

  llvm::outs() << "comparing @" << function.getName()
               << (options.runBackward ? " (generated backward, " : " (")
               << first.rankFunctions.size() << " rank(s)) against @"
               << reference.getName() << " (" << second->rankFunctions.size()
               << " rank(s))\n";
  bool allPass = true;
  for (size_t index = 0; index < run.results.size(); ++index)
    allPass &= printComparison("result", index, run.results[index],
                               (*expected)[index], options.rtol);
  for (size_t index = 0; index < run.gradients.size(); ++index) {
    const std::optional<Tensor> &actual = run.gradients[index];
    const std::optional<Tensor> &wanted = expectedGradients[index];
    if (!actual || !wanted) {
      // Not differentiable in one program: differentiable in neither,
      // unless the signatures' element types differ.
      if (static_cast<bool>(actual) != static_cast<bool>(wanted))
        return fail(llvm::formatv("argument #{0} is differentiable in one "
                                  "program but not in the other",
                                  index));
      continue;
    }
    allPass &=
        printComparison("gradient", index, *actual, *wanted, options.rtol);
  }
  if (!allPass)
    return fail(llvm::formatv("{0} differ by more than --rtol = {1}",
                              options.gradients ? "results or gradients"
                                                : "results",
                              options.rtol)
                    .str());
  return 0;
}
} // namespace

int mlir::gdn::runGdnRun(GdnRunOptions options) {
  if (auto error = checkOptions(options))
    return fail(llvm::toString(std::move(error)));

  DialectRegistry registry;
  registerAllGdnDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  auto first = loadProgram(context, options.files[0], options.entry);
  if (!first)
    return fail(llvm::toString(first.takeError()));
  if (auto error = expandRanks(*first, options.ranks))
    return fail(llvm::toString(std::move(error)));
  func::FuncOp function = first->rankFunctions[0];

  auto provided = loadProvidedInputs(options.inputsDir, function);
  if (!provided)
    return fail(llvm::toString(provided.takeError()));
  GeneratorOptions generator;
  generator.seed = options.seed;
  if (!options.seqlens.empty())
    generator.seqlens = options.seqlens;
  if (!options.slots.empty())
    generator.slots = options.slots;
  auto inputs = generateGlobalInputs(function, first->rankFunctions.size(),
                                     generator, *provided);
  if (!inputs)
    return fail(llvm::toString(inputs.takeError()));
  if (!options.saveInputsDir.empty())
    if (auto error = writeTensors(options.saveInputsDir, "arg", *inputs))
      return fail(llvm::toString(std::move(error)));

  InterpreterOptions interpreterOptions;
  interpreterOptions.deltaRule = options.deltaRule;
  if (options.gradcheck) {
    // Finite differences run the program many times over small inputs:
    // the interpreter's parallel loops run on one thread.
    llvm::parallel::strategy = llvm::hardware_concurrency(1);
    return runGradientCheck(*first, *inputs, interpreterOptions, options);
  }
  auto run = runFirst(*first, *inputs, interpreterOptions, options);
  if (!run)
    return fail(llvm::toString(run.takeError()));
  if (!options.compare)
    return report(function, *run, *inputs, options);
  return compareWithReference(context, *first, *run, *inputs, options);
}
