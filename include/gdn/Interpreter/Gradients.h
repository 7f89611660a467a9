//===- Gradients.h - gradients of gdn programs and their check ---*- C++
//-*-===//
//
// The interpreter differentiates a whole function in reverse mode: it runs
// it forward keeping every value, then sweeps its ops backwards, each op's
// VJP (ReferenceGradients.h) turning its results' cotangents into its
// operands'. The loss is L = sum_i <result_i, cotangent_i>, so the gradient
// of an argument is the VJP of all results at once. P-rank programs are
// differentiated on their ranks, collectives included.
//
// The check compares those gradients with central finite differences of L,
// so that the oracle itself is tested against the forward it differentiates
// (docs/gradients.md gives the method and the tolerances).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_GRADIENTS_H
#define GDN_INTERPRETER_GRADIENTS_H

#include "gdn/Interpreter/Interpreter.h"

#include <optional>

namespace mlir::gdn::interp {

/// True for the types that have a gradient: tensors of floating-point
/// elements (offsets and other integers have none).
bool isDifferentiable(Type type);

struct GradientRun {
  /// The forward's global results.
  std::vector<Tensor> results;
  /// dL/d(argument i) at the argument's global shape, in float64;
  /// std::nullopt for arguments that are not differentiable.
  std::vector<std::optional<Tensor>> gradients;
};

/// Runs `rankFunctions` on global inputs and differentiates
/// L = sum_i <result_i, cotangents[i]>. `cotangents` holds one tensor per
/// result, at the result's global shape (entries of integer results are
/// ignored). A result without a layout is the same on every rank and counts
/// once (as gathering it takes rank 0's copy); the gradient of an argument
/// without a layout, which every rank holds, sums the ranks' gradients.
llvm::Expected<GradientRun>
runWithGradients(llvm::ArrayRef<func::FuncOp> rankFunctions,
                 const std::vector<Tensor> &globalInputs,
                 const std::vector<Tensor> &cotangents,
                 const InterpreterOptions &options);

/// The gradients of `original` computed by the program gdn-generate-backward
/// made from it: `forwardRanks` (@original_forward, which returns
/// @original's results and then the saved values) and `backwardRanks`
/// (@original_backward: arguments, saved values, cotangents -> gradients)
/// run on the ranks, each rank passing its own saved values on. Inputs,
/// cotangents and the returned results and gradients are global, as in
/// runWithGradients, so the two can be compared. With `views`, also keeps
/// what each rank's @original_forward took and returned (saved values
/// included) and each rank's cotangents and gradients.
llvm::Expected<GradientRun> runGeneratedBackward(
    func::FuncOp original, llvm::ArrayRef<func::FuncOp> forwardRanks,
    llvm::ArrayRef<func::FuncOp> backwardRanks,
    const std::vector<Tensor> &globalInputs,
    const std::vector<Tensor> &cotangents, const InterpreterOptions &options,
    RankViews *views = nullptr);

/// Standard-normal float64 cotangents shaped like `results`, one random
/// stream per result (empty tensors for integer results).
std::vector<Tensor> generateCotangents(const std::vector<Tensor> &results,
                                       uint64_t seed);

struct GradientCheckOptions {
  /// Entries checked per argument: all of them when the argument has at
  /// most this many, otherwise this many distinct ones drawn at random.
  int64_t maxEntries = 64;
  /// The largest perturbation of entry x is h0 = step * max(1, |x|);
  /// smaller ones halve it as far as the estimates keep converging
  /// (GradientCheck.cpp).
  double step = 1e-3;
  /// The largest relative error accepted.
  double tolerance = 1e-6;
  /// Seeds the choice of entries.
  uint64_t seed = 0;
};

struct EntryCheck {
  int64_t index = 0; ///< row-major index into the argument
  double analytic = 0.0, numeric = 0.0, error = 0.0;
};

struct ArgumentCheck {
  unsigned argument = 0;
  int64_t total = 0; ///< the argument's entries
  std::vector<EntryCheck> entries;
  EntryCheck worst; ///< the entry with the largest error
  bool passed = true;
};

/// Checks `gradients` (one per argument, as runWithGradients returns them,
/// or from another implementation) against central finite differences of
/// L = sum_i <result_i, cotangents[i]>, for every differentiable argument.
/// The program must compute in float64 throughout: finite differences
/// through f32 or bf16 storage would measure rounding, not derivatives.
llvm::Expected<std::vector<ArgumentCheck>>
checkGradients(llvm::ArrayRef<func::FuncOp> rankFunctions,
               const std::vector<Tensor> &globalInputs,
               const std::vector<Tensor> &cotangents,
               const std::vector<std::optional<Tensor>> &gradients,
               const InterpreterOptions &options,
               const GradientCheckOptions &checkOptions);

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_GRADIENTS_H
