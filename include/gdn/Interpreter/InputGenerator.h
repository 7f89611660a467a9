//===- InputGenerator.h - seeded inputs with realistic values ---*- C++ -*-===//
//
// Random inputs only exercise a GDN program when they look like real ones:
// decays g <= 0, beta in (0, 1), unit-norm keys, valid cu_seqlens, weights
// scaled by their fan-in. The generator reads each function argument's role
// from how the program uses it (the operand it feeds) and draws accordingly.
// Inputs are global: a P-rank program's arguments are generated at their
// global shape and scattered by the caller.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_INPUTGENERATOR_H
#define GDN_INTERPRETER_INPUTGENERATOR_H

#include "gdn/Interpreter/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <optional>

namespace mlir::gdn::interp {

/// What an argument feeds, which decides how it is drawn.
enum class InputRole {
  Activation,       ///< standard normal
  Offsets,          ///< cu_seqlens
  PaddedOffsets,    ///< cu_padded
  Decay,            ///< g <= 0 (delta rule)
  Beta,             ///< in (0, 1)
  UnitRows,         ///< q, k of the delta rule: unit norm along the last dim
  LogDecayRate,     ///< A_log: log of U(1, 16)
  DtBias,           ///< around 1
  ProjectionWeight, ///< normal / sqrt(fan-in)
  ConvWeight,       ///< normal / sqrt(width)
  NormWeight,       ///< around 1
  State,            ///< small normal
};

const char *getInputRoleName(InputRole role);

/// The role of every argument of `func`, from the operands it feeds.
std::vector<InputRole> inferInputRoles(func::FuncOp func);

struct GeneratorOptions {
  uint64_t seed = 0;
  /// Real sequence lengths; random when absent.
  std::optional<std::vector<int64_t>> seqlens;
  /// Padded slot lengths (padded packings); derived when absent.
  std::optional<std::vector<int64_t>> slots;
};

/// Draws the global inputs of `func` (written for `ranks` ranks). Arguments in
/// `provided` (from .npy files) are used as given, after a shape check, and
/// fix the token and sequence counts when they are offsets.
llvm::Expected<std::vector<Tensor>>
generateGlobalInputs(func::FuncOp func, int64_t ranks,
                     const GeneratorOptions &options,
                     const std::map<unsigned, Tensor> &provided);

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_INPUTGENERATOR_H
