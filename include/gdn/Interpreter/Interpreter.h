//===- Interpreter.h - run gdn programs on simulated ranks ------*- C++ -*-===//
//
// The reference interpreter executes a function of gdn / gdn_comm ops in
// float64 on P simulated ranks in one process. Ranks run until each reaches a
// collective; the collective then runs for all of them at once, after
// checking that every rank reached the same op of the same group. A rank that
// returns while others wait is a deadlock and is reported, never waited on.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_INTERPRETER_H
#define GDN_INTERPRETER_INTERPRETER_H

#include "gdn/Interpreter/Packing.h"
#include "gdn/Interpreter/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::gdn::interp {

/// Which implementation executes gdn.delta_rule.
enum class DeltaRuleAlgorithm {
  Recurrent, ///< the definition, token by token
  Chunked,   ///< the chunked WY algorithm (chunk_size of the op)
};

struct InterpreterOptions {
  DeltaRuleAlgorithm deltaRule = DeltaRuleAlgorithm::Recurrent;
};

/// Per-rank lists of tensors: `[rank][argument or result index]`.
using RankTensors = std::vector<std::vector<Tensor>>;

/// Runs `rankFunctions[r]` on rank r with `inputs[r]` (SPMD programs pass the
/// same function for every rank). Returns each rank's results, or an error
/// naming the op, the rank and the cause.
llvm::Expected<RankTensors>
runOnRanks(llvm::ArrayRef<func::FuncOp> rankFunctions, RankTensors inputs,
           const InterpreterOptions &options);

/// Each rank's own tensors of a run on global inputs: what every rank took
/// and returned before scattering and gathering. Tools that run the same
/// P-rank program rank by rank elsewhere (the GPU harness) are checked
/// against these. `packing` is the global packing that cut zigzag shards.
struct RankViews {
  RankTensors arguments, results;
  /// Only for runs of a generated backward: each rank's share of the
  /// cotangents (one per floating-point result) and its gradients (one per
  /// floating-point argument), as its @f_backward took and returned them.
  RankTensors cotangents, gradients;
  std::optional<PackingInfo> packing;
};

/// Runs `rankFunctions` (one per rank) on global inputs: scatters each
/// argument by its layout, runs, and gathers each result by its layout.
/// Zigzag layouts are cut with the function's cu_seqlens argument. With
/// `views`, also keeps each rank's arguments and results there.
llvm::Expected<std::vector<Tensor>>
runOnGlobalInputs(llvm::ArrayRef<func::FuncOp> rankFunctions,
                  const std::vector<Tensor> &globalInputs,
                  const InterpreterOptions &options,
                  RankViews *views = nullptr);

/// Checks that the interpreter can run `func`: a body, and arguments and
/// results that are ranked tensors of supported elements whose static sizes
/// fit in memory. The error names the function, the value and the fix.
llvm::Error checkRunnable(func::FuncOp func);

/// The number of ranks a function is written for: the largest rank count of
/// its argument/result layouts and process groups (1 when it has none).
int64_t getRequiredRanks(func::FuncOp func);

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_INTERPRETER_H
