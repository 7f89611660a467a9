//===- Reports.cpp - what gdn-run prints ----------------------------------===//
//
// One line per result or gradient: its shape, RMS and largest magnitude
// (NON-FINITE when a value is NaN or infinite), or its relative RMS error
// against the reference program's and whether that passes. Scripts and lit
// tests read these lines: change their format together.
//
//===----------------------------------------------------------------------===//

#include "GdnRun.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;
using namespace mlir::gdn::run;
using llvm::StringRef;

namespace {
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

} // namespace

void run::printSummary(const Tensor &tensor, unsigned index, StringRef what,
                       bool printValues) {
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

bool run::printComparison(StringRef what, unsigned index, const Tensor &actual,
                          const Tensor &expected, double rtol) {
  auto [relative, maxAbs] = compareTensors(actual, expected);
  bool pass = relative <= rtol; // false for NaN
  llvm::outs() << what << " #" << index << ": " << actual.describe()
               << llvm::format("  rel_rms = %.3e  max_abs = %.3e  ", relative,
                               maxAbs)
               << (pass ? "ok" : "FAIL") << "\n";
  return pass;
}

std::string run::describeEntry(ArrayRef<int64_t> shape, int64_t index) {
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

void run::printGradientSummaries(
    func::FuncOp function, const std::vector<std::optional<Tensor>> &grads,
    bool printValues) {
  for (auto [index, gradient] : llvm::enumerate(grads)) {
    if (!gradient) {
      llvm::outs() << "gradient #" << index << ": none ("
                   << function.getFunctionType().getInput(index)
                   << " is not differentiable)\n";
      continue;
    }
    printSummary(*gradient, index, "gradient", printValues);
  }
}
