//===- gdn-run.cpp - the reference interpreter driver ---------------------===//
//
// Runs a gdn program in float64 on the CPU, on one or P simulated ranks, with
// seeded realistic inputs or .npy files, and prints or saves its results.
// `--compare A B` runs two programs on the same global inputs and fails when
// they differ by more than --rtol: this is how passes and kernels are checked.
// `--gradients` also differentiates the program (and compares gradients with
// --compare); `--gradcheck` checks those gradients against finite
// differences (docs/gradients.md).
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/SequenceLayout.h"
#include "gdn/InitAllDialects.h"
#include "gdn/Interpreter/Distribution.h"
#include "gdn/Interpreter/Gradients.h"
#include "gdn/Interpreter/InputGenerator.h"
#include "gdn/Interpreter/Interpreter.h"
#include "gdn/Interpreter/Npy.h"
#include "gdn/Interpreter/ReferenceGradients.h"
#include "gdn/Support/InputLimits.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;
namespace cl = llvm::cl;

static cl::list<std::string>
    files(cl::Positional, cl::OneOrMore,
          cl::desc("<program.mlir> [<reference.mlir>]"));
static cl::opt<bool> compare("compare",
                             cl::desc("Run two programs on the same inputs and "
                                      "compare their results"));
static cl::opt<std::string>
    entry("entry", cl::desc("Function to run; a comma-separated list gives "
                            "one function per rank (default: the only "
                            "function, or @main)"));
static cl::opt<std::string>
    compareEntry("compare-entry",
                 cl::desc("Function(s) of the second program (default: as "
                          "--entry)"));
static cl::opt<int64_t>
    ranks("ranks",
          cl::desc("Number of simulated ranks (default: what the "
                   "program's layouts and groups need)"),
          cl::init(0));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of the random inputs"),
                              cl::init(0));
static cl::list<int64_t>
    seqlens("seqlens", cl::CommaSeparated,
            cl::desc("Real sequence lengths of the generated packing"));
static cl::list<int64_t>
    slots("slots", cl::CommaSeparated,
          cl::desc("Padded slot lengths of the generated packing"));
static cl::opt<std::string>
    inputsDir("inputs", cl::desc("Directory of argN.npy files (global shapes) "
                                 "to use instead of random inputs"));
static cl::opt<std::string>
    saveInputsDir("save-inputs",
                  cl::desc("Write the global inputs used as argN.npy here"));
static cl::opt<std::string>
    outputsDir("outputs", cl::desc("Write the global results as resultN.npy"));
static cl::opt<bool> printValues("print-values",
                                 cl::desc("Print every value of every result"));

static cl::opt<DeltaRuleAlgorithm> deltaRule(
    "delta-rule", cl::desc("Implementation of gdn.delta_rule"),
    cl::init(DeltaRuleAlgorithm::Recurrent),
    cl::values(clEnumValN(DeltaRuleAlgorithm::Recurrent, "recurrent",
                          "the definition, token by token (default)"),
               clEnumValN(DeltaRuleAlgorithm::Chunked, "chunked",
                          "the chunked WY algorithm of the GPU kernels")));
static cl::opt<DeltaRuleAlgorithm> compareDeltaRule(
    "compare-delta-rule",
    cl::desc("Implementation of gdn.delta_rule in the second program "
             "(default: as --delta-rule)"),
    cl::values(clEnumValN(DeltaRuleAlgorithm::Recurrent, "recurrent", ""),
               clEnumValN(DeltaRuleAlgorithm::Chunked, "chunked", "")));
static cl::opt<bool> gradientsFlag(
    "gradients",
    cl::desc("Also compute the gradient of L = sum_i <result_i, cotangent_i> "
             "with respect to every floating-point argument (random "
             "cotangents from --seed, or --cotangents); with --compare, "
             "compare the gradients too"));
static cl::opt<bool> runBackward(
    "run-backward",
    cl::desc("Take the first program's results and gradients from its "
             "generated @ENTRY_forward and @ENTRY_backward "
             "(gdn-opt --gdn-generate-backward) instead of the interpreter's "
             "reverse sweep of @ENTRY; implies --gradients"));
static cl::opt<std::string> cotangentsDir(
    "cotangents",
    cl::desc("Directory of cotangentN.npy files (global result shapes) to use "
             "instead of random cotangents"));
static cl::opt<bool>
    gradcheck("gradcheck",
              cl::desc("Check every argument's gradient against central finite "
                       "differences (float64 programs)"));
static cl::opt<int64_t> gradcheckEntries(
    "gradcheck-entries",
    cl::desc("Entries checked per argument: all when it has at most this "
             "many, else this many at random (default 64)"),
    cl::init(64));
static cl::opt<double> gradcheckStep(
    "gradcheck-step",
    cl::desc("Largest finite-difference step, relative to max(1, |x|); "
             "halvings follow while the estimates converge (default 1e-3)"),
    cl::init(1e-3));
static cl::opt<double> gradcheckTolerance(
    "gradcheck-tolerance",
    cl::desc("Largest relative error --gradcheck accepts (default 1e-6)"),
    cl::init(1e-6));
static cl::opt<std::string> checkGradientsDir(
    "check-gradients",
    cl::desc("With --gradcheck: check the gradients in DIR/gradN.npy (from "
             "another implementation) instead of the interpreter's own"));
static cl::opt<std::string> rankFilesDir(
    "rank-files",
    cl::desc("Also write what each rank took and returned: "
             "DIR/rank<r>/argN.npy and resultN.npy (with --run-backward also "
             "cotangentN.npy and gradN.npy, the gradient of argument N) for "
             "values with a layout, with the global indices of a result's or "
             "gradient's local rows (resultN.rows.npy) or heads "
             "(resultN.heads.npy); values without one once in DIR/all/; "
             "floating-point values as float32"));
static cl::opt<double> rtol("rtol",
                            cl::desc("Largest relative RMS error --compare "
                                     "accepts (default 1e-12)"),
                            cl::init(1e-12));

namespace {
/// A parsed program and the functions each rank runs.
struct Program {
  OwningOpRef<ModuleOp> module;
  std::vector<func::FuncOp> rankFunctions;
  std::string path;
};

int fail(const llvm::Twine &message) {
  llvm::errs() << "gdn-run: error: " << message << "\n";
  return 1;
}

llvm::Expected<Program> loadProgram(MLIRContext &context, StringRef path,
                                    StringRef entryList) {
  Program program;
  program.path = path.str();
  llvm::SourceMgr sourceMgr;
  std::string errorMessage;
  auto file = openInputFile(path, &errorMessage);
  if (!file)
    return llvm::createStringError(errorMessage);
  // Input nested past what the parser's recursion survives is refused first.
  if (std::optional<std::string> error =
          checkNestingDepth(file->getBuffer(), path))
    return llvm::createStringError(*error);
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  program.module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!program.module)
    return llvm::createStringError(path.str() + " does not parse or verify");

  SmallVector<func::FuncOp> functions(program.module->getOps<func::FuncOp>());
  auto lookup = [&](StringRef name) -> llvm::Expected<func::FuncOp> {
    if (auto function = program.module->lookupSymbol<func::FuncOp>(name))
      return function;
    std::string known;
    for (func::FuncOp function : functions)
      known += (known.empty() ? "@" : ", @") + function.getName().str();
    return llvm::createStringError("no function @" + name.str() + " in " +
                                   path.str() + " (it has " + known + ")");
  };
  if (functions.empty())
    return llvm::createStringError(path.str() +
                                   " holds no function to run; write a "
                                   "func.func (see docs/interpreter.md)");
  if (entryList.empty()) {
    if (functions.size() == 1) {
      program.rankFunctions.push_back(functions.front());
    } else {
      auto main = lookup("main");
      if (!main)
        return llvm::createStringError(
            path.str() + " has several functions; choose one with --entry (" +
            llvm::toString(main.takeError()) + ")");
      program.rankFunctions.push_back(*main);
    }
  } else {
    SmallVector<StringRef> names;
    entryList.split(names, ',');
    for (StringRef name : names) {
      auto function = lookup(name.trim());
      if (!function)
        return function.takeError();
      program.rankFunctions.push_back(*function);
    }
  }
  for (func::FuncOp function : program.rankFunctions)
    if (auto error = checkRunnable(function))
      return llvm::createStringError(path.str() + ": " +
                                     llvm::toString(std::move(error)));
  return program;
}

/// One function per rank: an MPMD list as given, or the SPMD function
/// repeated for the ranks it needs (or --ranks).
llvm::Error expandRanks(Program &program, int64_t requested) {
  if (program.rankFunctions.size() > 1) {
    if (requested &&
        requested != static_cast<int64_t>(program.rankFunctions.size()))
      return llvm::createStringError("--ranks disagrees with the number of "
                                     "functions given to --entry");
    return llvm::Error::success();
  }
  int64_t count =
      requested ? requested : getRequiredRanks(program.rankFunctions[0]);
  program.rankFunctions.assign(count, program.rankFunctions[0]);
  return llvm::Error::success();
}

llvm::Expected<std::map<unsigned, Tensor>>
loadProvidedInputs(func::FuncOp function) {
  std::map<unsigned, Tensor> provided;
  if (inputsDir.empty())
    return provided;
  if (!llvm::sys::fs::is_directory(inputsDir))
    return llvm::createStringError("--inputs " + inputsDir +
                                   " is not a directory");
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    llvm::SmallString<128> path(inputsDir);
    llvm::sys::path::append(path, "arg" + std::to_string(i) + ".npy");
    if (!llvm::sys::fs::exists(path))
      continue;
    auto tensor = readNpy(path);
    if (!tensor)
      return tensor.takeError();
    provided.emplace(i, std::move(*tensor));
  }
  return provided;
}

llvm::Error writeTensors(StringRef directory, StringRef prefix,
                         const std::vector<Tensor> &tensors) {
  if (auto ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError("cannot create " + directory.str() + ": " +
                                   ec.message());
  for (auto [index, tensor] : llvm::enumerate(tensors)) {
    llvm::SmallString<128> path(directory);
    llvm::sys::path::append(path, prefix + std::to_string(index) + ".npy");
    if (auto error = writeNpy(path, tensor))
      return error;
  }
  return llvm::Error::success();
}

/// Converts inputs drawn for one program to another program's dtypes.
llvm::Expected<std::vector<Tensor>>
convertInputs(const std::vector<Tensor> &inputs, func::FuncOp function) {
  std::vector<Tensor> converted;
  for (auto [index, type] :
       llvm::enumerate(function.getFunctionType().getInputs())) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    if (!tensorType)
      return llvm::createStringError("argument #" + std::to_string(index) +
                                     " of @" + function.getName().str() +
                                     " is not a ranked tensor");
    auto kind = getElementKind(tensorType.getElementType());
    if (!kind)
      return kind.takeError();
    Tensor tensor(*kind, std::vector<int64_t>(inputs[index].getShape()));
    tensor.values() = inputs[index].values();
    tensor.roundToStorage();
    converted.push_back(std::move(tensor));
  }
  return converted;
}

void printSummary(const Tensor &tensor, unsigned index,
                  StringRef what = "result") {
  double sumSquares = 0.0, maxAbs = 0.0;
  bool finite = true;
  for (double value : tensor.values()) {
    finite &= std::isfinite(value);
    sumSquares += value * value;
    maxAbs = std::max(maxAbs, std::fabs(value));
  }
  double rms = tensor.getNumElements()
                   ? std::sqrt(sumSquares / tensor.getNumElements())
                   : 0.0;
  llvm::outs() << what << " #" << index << ": " << tensor.describe()
               << llvm::format("  rms = %.6e  max_abs = %.6e", rms, maxAbs)
               << (finite ? "" : "  NON-FINITE") << "\n";
  if (!printValues)
    return;
  for (int64_t i = 0; i < tensor.getNumElements(); ++i)
    llvm::outs() << (i % 8 == 0 ? "  " : " ")
                 << llvm::format("%.10g", tensor.getData()[i])
                 << (i % 8 == 7 || i + 1 == tensor.getNumElements() ? "\n"
                                                                    : "");
}

/// Relative RMS error of `actual` against `expected`, and the largest
/// absolute difference. NaN when shapes differ or a value is not finite.
std::pair<double, double> compareTensors(const Tensor &actual,
                                         const Tensor &expected) {
  if (actual.getShape() != expected.getShape())
    return {NAN, NAN};
  double diffSquares = 0.0, refSquares = 0.0, maxAbs = 0.0;
  for (int64_t i = 0; i < actual.getNumElements(); ++i) {
    double a = actual.getData()[i], e = expected.getData()[i];
    if (!std::isfinite(a) || !std::isfinite(e))
      return {NAN, NAN};
    diffSquares += (a - e) * (a - e);
    refSquares += e * e;
    maxAbs = std::max(maxAbs, std::fabs(a - e));
  }
  double relative = refSquares > 0.0 ? std::sqrt(diffSquares / refSquares)
                                     : std::sqrt(diffSquares);
  return {relative, maxAbs};
}

/// Prints a comparison line and returns whether it passed.
bool printComparison(StringRef what, unsigned index, const Tensor &actual,
                     const Tensor &expected) {
  auto [relative, maxAbs] = compareTensors(actual, expected);
  bool pass = relative <= rtol; // false for NaN
  llvm::outs() << what << " #" << index << ": " << actual.describe()
               << llvm::format("  rel_rms = %.3e  max_abs = %.3e  ", relative,
                               maxAbs)
               << (pass ? "ok" : "FAIL") << "\n";
  return pass;
}

/// `[i, j, k]`: the multi-index of row-major entry `index` of `shape`.
std::string describeEntry(ArrayRef<int64_t> shape, int64_t index) {
  SmallVector<int64_t> indices(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    indices[d] = shape[d] ? index % shape[d] : 0;
    index = shape[d] ? index / shape[d] : 0;
  }
  std::string text = "[";
  for (auto [d, i] : llvm::enumerate(indices))
    text += (d ? ", " : "") + std::to_string(i);
  return text + "]";
}

/// The cotangents of `function`'s results: cotangentN.npy from
/// --cotangents where present, random otherwise.
llvm::Expected<std::vector<Tensor>>
loadCotangents(func::FuncOp function, const std::vector<Tensor> &results) {
  std::vector<Tensor> cotangents = generateCotangents(results, seed);
  if (cotangentsDir.empty())
    return cotangents;
  if (!llvm::sys::fs::is_directory(cotangentsDir))
    return llvm::createStringError("--cotangents " + cotangentsDir +
                                   " is not a directory");
  for (unsigned i = 0; i < results.size(); ++i) {
    llvm::SmallString<128> path(cotangentsDir);
    llvm::sys::path::append(path, "cotangent" + std::to_string(i) + ".npy");
    if (!llvm::sys::fs::exists(path) ||
        !isDifferentiable(function.getFunctionType().getResult(i)))
      continue;
    auto tensor = readNpy(path);
    if (!tensor)
      return tensor.takeError();
    if (tensor->getShape() != results[i].getShape())
      return llvm::createStringError(
          llvm::formatv("{0} has shape {1} but result #{2} of @{3} has "
                        "shape {4}",
                        path, tensor->describe(), i, function.getName(),
                        results[i].describe()));
    cotangents[i] = zerosLike(results[i]);
    cotangents[i].values() = tensor->values();
  }
  return cotangents;
}

/// --run-backward: the generated @F_forward and @F_backward of the entry
/// function F, one per rank like the entry's.
llvm::Expected<std::pair<std::vector<func::FuncOp>, std::vector<func::FuncOp>>>
findGeneratedBackward(Program &program) {
  std::vector<func::FuncOp> forwards, backwards;
  for (func::FuncOp function : program.rankFunctions) {
    std::string name = function.getName().str();
    auto forward =
        program.module->lookupSymbol<func::FuncOp>(name + "_forward");
    auto backward =
        program.module->lookupSymbol<func::FuncOp>(name + "_backward");
    if (!forward || !backward || forward.isExternal() || backward.isExternal())
      return llvm::createStringError(
          "--run-backward needs @" + name + "_forward and @" + name +
          "_backward in " + program.path +
          "; make them with gdn-opt --gdn-generate-backward");
    forwards.push_back(forward);
    backwards.push_back(backward);
  }
  return std::make_pair(std::move(forwards), std::move(backwards));
}

/// --check-gradients: gradN.npy for every differentiable argument.
llvm::Expected<std::vector<std::optional<Tensor>>>
loadGradients(func::FuncOp function, const std::vector<Tensor> &inputs) {
  std::vector<std::optional<Tensor>> gradients;
  for (auto [index, type] :
       llvm::enumerate(function.getFunctionType().getInputs())) {
    if (!isDifferentiable(type)) {
      gradients.push_back(std::nullopt);
      continue;
    }
    llvm::SmallString<128> path(checkGradientsDir);
    llvm::sys::path::append(path, "grad" + std::to_string(index) + ".npy");
    auto tensor = readNpy(path);
    if (!tensor)
      return tensor.takeError();
    if (tensor->getShape() != inputs[index].getShape())
      return llvm::createStringError(
          llvm::formatv("{0} has shape {1} but argument #{2} of @{3} has "
                        "shape {4}",
                        path, tensor->describe(), index, function.getName(),
                        inputs[index].describe()));
    Tensor gradient = zerosLike(inputs[index]);
    gradient.values() = tensor->values();
    gradients.push_back(std::move(gradient));
  }
  return gradients;
}

/// Writes gradN.npy for every argument that has a gradient.
llvm::Error writeGradients(StringRef directory,
                           const std::vector<std::optional<Tensor>> &grads) {
  if (auto ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError("cannot create " + directory.str() + ": " +
                                   ec.message());
  for (auto [index, gradient] : llvm::enumerate(grads)) {
    if (!gradient)
      continue;
    llvm::SmallString<128> path(directory);
    llvm::sys::path::append(path, "grad" + std::to_string(index) + ".npy");
    if (auto error = writeNpy(path, *gradient))
      return error;
  }
  return llvm::Error::success();
}

/// Writes `prefix`N.rows.npy (or .heads.npy) in `directory`: where rank
/// `rank`'s share of a value of `localType` and global `globalShape` sits.
llvm::Error writeShardIndices(StringRef directory, const Twine &prefix,
                              RankedTensorType localType,
                              ArrayRef<int64_t> globalShape, int64_t ranks,
                              int64_t rank, const PackingInfo *packing) {
  auto indices = getShardIndices(localType, globalShape, ranks, rank, packing);
  if (!indices)
    return indices.takeError();
  if (!*indices)
    return llvm::Error::success();
  Tensor tensor(ElementKind::I64,
                {static_cast<int64_t>((*indices)->indices.size())});
  for (auto [i, index] : llvm::enumerate((*indices)->indices))
    tensor.getData()[i] = static_cast<double>(index);
  llvm::SmallString<128> path(directory);
  llvm::sys::path::append(
      path, prefix + ((*indices)->dim == 0 ? ".rows.npy" : ".heads.npy"));
  return writeNpy(path, tensor);
}

/// A rank file: float64 values stored as float32, which holds the
/// arguments (drawn in the program's types) exactly and the references to
/// far better than any tolerance they are checked with.
llvm::Error writeRankTensor(StringRef directory, const Twine &name,
                            const Tensor &tensor) {
  if (auto ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError("cannot create " + directory.str() + ": " +
                                   ec.message());
  llvm::SmallString<128> path(directory);
  llvm::sys::path::append(path, name + ".npy");
  if (tensor.getKind() != ElementKind::F64)
    return writeNpy(path, tensor);
  Tensor narrow(ElementKind::F32, std::vector<int64_t>(tensor.getShape()));
  narrow.values() = tensor.values();
  narrow.roundToStorage();
  return writeNpy(path, narrow);
}

/// --rank-files: every rank's own arguments and results (and, for a
/// generated backward, cotangents and gradients), with where each rank's
/// share of a result or gradient sits in the global tensor, so that a
/// P-rank run elsewhere (the GPU harness) can be checked rank by rank and
/// gathered. A value with a layout goes to DIR/rank<r>/; one without (the
/// same on every rank: weights, their gradients) once to DIR/all/.
/// `numResults` results of each rank's list are written (a generated
/// forward's saved values are not results); `globalResults` and `gradients`
/// give the global shapes.
llvm::Error writeRankFiles(StringRef directory, func::FuncOp function,
                           const RankViews &views, size_t numResults,
                           const std::vector<Tensor> &globalResults,
                           const std::vector<std::optional<Tensor>> &gradients,
                           const std::vector<Tensor> &globalInputs) {
  const int64_t ranks = static_cast<int64_t>(views.arguments.size());
  const PackingInfo *packing = views.packing ? &*views.packing : nullptr;
  FunctionType type = function.getFunctionType();
  llvm::SmallString<128> all(directory);
  llvm::sys::path::append(all, "all");
  // Writes rank `rank`'s `tensor` (of `localType`) as `name`, with its map.
  auto write = [&](int64_t rank, const Twine &name, const Tensor &tensor,
                   Type localType, ArrayRef<int64_t> globalShape,
                   bool withMap) -> llvm::Error {
    auto tensorType = cast<RankedTensorType>(localType);
    const bool sharded = getSequenceLayout(tensorType) != nullptr;
    if (!sharded)
      return rank == 0 ? writeRankTensor(all, name, tensor)
                       : llvm::Error::success();
    llvm::SmallString<128> dir(directory);
    llvm::sys::path::append(dir, "rank" + std::to_string(rank));
    if (auto error = writeRankTensor(dir, name, tensor))
      return error;
    if (!withMap)
      return llvm::Error::success();
    return writeShardIndices(dir, name, tensorType, globalShape, ranks, rank,
                             packing);
  };
  for (int64_t rank = 0; rank < ranks; ++rank) {
    for (auto [index, argument] : llvm::enumerate(views.arguments[rank]))
      if (auto error = write(rank, "arg" + Twine(index), argument,
                             type.getInput(index), {}, /*withMap=*/false))
        return error;
    for (size_t i = 0; i < numResults; ++i)
      if (auto error = write(rank, "result" + Twine(i), views.results[rank][i],
                             type.getResult(i), globalResults[i].getShape(),
                             /*withMap=*/true))
        return error;
    if (views.cotangents.empty())
      continue;
    size_t cotangent = 0;
    for (auto [index, resultType] : llvm::enumerate(type.getResults()))
      if (isDifferentiable(resultType))
        if (auto error = write(rank, "cotangent" + Twine(index),
                               views.cotangents[rank][cotangent++], resultType,
                               {}, /*withMap=*/false))
          return error;
    // Gradient k of the backward is that of the k-th differentiable argument.
    size_t position = 0;
    for (auto [index, gradient] : llvm::enumerate(gradients)) {
      if (!gradient)
        continue;
      if (auto error =
              write(rank, "grad" + Twine(index),
                    views.gradients[rank][position++], type.getInput(index),
                    globalInputs[index].getShape(), /*withMap=*/true))
        return error;
    }
  }
  return llvm::Error::success();
}

/// --gradcheck: prints one line per argument and fails on the first
/// argument whose worst entry exceeds the tolerance.
int runGradientCheck(const Program &program, const std::vector<Tensor> &inputs,
                     const InterpreterOptions &options) {
  func::FuncOp function = program.rankFunctions[0];
  auto forward = runOnGlobalInputs(program.rankFunctions, inputs, options);
  if (!forward)
    return fail(llvm::toString(forward.takeError()));
  auto cotangents = loadCotangents(function, *forward);
  if (!cotangents)
    return fail(llvm::toString(cotangents.takeError()));
  if (!saveInputsDir.empty())
    if (auto error = writeTensors(saveInputsDir, "cotangent", *cotangents))
      return fail(llvm::toString(std::move(error)));
  std::vector<std::optional<Tensor>> gradients;
  if (checkGradientsDir.empty()) {
    auto run =
        runWithGradients(program.rankFunctions, inputs, *cotangents, options);
    if (!run)
      return fail(llvm::toString(run.takeError()));
    gradients = std::move(run->gradients);
  } else {
    auto loaded = loadGradients(function, inputs);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    gradients = std::move(*loaded);
  }
  GradientCheckOptions checkOptions;
  checkOptions.maxEntries = gradcheckEntries;
  checkOptions.step = gradcheckStep;
  checkOptions.tolerance = gradcheckTolerance;
  checkOptions.seed = seed;
  auto checks = checkGradients(program.rankFunctions, inputs, *cotangents,
                               gradients, options, checkOptions);
  if (!checks)
    return fail(llvm::toString(checks.takeError()));

  llvm::outs() << "gradient check of @" << function.getName() << " ("
               << program.rankFunctions.size() << " rank(s)"
               << (checkGradientsDir.empty()
                       ? ""
                       : ", gradients from " + checkGradientsDir)
               << llvm::format("): step %.1e, tolerance %.1e\n",
                               gradcheckStep.getValue(),
                               gradcheckTolerance.getValue());
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
      gradcheckTolerance.getValue()));
}

void printGradientSummaries(func::FuncOp function,
                            const std::vector<std::optional<Tensor>> &grads) {
  for (auto [index, gradient] : llvm::enumerate(grads)) {
    if (!gradient) {
      llvm::outs() << "gradient #" << index << ": none ("
                   << function.getFunctionType().getInput(index)
                   << " is not differentiable)\n";
      continue;
    }
    printSummary(*gradient, index, "gradient");
  }
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "gdn-run: the float64 reference interpreter of gdn programs\n\n"
      "  gdn-run FILE [--entry NAME] [--seed S] [--inputs DIR] [--outputs "
      "DIR]\n"
      "  gdn-run --compare A.mlir B.mlir [--rtol X] [--gradients] "
      "[--run-backward]\n"
      "  gdn-run FILE --gradients [--cotangents DIR] [--outputs DIR]\n"
      "  gdn-run FILE --gradcheck [--gradcheck-entries N] "
      "[--check-gradients DIR]\n");
  if (compare != (files.size() == 2))
    return fail(compare ? "--compare needs two programs"
                        : "give one program, or two with --compare");
  if (ranks.getNumOccurrences() && (ranks < 1 || ranks > 4096))
    return fail("--ranks must be between 1 and 4096, found " +
                llvm::Twine(ranks.getValue()));
  if (!(rtol >= 0.0 && std::isfinite(rtol)))
    return fail(llvm::formatv("--rtol must be a finite number >= 0, found {0}",
                              rtol.getValue()));
  for (int64_t length : seqlens)
    if (length < 0)
      return fail("--seqlens must be lengths >= 0, found " +
                  llvm::Twine(length));
  for (int64_t slot : slots)
    if (slot < 0)
      return fail("--slots must be lengths >= 0, found " + llvm::Twine(slot));
  if (gradcheck && compare)
    return fail("--gradcheck checks one program; compare the gradients of two "
                "with --gradients --compare");
  if (gradcheck && gradientsFlag)
    return fail("give --gradients or --gradcheck, not both");
  if (runBackward && gradcheck)
    return fail("--run-backward computes gradients with the generated "
                "backward; check them with --compare against a sweep");
  if (runBackward)
    gradientsFlag = true;
  if (!rankFilesDir.empty() && (compare || gradcheck))
    return fail("--rank-files writes the ranks of one program's run; not with "
                "--compare or --gradcheck");
  if (!checkGradientsDir.empty() && !gradcheck)
    return fail("--check-gradients needs --gradcheck");
  if (!cotangentsDir.empty() && !gradientsFlag && !gradcheck)
    return fail("--cotangents needs --gradients or --gradcheck");
  if (gradcheckEntries < 1)
    return fail("--gradcheck-entries must be at least 1");
  if (!(gradcheckStep > 0.0) || !(gradcheckTolerance > 0.0))
    return fail("--gradcheck-step and --gradcheck-tolerance must be positive");

  DialectRegistry registry;
  registerAllGdnDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  auto first = loadProgram(context, files[0], entry);
  if (!first)
    return fail(llvm::toString(first.takeError()));
  if (auto error = expandRanks(*first, ranks))
    return fail(llvm::toString(std::move(error)));
  func::FuncOp function = first->rankFunctions[0];

  auto provided = loadProvidedInputs(function);
  if (!provided)
    return fail(llvm::toString(provided.takeError()));
  GeneratorOptions generator;
  generator.seed = seed;
  if (!seqlens.empty())
    generator.seqlens = std::vector<int64_t>(seqlens.begin(), seqlens.end());
  if (!slots.empty())
    generator.slots = std::vector<int64_t>(slots.begin(), slots.end());
  auto inputs = generateGlobalInputs(function, first->rankFunctions.size(),
                                     generator, *provided);
  if (!inputs)
    return fail(llvm::toString(inputs.takeError()));
  if (!saveInputsDir.empty())
    if (auto error = writeTensors(saveInputsDir, "arg", *inputs))
      return fail(llvm::toString(std::move(error)));

  InterpreterOptions options;
  options.deltaRule = deltaRule;
  if (gradcheck) {
    llvm::parallel::strategy = llvm::hardware_concurrency(1);
    return runGradientCheck(*first, *inputs, options);
  }
  RankViews views;
  auto outputs = runOnGlobalInputs(first->rankFunctions, *inputs, options,
                                   rankFilesDir.empty() ? nullptr : &views);
  if (!outputs)
    return fail(llvm::toString(outputs.takeError()));

  // With --gradients, the cotangents (drawn for the first program's results,
  // shared by the second) and the gradients.
  std::vector<Tensor> cotangents;
  std::vector<std::optional<Tensor>> gradients;
  if (gradientsFlag) {
    auto loaded = loadCotangents(function, *outputs);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    cotangents = std::move(*loaded);
    if (!saveInputsDir.empty())
      if (auto error = writeTensors(saveInputsDir, "cotangent", cotangents))
        return fail(llvm::toString(std::move(error)));
    auto run = [&]() -> llvm::Expected<GradientRun> {
      if (!runBackward)
        return runWithGradients(first->rankFunctions, *inputs, cotangents,
                                options);
      auto generated = findGeneratedBackward(*first);
      if (!generated)
        return generated.takeError();
      return runGeneratedBackward(function, generated->first, generated->second,
                                  *inputs, cotangents, options,
                                  rankFilesDir.empty() ? nullptr : &views);
    }();
    if (!run)
      return fail(llvm::toString(run.takeError()));
    gradients = std::move(run->gradients);
    // The generated forward's results are the ones compared and printed.
    if (runBackward)
      *outputs = std::move(run->results);
  }

  if (!compare) {
    for (auto [index, tensor] : llvm::enumerate(*outputs))
      printSummary(tensor, index);
    if (gradientsFlag)
      printGradientSummaries(function, gradients);
    if (!outputsDir.empty())
      if (auto error = writeTensors(outputsDir, "result", *outputs))
        return fail(llvm::toString(std::move(error)));
    if (!outputsDir.empty() && gradientsFlag)
      if (auto error = writeGradients(outputsDir, gradients))
        return fail(llvm::toString(std::move(error)));
    if (!rankFilesDir.empty())
      if (auto error =
              writeRankFiles(rankFilesDir, function, views, outputs->size(),
                             *outputs, gradients, *inputs))
        return fail(llvm::toString(std::move(error)));
    return 0;
  }

  auto second = loadProgram(context, files[1],
                            compareEntry.empty() ? entry : compareEntry);
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
      compareDeltaRule.getNumOccurrences() ? compareDeltaRule : deltaRule;
  auto referenceInputs = convertInputs(*inputs, reference);
  if (!referenceInputs)
    return fail(llvm::toString(referenceInputs.takeError()));
  auto expected = runOnGlobalInputs(second->rankFunctions, *referenceInputs,
                                    referenceOptions);
  if (!expected)
    return fail(llvm::toString(expected.takeError()));
  std::vector<std::optional<Tensor>> expectedGradients;
  if (gradientsFlag) {
    auto run = runWithGradients(second->rankFunctions, *referenceInputs,
                                cotangents, referenceOptions);
    if (!run)
      return fail(llvm::toString(run.takeError()));
    expectedGradients = std::move(run->gradients);
  }

  llvm::outs() << "comparing @" << function.getName()
               << (runBackward ? " (generated backward, " : " (")
               << first->rankFunctions.size() << " rank(s)) against @"
               << reference.getName() << " (" << second->rankFunctions.size()
               << " rank(s))\n";
  bool allPass = true;
  for (size_t index = 0; index < outputs->size(); ++index)
    allPass &=
        printComparison("result", index, (*outputs)[index], (*expected)[index]);
  for (size_t index = 0; index < gradients.size(); ++index) {
    if (!gradients[index] || !expectedGradients[index]) {
      // Not differentiable in one program: differentiable in neither,
      // unless the signatures' element types differ.
      if (static_cast<bool>(gradients[index]) !=
          static_cast<bool>(expectedGradients[index]))
        return fail(llvm::formatv("argument #{0} is differentiable in one "
                                  "program but not in the other",
                                  index));
      continue;
    }
    allPass &= printComparison("gradient", index, *gradients[index],
                               *expectedGradients[index]);
  }
  if (!allPass)
    return fail(
        llvm::formatv("{0} differ by more than --rtol = {1}",
                      gradientsFlag ? "results or gradients" : "results", rtol)
            .str());
  return 0;
}
