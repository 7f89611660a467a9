//===- GradientCheck.cpp - gradients against finite differences -----------===//
//
// For each differentiable argument and each sampled entry x of it, the
// derivative of L = sum_i <result_i, c_i> is estimated from central
// differences, without looking at the gradient under test:
//
//   D(h)  = sum_i <result_i(x + h) - result_i(x - h), c_i> / 2h
//   R(h)  = (4 D(h/2) - D(h)) / 3        (Richardson: error O(h^4))
//
// over a ladder of steps h_j = h0 / 2^j, h0 = step * max(1, |x|). Large
// steps suffer truncation (layers with 2-wide heads are strongly curved
// wherever an L2 norm sees a short vector: steps of 1e-5 can be needed),
// small steps suffer rounding in the forward (~1e-16 relative, amplified by
// 1/h). Where both are small, neighbouring estimates agree, so the estimate
// is the R(h_j) whose two neighbours agree with it best. The walk goes down
// the ladder while that spread keeps shrinking and stops four steps after
// it last did (rounding has taken over) or at h0 / 2^29. Two neighbours,
// not one: far from the asymptotic regime two estimates can agree by
// accident. The estimate never looks at the gradient it checks.
// Differencing each result element before summing keeps the sum's own
// rounding out of D, and dividing by the step actually taken (x + h and
// x - h rounded to float64) keeps the step's.
//
// The error of an entry is |numeric - analytic| / max(|analytic|,
// |numeric|, floor), with floor = 1e-3 times the argument's largest
// analytic gradient: entries whose gradient is a thousand times smaller
// than the argument's largest are measured against that scale, since their
// finite differences carry the same absolute noise as the large ones.
//
//===----------------------------------------------------------------------===//

#include "../RandomStream.h"

#include "gdn/Interpreter/Gradients.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

namespace {

/// Central differences at h0, h0/2, ..., at most h0/2^29 (~2e-12 h0).
constexpr int kMaxLadderSteps = 30;
/// Steps down the ladder without a better estimate before the walk stops.
constexpr int kPatience = 4;

/// The first value of `function` (argument, result or op result) whose
/// floating-point elements are not f64, described for an error message.
std::optional<std::string> findNonF64Value(func::FuncOp function) {
  auto isLowPrecision = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && isa<FloatType>(tensor.getElementType()) &&
           !tensor.getElementType().isF64();
  };
  auto describe = [](const Twine &what, Type type) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << what << " of type " << type;
    return text;
  };
  for (auto [index, type] :
       llvm::enumerate(function.getFunctionType().getInputs()))
    if (isLowPrecision(type))
      return describe("argument #" + Twine(index), type);
  for (auto [index, type] :
       llvm::enumerate(function.getFunctionType().getResults()))
    if (isLowPrecision(type))
      return describe("result #" + Twine(index), type);
  std::optional<std::string> found;
  function.walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (!found && isLowPrecision(type)) {
        std::string where;
        llvm::raw_string_ostream os(where);
        os << "a result of '" << op->getName() << "' at " << op->getLoc();
        found = describe(where, type);
      }
  });
  return found;
}

/// `count` distinct entries of `total`, in increasing order: all of them
/// when there are at most `count`, else a seeded random sample.
std::vector<int64_t> sampleEntries(int64_t total, int64_t count, uint64_t seed,
                                   unsigned argument) {
  std::vector<int64_t> entries(total);
  for (int64_t i = 0; i < total; ++i)
    entries[i] = i;
  if (total <= count)
    return entries;
  // A partial Fisher-Yates shuffle picks the first `count`.
  RandomStream random(seed, 0x6AD000000ull + argument);
  for (int64_t i = 0; i < count; ++i) {
    int64_t j = i + static_cast<int64_t>(random.next() %
                                         static_cast<uint64_t>(total - i));
    std::swap(entries[i], entries[j]);
  }
  entries.resize(count);
  std::sort(entries.begin(), entries.end());
  return entries;
}

} // namespace

llvm::Expected<std::vector<ArgumentCheck>> mlir::gdn::interp::checkGradients(
    ArrayRef<func::FuncOp> rankFunctions,
    const std::vector<Tensor> &globalInputs,
    const std::vector<Tensor> &cotangents,
    const std::vector<std::optional<Tensor>> &gradients,
    const InterpreterOptions &options,
    const GradientCheckOptions &checkOptions) {
  func::FuncOp function = rankFunctions[0];
  if (std::optional<std::string> value = findNonF64Value(function))
    return llvm::createStringError(
        "the gradient check needs a float64 program, but @" +
        function.getName().str() + " has " + *value +
        "; finite differences through f32 or bf16 storage measure rounding, "
        "not derivatives (compare its gradients with an f64 program's "
        "instead)");
  FunctionType signature = function.getFunctionType();
  if (gradients.size() != signature.getNumInputs())
    return llvm::createStringError(llvm::formatv(
        "@{0} has {1} arguments but {2} gradients were given",
        function.getName(), signature.getNumInputs(), gradients.size()));

  // D(h) for entry `index` of argument `argument`.
  std::vector<Tensor> inputs = globalInputs;
  auto difference = [&](unsigned argument, int64_t index,
                        double h) -> llvm::Expected<double> {
    double &entry = inputs[argument].getData()[index];
    const double original = entry;
    entry = original + h;
    auto plus = runOnGlobalInputs(rankFunctions, inputs, options);
    if (!plus) {
      entry = original;
      return plus.takeError();
    }
    entry = original - h;
    auto minus = runOnGlobalInputs(rankFunctions, inputs, options);
    entry = original;
    if (!minus)
      return minus.takeError();
    double sum = 0.0;
    for (auto [result, type] : llvm::enumerate(signature.getResults())) {
      if (!isDifferentiable(type))
        continue;
      const Tensor &up = (*plus)[result], &down = (*minus)[result];
      for (int64_t i = 0; i < up.getNumElements(); ++i)
        sum += cotangents[result].getData()[i] *
               (up.getData()[i] - down.getData()[i]);
    }
    // The steps actually taken: x + h and x - h are rounded to float64,
    // which matters at the bottom of the ladder.
    return sum / ((original + h) - (original - h));
  };

  std::vector<ArgumentCheck> checks;
  for (auto [argument, type] : llvm::enumerate(signature.getInputs())) {
    if (!isDifferentiable(type))
      continue;
    if (!gradients[argument])
      return llvm::createStringError(
          llvm::formatv("argument #{0} of @{1} has no gradient to check",
                        argument, function.getName()));
    const Tensor &analytic = *gradients[argument];
    if (analytic.getShape() != globalInputs[argument].getShape())
      return llvm::createStringError(llvm::formatv(
          "the gradient of argument #{0} of @{1} has shape {2} but the "
          "argument has shape {3}",
          argument, function.getName(), analytic.describe(),
          globalInputs[argument].describe()));
    double largest = 0.0;
    for (double value : analytic.values())
      largest = std::max(largest, std::fabs(value));
    const double floor = 1e-3 * largest;

    ArgumentCheck check;
    check.argument = argument;
    check.total = analytic.getNumElements();
    for (int64_t index : sampleEntries(check.total, checkOptions.maxEntries,
                                       checkOptions.seed, argument)) {
      const double x = globalInputs[argument].getData()[index];
      const double h0 = checkOptions.step * std::max(1.0, std::fabs(x));
      // D(h0 / 2^j), computed as the walk down the ladder needs them.
      std::vector<double> differences, extrapolated;
      auto extend = [&]() -> llvm::Error {
        auto d =
            difference(argument, index,
                       std::ldexp(h0, -static_cast<int>(differences.size())));
        if (!d)
          return d.takeError();
        differences.push_back(*d);
        if (differences.size() >= 2)
          extrapolated.push_back(
              (4.0 * differences.back() - differences[differences.size() - 2]) /
              3.0);
        return llvm::Error::success();
      };
      // R(h_j) for j = 0, 1, 2 to start with.
      for (int j = 0; j < 4; ++j)
        if (auto error = extend())
          return std::move(error);
      // Walk down while the spread of R(h_j) and its two neighbours keeps
      // shrinking (truncation dominates); stop once it has not shrunk for
      // kPatience steps (rounding dominates), or at the ladder's end.
      double numeric = extrapolated[1], bestSpread = INFINITY;
      int best = 1;
      for (int j = 1;; ++j) {
        const double spread =
            std::max(std::fabs(extrapolated[j] - extrapolated[j - 1]),
                     std::fabs(extrapolated[j] - extrapolated[j + 1]));
        if (spread < bestSpread) {
          bestSpread = spread;
          numeric = extrapolated[j];
          best = j;
        }
        if (j - best >= kPatience || j + 2 >= kMaxLadderSteps)
          break;
        if (auto error = extend())
          return std::move(error);
      }
      EntryCheck entry;
      entry.index = index;
      entry.analytic = analytic.getData()[index];
      entry.numeric = numeric;
      const double scale = std::max(
          {std::fabs(entry.analytic), std::fabs(entry.numeric), floor});
      const double gap = std::fabs(entry.numeric - entry.analytic);
      // NaN anywhere fails: the comparison below is false for NaN.
      entry.error = scale > 0.0 ? gap / scale : gap;
      if (!(entry.error <= checkOptions.tolerance))
        check.passed = false;
      if (check.entries.empty() || !(entry.error <= check.worst.error))
        check.worst = entry;
      check.entries.push_back(entry);
    }
    checks.push_back(std::move(check));
  }
  return checks;
}
