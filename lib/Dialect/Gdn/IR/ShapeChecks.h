//===- ShapeChecks.h - shape diagnostics for gdn verifiers ------*- C++ -*-===//
//
// The gdn verifiers check many "dimension i of operand x must be n" facts.
// Doing it through one helper keeps every message in the same form: it names
// the operand, the dimension and its meaning, the expected and the found
// value. Dynamic sizes (`?`) are compatible with anything.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_DIALECT_GDN_SHAPECHECKS_H
#define GDN_LIB_DIALECT_GDN_SHAPECHECKS_H

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"

#include "mlir/IR/Operation.h"

#include <optional>
#include <string>

namespace mlir::gdn {

/// The buffer rows `packing` describes when they are known at compile time:
/// its type's static token count, or else the last offset (of cu_padded when
/// padded) of a gdn.packing made from constant offsets.
std::optional<int64_t> getKnownBufferTokens(Value packing);

/// True when two sizes may be equal at run time.
inline bool sizesAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Checks the shapes of one op's operands and results, emitting an op error
/// on the first violation.
class ShapeChecker {
public:
  explicit ShapeChecker(Operation *op) : op(op) {}

  /// `value` must be a ranked tensor of `rank` dimensions; `dims` spells them
  /// out for the message, e.g. "[T, H, K]".
  LogicalResult rank(Value value, StringRef name, int64_t rank, StringRef dims);

  /// Dimension `index` of `value` (the `meaning`, e.g. "channels") must be
  /// `expected` (dynamic sizes always pass).
  LogicalResult dim(Value value, StringRef name, unsigned index,
                    int64_t expected, StringRef meaning);

  /// Dimension `index` of `value` (the `meaning`) must not be 0, for sizes
  /// that are divided by or that make the op degenerate (dynamic passes).
  LogicalResult atLeastOne(Value value, StringRef name, unsigned index,
                           StringRef meaning);

  /// Dimension 0 of `value` is a token count and must agree with every other
  /// value passed to `tokens` on this checker.
  LogicalResult tokens(Value value, StringRef name);

  /// The token counts seen so far must agree with the packing's buffer
  /// rows when they are known (getKnownBufferTokens).
  LogicalResult packingTokens(Value packing);

  /// `value`'s element type must equal `other`'s.
  LogicalResult sameElementType(Value value, StringRef name, Value other,
                                StringRef otherName);

  /// Weights and states are replicated or per-sequence, never token-sharded:
  /// `value` must carry no #gdn.seq encoding.
  LogicalResult notTokenSharded(Value value, StringRef name);

  /// Size of dimension `index` of `value` (kDynamic when unknown).
  static int64_t size(Value value, unsigned index);

private:
  Operation *op;
  int64_t tokenCount = ShapedType::kDynamic;
  std::string tokenSource;
};

/// The delta rule's options, shared by gdn.delta_rule and gdn.layer: a
/// positive power-of-two chunk size and, when given, a positive scale.
LogicalResult verifyChunkAndScale(Operation *op, int64_t chunk,
                                  FloatAttr scale);

//===----------------------------------------------------------------------===//
// Op signatures
//===----------------------------------------------------------------------===//
//
// The invariants of each primitive op, over the values that play its roles,
// so that an op and its gradient op (GdnGradientOps.td), where the cotangent
// of a result plays the result's role, check them in one place. Optional
// values may be null.

LogicalResult verifyCausalConv1dSignature(Operation *op, Value x, Value weight,
                                          Value packing, Value bias,
                                          Value initialState, Value y,
                                          Value finalState, int64_t width);
LogicalResult verifyL2NormSignature(Operation *op, Value x, double eps);
LogicalResult verifyGatesSignature(Operation *op, Value a, Value b, Value aLog,
                                   Value dtBias, Value g, Value beta);
LogicalResult verifyDeltaRuleSignature(Operation *op, Value q, Value k, Value v,
                                       Value g, Value beta, Value packing,
                                       Value initialState, Value o,
                                       Value finalState, int64_t chunkSize,
                                       FloatAttr scale);
LogicalResult verifyGatedRMSNormSignature(Operation *op, Value x, Value z,
                                          Value weight, Value y, double eps);
LogicalResult verifyLinearSignature(Operation *op, Value x, Value weight,
                                    Value y);
LogicalResult verifySplitQkvzSignature(Operation *op, Value qkvz, Value ba,
                                       Value mixedQkv, Value z, Value b,
                                       Value a, int64_t keyHeads,
                                       int64_t headDimK);
LogicalResult verifySplitQkvSignature(Operation *op, Value mixedQkv, Value q,
                                      Value k, Value v);

} // namespace mlir::gdn

#endif // GDN_LIB_DIALECT_GDN_SHAPECHECKS_H
