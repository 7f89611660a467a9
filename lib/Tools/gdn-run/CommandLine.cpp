//===- CommandLine.cpp - gdn-run's flags and their checks -----------------===//
//
// The flags of gdn-run (llvm::cl, registered only when gdnRunMain runs, so a
// library that links this one gets no global options) and the rules on
// their combinations. Every refusal names the flag and the fix.
//
//===----------------------------------------------------------------------===//

#include "gdn/Tools/gdn-run/GdnRunMain.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir::gdn;
using namespace mlir::gdn::interp;
namespace cl = llvm::cl;

namespace {
/// The flags, constructed (and so registered) inside gdnRunMain.
struct Flags {
  cl::list<std::string> files{cl::Positional, cl::OneOrMore,
                              cl::desc("<program.mlir> [<reference.mlir>]")};
  cl::opt<bool> compare{"compare",
                        cl::desc("Run two programs on the same inputs and "
                                 "compare their results")};
  cl::opt<std::string> entry{
      "entry", cl::desc("Function to run; a comma-separated list gives "
                        "one function per rank (default: the only "
                        "function, or @main)")};
  cl::opt<std::string> compareEntry{
      "compare-entry", cl::desc("Function(s) of the second program (default: "
                                "as --entry)")};
  cl::opt<int64_t> ranks{"ranks",
                         cl::desc("Number of simulated ranks (default: what "
                                  "the program's layouts and groups need)"),
                         cl::init(0)};
  cl::opt<uint64_t> seed{"seed", cl::desc("Seed of the random inputs"),
                         cl::init(0)};
  cl::list<int64_t> seqlens{
      "seqlens", cl::CommaSeparated,
      cl::desc("Real sequence lengths of the generated packing")};
  cl::list<int64_t> slots{
      "slots", cl::CommaSeparated,
      cl::desc("Padded slot lengths of the generated packing")};
  cl::opt<std::string> inputsDir{
      "inputs", cl::desc("Directory of argN.npy files (global shapes) "
                         "to use instead of random inputs")};
  cl::opt<std::string> saveInputsDir{
      "save-inputs",
      cl::desc("Write the global inputs used as argN.npy here")};
  cl::opt<std::string> outputsDir{
      "outputs", cl::desc("Write the global results as resultN.npy")};
  cl::opt<bool> printValues{"print-values",
                            cl::desc("Print every value of every result")};
  cl::opt<DeltaRuleAlgorithm> deltaRule{
      "delta-rule", cl::desc("Implementation of gdn.delta_rule"),
      cl::init(DeltaRuleAlgorithm::Recurrent),
      cl::values(clEnumValN(DeltaRuleAlgorithm::Recurrent, "recurrent",
                            "the definition, token by token (default)"),
                 clEnumValN(DeltaRuleAlgorithm::Chunked, "chunked",
                            "the chunked WY algorithm of the GPU kernels"))};
  cl::opt<DeltaRuleAlgorithm> compareDeltaRule{
      "compare-delta-rule",
      cl::desc("Implementation of gdn.delta_rule in the second program "
               "(default: as --delta-rule)"),
      cl::values(clEnumValN(DeltaRuleAlgorithm::Recurrent, "recurrent", ""),
                 clEnumValN(DeltaRuleAlgorithm::Chunked, "chunked", ""))};
  cl::opt<bool> gradients{
      "gradients",
      cl::desc("Also compute the gradient of L = sum_i <result_i, "
               "cotangent_i> with respect to every floating-point argument "
               "(random cotangents from --seed, or --cotangents); with "
               "--compare, compare the gradients too")};
  cl::opt<bool> runBackward{
      "run-backward",
      cl::desc("Take the first program's results and gradients from its "
               "generated @ENTRY_forward and @ENTRY_backward "
               "(gdn-opt --gdn-generate-backward) instead of the "
               "interpreter's reverse sweep of @ENTRY; implies --gradients")};
  cl::opt<std::string> cotangentsDir{
      "cotangents",
      cl::desc("Directory of cotangentN.npy files (global result shapes) to "
               "use instead of random cotangents")};
  cl::opt<bool> gradcheck{
      "gradcheck",
      cl::desc("Check every argument's gradient against central finite "
               "differences (float64 programs)")};
  cl::opt<int64_t> gradcheckEntries{
      "gradcheck-entries",
      cl::desc("Entries checked per argument: all when it has at most this "
               "many, else this many at random (default 64)"),
      cl::init(64)};
  cl::opt<double> gradcheckStep{
      "gradcheck-step",
      cl::desc("Largest finite-difference step, relative to max(1, |x|); "
               "halvings follow while the estimates converge (default 1e-3)"),
      cl::init(1e-3)};
  cl::opt<double> gradcheckTolerance{
      "gradcheck-tolerance",
      cl::desc("Largest relative error --gradcheck accepts (default 1e-6)"),
      cl::init(1e-6)};
  cl::opt<std::string> checkGradientsDir{
      "check-gradients",
      cl::desc("With --gradcheck: check the gradients in DIR/gradN.npy (from "
               "another implementation) instead of the interpreter's own")};
  cl::opt<std::string> rankFilesDir{
      "rank-files",
      cl::desc("Also write what each rank took and returned: "
               "DIR/rank<r>/argN.npy and resultN.npy (with --run-backward "
               "also cotangentN.npy and gradN.npy, the gradient of argument "
               "N) for values with a layout, with the global indices of a "
               "result's or gradient's local rows (resultN.rows.npy) or heads "
               "(resultN.heads.npy); values without one once in DIR/all/; "
               "floating-point values as float32")};
  cl::opt<double> rtol{"rtol",
                       cl::desc("Largest relative RMS error --compare "
                                "accepts (default 1e-12)"),
                       cl::init(1e-12)};

  GdnRunOptions toOptions() const {
    GdnRunOptions options;
    options.files.assign(files.begin(), files.end());
    options.compare = compare;
    options.entry = entry;
    options.compareEntry = compareEntry;
    options.ranks = ranks;
    options.ranksGiven = ranks.getNumOccurrences() > 0;
    options.seed = seed;
    options.seqlens.assign(seqlens.begin(), seqlens.end());
    options.slots.assign(slots.begin(), slots.end());
    options.inputsDir = inputsDir;
    options.saveInputsDir = saveInputsDir;
    options.outputsDir = outputsDir;
    options.printValues = printValues;
    options.deltaRule = deltaRule;
    if (compareDeltaRule.getNumOccurrences())
      options.compareDeltaRule = compareDeltaRule.getValue();
    options.gradients = gradients;
    options.runBackward = runBackward;
    options.cotangentsDir = cotangentsDir;
    options.gradcheck = gradcheck;
    options.gradcheckEntries = gradcheckEntries;
    options.gradcheckStep = gradcheckStep;
    options.gradcheckTolerance = gradcheckTolerance;
    options.checkGradientsDir = checkGradientsDir;
    options.rankFilesDir = rankFilesDir;
    options.rtol = rtol;
    return options;
  }
};

llvm::Error refuse(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}
} // namespace

llvm::Error mlir::gdn::checkOptions(GdnRunOptions &options) {
  if (options.compare != (options.files.size() == 2))
    return refuse(options.compare ? "--compare needs two programs"
                                  : "give one program, or two with --compare");
  if (options.ranksGiven && (options.ranks < 1 || options.ranks > 4096))
    return refuse("--ranks must be between 1 and 4096, found " +
                  llvm::Twine(options.ranks));
  if (!(options.rtol >= 0.0 && std::isfinite(options.rtol)))
    return refuse(llvm::formatv("--rtol must be a finite number >= 0, found "
                                "{0}",
                                options.rtol));
  for (int64_t length : options.seqlens)
    if (length < 0)
      return refuse("--seqlens must be lengths >= 0, found " +
                    llvm::Twine(length));
  for (int64_t slot : options.slots)
    if (slot < 0)
      return refuse("--slots must be lengths >= 0, found " +
                    llvm::Twine(slot));
  if (options.gradcheck && options.compare)
    return refuse("--gradcheck checks one program; compare the gradients of "
                  "two with --gradients --compare");
  if (options.gradcheck && options.gradients)
    return refuse("give --gradients or --gradcheck, not both");
  if (options.runBackward && options.gradcheck)
    return refuse("--run-backward computes gradients with the generated "
                  "backward; check them with --compare against a sweep");
  if (options.runBackward)
    options.gradients = true;
  if (!options.rankFilesDir.empty() && (options.compare || options.gradcheck))
    return refuse("--rank-files writes the ranks of one program's run; not "
                  "with --compare or --gradcheck");
  if (!options.checkGradientsDir.empty() && !options.gradcheck)
    return refuse("--check-gradients needs --gradcheck");
  if (!options.cotangentsDir.empty() && !options.gradients &&
      !options.gradcheck)
    return refuse("--cotangents needs --gradients or --gradcheck");
  if (options.gradcheckEntries < 1)
    return refuse("--gradcheck-entries must be at least 1");
  if (!(options.gradcheckStep > 0.0) || !(options.gradcheckTolerance > 0.0))
    return refuse("--gradcheck-step and --gradcheck-tolerance must be "
                  "positive");
  return llvm::Error::success();
}

int mlir::gdn::gdnRunMain(int argc, char **argv) {
  Flags flags;
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
  return runGdnRun(flags.toOptions());
}
