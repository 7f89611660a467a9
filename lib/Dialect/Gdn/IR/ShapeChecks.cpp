//===- ShapeChecks.cpp - shape diagnostics for gdn verifiers --------------===//
//
// See ShapeChecks.h: one message format for every shape error of the dialect.
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::gdn;

int64_t ShapeChecker::size(Value value, unsigned index) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getDimSize(index);
}

LogicalResult ShapeChecker::rank(Value value, StringRef name, int64_t rank,
                                 StringRef dims) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (type && type.getRank() == rank)
    return success();
  return op->emitOpError() << name << " must be a rank-" << rank << " tensor "
                           << dims << ", found " << value.getType();
}

LogicalResult ShapeChecker::dim(Value value, StringRef name, unsigned index,
                                int64_t expected, StringRef meaning) {
  int64_t found = size(value, index);
  if (sizesAgree(found, expected))
    return success();
  return op->emitOpError() << name << " dimension " << index << " (" << meaning
                           << ") must be " << expected << ", found " << found;
}

LogicalResult ShapeChecker::atLeastOne(Value value, StringRef name,
                                       unsigned index, StringRef meaning) {
  int64_t found = size(value, index);
  if (ShapedType::isDynamic(found) || found >= 1)
    return success();
  return op->emitOpError() << name << " dimension " << index << " (" << meaning
                           << ") must be >= 1, found " << found;
}

LogicalResult ShapeChecker::tokens(Value value, StringRef name) {
  int64_t found = size(value, 0);
  if (ShapedType::isDynamic(found))
    return success();
  if (ShapedType::isDynamic(tokenCount)) {
    tokenCount = found;
    tokenSource = name.str();
    return success();
  }
  if (found == tokenCount)
    return success();
  return op->emitOpError() << name << " has " << found << " tokens but "
                           << tokenSource << " has " << tokenCount
                           << "; all activations of one op must cover the "
                              "same tokens";
}

LogicalResult ShapeChecker::packingTokens(Value packing) {
  std::optional<int64_t> known = getKnownBufferTokens(packing);
  if (!known || ShapedType::isDynamic(tokenCount) || *known == tokenCount)
    return success();
  return op->emitOpError() << tokenSource << " has " << tokenCount
                           << " tokens but the packing describes " << *known
                           << (cast<PackingType>(packing.getType())
                                       .hasStaticTokens()
                                   ? ""
                                   : " (its constant offsets)");
}

LogicalResult ShapeChecker::sameElementType(Value value, StringRef name,
                                            Value other, StringRef otherName) {
  Type found = getElementTypeOrSelf(value.getType());
  Type expected = getElementTypeOrSelf(other.getType());
  if (found == expected)
    return success();
  return op->emitOpError() << name << " element type (" << found
                           << ") must match " << otherName << " (" << expected
                           << ")";
}

LogicalResult mlir::gdn::verifyChunkAndScale(Operation *op, int64_t chunk,
                                             FloatAttr scale) {
  if (chunk <= 0 || (chunk & (chunk - 1)) != 0)
    return op->emitOpError()
           << "chunk_size must be a positive power of two, found " << chunk;
  // Written so that NaN fails too.
  if (scale && !(scale.getValueAsDouble() > 0.0))
    return op->emitOpError()
           << "scale must be > 0, found " << scale.getValueAsDouble();
  return success();
}

LogicalResult ShapeChecker::notTokenSharded(Value value, StringRef name) {
  Attribute layout = getSequenceLayout(value.getType());
  if (!isa_and_nonnull<SeqLayoutAttr>(layout))
    return success();
  return op->emitOpError() << name << " is not a token-indexed activation and "
                           << "must not carry a sequence layout, found "
                           << describeLayout(layout);
}
