//===- GdnOps.cpp - gdn primitive op verifiers ----------------------------===//
//
// The static invariants of docs/spec.md, one verifier per op: ranks, head
// counts (GQA divisibility), K/V dims consistent across q, k, v and states,
// conv weight against width and channels, shared sequence layouts, and the
// rules on constant cu_seqlens. The composite gdn.layer is in LayerOp.cpp.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

#include "ShapeChecks.h"
#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Support/PackingValidation.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::gdn;

#define GET_OP_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnOps.cpp.inc"

/// Reads a constant int tensor's elements, or returns false if `value` is
/// not a compile-time constant.
static bool getConstantOffsets(Value value, SmallVectorImpl<int64_t> &out) {
  DenseIntElementsAttr dense;
  if (!matchPattern(value, m_Constant(&dense)))
    return false;
  for (const APInt &element : dense.getValues<APInt>())
    out.push_back(element.getSExtValue());
  return true;
}

//===----------------------------------------------------------------------===//
// PackingOp
//===----------------------------------------------------------------------===//

std::optional<int64_t> mlir::gdn::getKnownBufferTokens(Value packing) {
  auto type = cast<PackingType>(packing.getType());
  if (type.hasStaticTokens())
    return type.getTokens();
  // A packing made from constant offsets describes their last entry even
  // when its type leaves the token count dynamic.
  auto op = packing.getDefiningOp<PackingOp>();
  SmallVector<int64_t> offsets;
  if (!op || !getConstantOffsets(op.getCuPadded() ? op.getCuPadded()
                                                  : op.getCuSeqlens(),
                                 offsets) ||
      offsets.empty())
    return std::nullopt;
  return offsets.back();
}

LogicalResult PackingOp::verify() {
  PackingType type = getPacking().getType();
  auto checkLength = [&](Value offsets, StringRef name) -> LogicalResult {
    int64_t entries = ShapeChecker::size(offsets, 0);
    if (!type.hasStaticSeqs() || ShapedType::isDynamic(entries) ||
        entries == type.getSeqs() + 1)
      return success();
    return emitOpError() << name << " has " << entries
                         << " entries but the packing has seqs = "
                         << type.getSeqs() << ", which needs "
                         << type.getSeqs() + 1;
  };
  if (failed(checkLength(getCuSeqlens(), "cu_seqlens")))
    return failure();
  if (type.getPadded() != static_cast<bool>(getCuPadded()))
    return emitOpError() << (type.getPadded()
                                 ? "the packing type is padded but no "
                                   "cu_padded operand is given"
                                 : "cu_padded is given but the packing type "
                                   "lacks 'padded'");
  if (getCuPadded() && failed(checkLength(getCuPadded(), "cu_padded")))
    return failure();

  // Constant metadata is validated now rather than at run time; each offset
  // array that is constant is checked, even when the other one is not.
  SmallVector<int64_t> cuSeqlens, cuPadded;
  bool seqlensKnown = getConstantOffsets(getCuSeqlens(), cuSeqlens);
  bool paddedKnown =
      getCuPadded() && getConstantOffsets(getCuPadded(), cuPadded);
  int64_t tokens = type.hasStaticTokens() ? type.getTokens() : -1;
  std::optional<std::string> error;
  if (!getCuPadded()) {
    if (seqlensKnown)
      error = checkOffsets(cuSeqlens, tokens, "cu_seqlens");
  } else if (seqlensKnown && paddedKnown) {
    error = checkPaddedOffsets(cuSeqlens, cuPadded, tokens);
  } else if (paddedKnown) {
    error = checkOffsets(cuPadded, tokens, "cu_padded");
  } else if (seqlensKnown) {
    error = checkOffsets(cuSeqlens, /*expectedTotal=*/-1, "cu_seqlens");
    // The real tokens must fit in the buffer even when the slots are unknown.
    if (!error && tokens >= 0 && cuSeqlens.back() > tokens)
      error = ("cu_seqlens[" + Twine(cuSeqlens.size() - 1) +
               "] = " + Twine(cuSeqlens.back()) +
               " exceeds the padded buffer size tokens = " + Twine(tokens) +
               "; the real tokens must fit in the buffer")
                  .str();
  }
  if (!error && seqlensKnown && type.hasMaxLen())
    error = checkMaxLength(cuSeqlens, type.getMaxLen());
  if (error)
    return emitOpError() << *error;
  return success();
}

//===----------------------------------------------------------------------===//
// CausalConv1dOp
//===----------------------------------------------------------------------===//

LogicalResult mlir::gdn::verifyCausalConv1dSignature(
    Operation *op, Value x, Value weight, Value packingValue, Value bias,
    Value initialState, Value y, Value finalState, int64_t width) {
  auto packing = cast<PackingType>(packingValue.getType());
  ShapeChecker check(op);
  if (failed(check.rank(x, "x", 2, "[T, C]")) ||
      failed(check.rank(weight, "weight", 2, "[C, W]")) ||
      failed(check.rank(y, "y", 2, "[T, C]")))
    return failure();
  int64_t channels = ShapeChecker::size(x, 1);
  if (failed(check.dim(weight, "weight", 0, channels, "channels")) ||
      failed(check.dim(weight, "weight", 1, width, "width")) ||
      failed(check.dim(y, "y", 1, channels, "channels")) ||
      failed(check.tokens(x, "x")) || failed(check.tokens(y, "y")) ||
      failed(check.packingTokens(packingValue)) ||
      failed(check.notTokenSharded(weight, "weight")))
    return failure();
  // y's element type is free: the conv computes in fp32 and stores y once in
  // its own type (an fp32 projection output feeds a bf16 conv output).
  if (bias)
    if (failed(check.rank(bias, "bias", 1, "[C]")) ||
        failed(check.dim(bias, "bias", 0, channels, "channels")) ||
        failed(check.notTokenSharded(bias, "bias")))
      return failure();
  auto checkState = [&](Value state, StringRef name) -> LogicalResult {
    if (!state)
      return success();
    if (failed(check.rank(state, name, 3, "[N, C, W-1]")) ||
        failed(check.dim(state, name, 0, packing.getSeqs(), "sequences")) ||
        failed(check.dim(state, name, 1, channels, "channels")) ||
        failed(check.dim(state, name, 2, width - 1, "width - 1")))
      return failure();
    return check.notTokenSharded(state, name);
  };
  if (failed(checkState(initialState, "initial_state")) ||
      failed(checkState(finalState, "final_state")))
    return failure();
  return verifySameSequenceLayout(op, {x, y}, "x and y");
}

LogicalResult CausalConv1dOp::verify() {
  return verifyCausalConv1dSignature(
      *this, getX(), getWeight(), getPacking(), getBias(), getInitialState(),
      getY(), getFinalState(), getWidth());
}

//===----------------------------------------------------------------------===//
// L2NormOp
//===----------------------------------------------------------------------===//

LogicalResult mlir::gdn::verifyL2NormSignature(Operation *op, Value x,
                                               double eps) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 1)
    return op->emitOpError()
           << "x must have a dimension to normalise, found " << type;
  // Written so that NaN fails too.
  if (!(eps >= 0.0))
    return op->emitOpError() << "eps must be >= 0, found " << eps;
  return success();
}

LogicalResult L2NormOp::verify() {
  return verifyL2NormSignature(*this, getX(), getEps().convertToDouble());
}

//===----------------------------------------------------------------------===//
// GatesOp
//===----------------------------------------------------------------------===//

LogicalResult mlir::gdn::verifyGatesSignature(Operation *op, Value a, Value b,
                                              Value aLog, Value dtBias, Value g,
                                              Value beta) {
  ShapeChecker check(op);
  if (failed(check.rank(a, "a", 2, "[T, HV]")) ||
      failed(check.rank(b, "b", 2, "[T, HV]")) ||
      failed(check.rank(aLog, "a_log", 1, "[HV]")) ||
      failed(check.rank(dtBias, "dt_bias", 1, "[HV]")) ||
      failed(check.rank(g, "g", 2, "[T, HV]")) ||
      failed(check.rank(beta, "beta", 2, "[T, HV]")))
    return failure();
  int64_t heads = ShapeChecker::size(a, 1);
  if (failed(check.dim(b, "b", 1, heads, "value heads")) ||
      failed(check.dim(aLog, "a_log", 0, heads, "value heads")) ||
      failed(check.dim(dtBias, "dt_bias", 0, heads, "value heads")) ||
      failed(check.dim(g, "g", 1, heads, "value heads")) ||
      failed(check.dim(beta, "beta", 1, heads, "value heads")) ||
      failed(check.tokens(a, "a")) || failed(check.tokens(b, "b")) ||
      failed(check.tokens(g, "g")) || failed(check.tokens(beta, "beta")) ||
      failed(check.notTokenSharded(aLog, "a_log")) ||
      failed(check.notTokenSharded(dtBias, "dt_bias")))
    return failure();
  return verifySameSequenceLayout(op, {a, b, g, beta}, "a, b, g and beta");
}

LogicalResult GatesOp::verify() {
  return verifyGatesSignature(*this, getA(), getB(), getALog(), getDtBias(),
                              getG(), getBeta());
}

//===----------------------------------------------------------------------===//
// DeltaRuleOp
//===----------------------------------------------------------------------===//

double DeltaRuleOp::getEffectiveScale() {
  if (FloatAttr scale = getScaleAttr())
    return scale.getValueAsDouble();
  return getDefaultDeltaRuleScale(getQ().getType().getDimSize(2));
}

double mlir::gdn::getDefaultDeltaRuleScale(int64_t headDimK) {
  return 1.0 / std::sqrt(static_cast<double>(headDimK));
}

bool mlir::gdn::isNarrowerFloat(Type narrow, Type wide) {
  return isa<FloatType>(narrow) && isa<FloatType>(wide) &&
         narrow.getIntOrFloatBitWidth() < wide.getIntOrFloatBitWidth();
}

LogicalResult mlir::gdn::verifyDeltaRuleSignature(
    Operation *op, Value q, Value k, Value v, Value g, Value beta,
    Value packingValue, Value initialState, Value o, Value finalState,
    int64_t chunkSize, FloatAttr scale) {
  auto packing = cast<PackingType>(packingValue.getType());
  ShapeChecker check(op);
  if (failed(check.rank(q, "q", 3, "[T, H, K]")) ||
      failed(check.rank(k, "k", 3, "[T, H, K]")) ||
      failed(check.rank(v, "v", 3, "[T, HV, V]")) ||
      failed(check.rank(g, "g", 2, "[T, HV]")) ||
      failed(check.rank(beta, "beta", 2, "[T, HV]")) ||
      failed(check.rank(o, "o", 3, "[T, HV, V]")) ||
      (finalState &&
       failed(check.rank(finalState, "final_state", 4, "[N, HV, K, V]"))))
    return failure();
  int64_t keyHeads = ShapeChecker::size(q, 1);
  int64_t headDimK = ShapeChecker::size(q, 2);
  int64_t valueHeads = ShapeChecker::size(v, 1);
  int64_t headDimV = ShapeChecker::size(v, 2);
  // Zero key heads would divide by zero below, and K = 0 has no K^-1/2.
  if (failed(check.atLeastOne(q, "q", 1, "key heads")) ||
      failed(check.atLeastOne(q, "q", 2, "head dim K")))
    return failure();
  if (!ShapedType::isDynamic(keyHeads) && !ShapedType::isDynamic(valueHeads) &&
      valueHeads % keyHeads != 0)
    return op->emitOpError()
           << "value heads (" << valueHeads
           << ") must be a multiple of key heads (" << keyHeads << ")";
  if (ShapedType::isDynamic(headDimK) && !scale)
    return op->emitOpError()
           << "the default scale K^-1/2 needs a static head dim "
              "K; give 'scale' explicitly";
  if (failed(check.dim(k, "k", 1, keyHeads, "key heads")) ||
      failed(check.dim(k, "k", 2, headDimK, "head dim K")) ||
      failed(check.dim(g, "g", 1, valueHeads, "value heads")) ||
      failed(check.dim(beta, "beta", 1, valueHeads, "value heads")) ||
      failed(check.dim(o, "o", 1, valueHeads, "value heads")) ||
      failed(check.dim(o, "o", 2, headDimV, "head dim V")) ||
      failed(check.tokens(q, "q")) || failed(check.tokens(k, "k")) ||
      failed(check.tokens(v, "v")) || failed(check.tokens(g, "g")) ||
      failed(check.tokens(beta, "beta")) || failed(check.tokens(o, "o")) ||
      failed(check.packingTokens(packingValue)) ||
      failed(check.sameElementType(o, "o", v, "v")))
    return failure();
  auto checkState = [&](Value state, StringRef name) -> LogicalResult {
    if (!state)
      return success();
    if (failed(check.rank(state, name, 4, "[N, HV, K, V]")) ||
        failed(check.dim(state, name, 0, packing.getSeqs(), "sequences")) ||
        failed(check.dim(state, name, 1, valueHeads, "value heads")) ||
        failed(check.dim(state, name, 2, headDimK, "head dim K")) ||
        failed(check.dim(state, name, 3, headDimV, "head dim V")))
      return failure();
    return check.notTokenSharded(state, name);
  };
  if (failed(checkState(initialState, "initial_state")) ||
      failed(checkState(finalState, "final_state")))
    return failure();
  if (failed(verifyChunkAndScale(op, chunkSize, scale)))
    return failure();
  return verifySameSequenceLayout(op, {q, k, v, g, beta, o},
                                  "q, k, v, g, beta and o");
}

LogicalResult DeltaRuleOp::verify() {
  return verifyDeltaRuleSignature(*this, getQ(), getK(), getV(), getG(),
                                  getBeta(), getPacking(),
                                  getInitialState(), getO(), getFinalState(),
                                  getChunkSize(), getScaleAttr());
}

//===----------------------------------------------------------------------===//
// GatedRMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult mlir::gdn::verifyGatedRMSNormSignature(Operation *op, Value x,
                                                     Value z, Value weight,
                                                     Value y, double eps) {
  ShapeChecker check(op);
  if (failed(check.rank(x, "x", 3, "[T, HV, V]")) ||
      failed(check.rank(z, "z", 3, "[T, HV, V]")) ||
      failed(check.rank(y, "y", 3, "[T, HV, V]")) ||
      failed(check.rank(weight, "weight", 1, "[V]")))
    return failure();
  int64_t heads = ShapeChecker::size(x, 1);
  int64_t headDimV = ShapeChecker::size(x, 2);
  if (failed(check.dim(z, "z", 1, heads, "value heads")) ||
      failed(check.dim(z, "z", 2, headDimV, "head dim V")) ||
      failed(check.dim(y, "y", 1, heads, "value heads")) ||
      failed(check.dim(y, "y", 2, headDimV, "head dim V")) ||
      failed(check.dim(weight, "weight", 0, headDimV, "head dim V")) ||
      failed(check.tokens(x, "x")) || failed(check.tokens(z, "z")) ||
      failed(check.tokens(y, "y")) ||
      failed(check.notTokenSharded(weight, "weight")))
    return failure();
  // Written so that NaN fails too.
  if (!(eps >= 0.0))
    return op->emitOpError() << "eps must be >= 0, found " << eps;
  return verifySameSequenceLayout(op, {x, z, y}, "x, z and y");
}

LogicalResult GatedRMSNormOp::verify() {
  return verifyGatedRMSNormSignature(*this, getX(), getZ(), getWeight(), getY(),
                                     getEps().convertToDouble());
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

/// Product of all dimensions after the token dimension, or kDynamic.
static int64_t featureSize(RankedTensorType type) {
  int64_t product = 1;
  for (int64_t size : type.getShape().drop_front()) {
    if (ShapedType::isDynamic(size))
      return ShapedType::kDynamic;
    product *= size;
  }
  return product;
}

LogicalResult mlir::gdn::verifyLinearSignature(Operation *op, Value x,
                                               Value weight, Value y) {
  ShapeChecker check(op);
  if (cast<RankedTensorType>(x.getType()).getRank() < 2 ||
      cast<RankedTensorType>(y.getType()).getRank() < 2)
    return op->emitOpError()
           << "x and y must be [T, features...] tensors of rank "
              ">= 2, found "
           << cast<RankedTensorType>(x.getType()) << " and "
           << cast<RankedTensorType>(y.getType());
  if (failed(check.rank(weight, "weight", 2, "[Out, In]")) ||
      failed(check.dim(weight, "weight", 1,
                       featureSize(cast<RankedTensorType>(x.getType())),
                       "In = features of x")) ||
      failed(check.dim(weight, "weight", 0,
                       featureSize(cast<RankedTensorType>(y.getType())),
                       "Out = features of y")) ||
      failed(check.tokens(x, "x")) || failed(check.tokens(y, "y")) ||
      failed(check.notTokenSharded(weight, "weight")))
    return failure();
  return verifySameSequenceLayout(op, {x, y}, "x and y");
}

LogicalResult LinearOp::verify() {
  return verifyLinearSignature(*this, getX(), getWeight(), getY());
}

//===----------------------------------------------------------------------===//
// SplitQkvzOp
//===----------------------------------------------------------------------===//

LogicalResult mlir::gdn::verifySplitQkvzSignature(Operation *op, Value qkvz,
                                                  Value ba, Value mixedQkv,
                                                  Value z, Value b, Value a,
                                                  int64_t keyHeads,
                                                  int64_t headDimK) {
  ShapeChecker check(op);
  if (failed(check.rank(qkvz, "qkvz", 2, "[T, H * (2K + 2rV)]")) ||
      failed(check.rank(ba, "ba", 2, "[T, 2HV]")) ||
      failed(check.rank(mixedQkv, "mixed_qkv", 2, "[T, 2HK + HV*V]")) ||
      failed(check.rank(z, "z", 3, "[T, HV, V]")) ||
      failed(check.rank(b, "b", 2, "[T, HV]")) ||
      failed(check.rank(a, "a", 2, "[T, HV]")))
    return failure();
  int64_t valueHeads = ShapeChecker::size(z, 1);
  int64_t headDimV = ShapeChecker::size(z, 2);
  if (ShapedType::isDynamic(valueHeads) || ShapedType::isDynamic(headDimV))
    return op->emitOpError()
           << "z must have static heads and head dim to fix the "
              "interleaving, found "
           << z.getType();
  if (valueHeads % keyHeads != 0)
    return op->emitOpError()
           << "value heads (" << valueHeads
           << ") must be a multiple of key heads (" << keyHeads << ")";
  int64_t valueDim = valueHeads * headDimV;
  if (failed(check.dim(qkvz, "qkvz", 1, 2 * keyHeads * headDimK + 2 * valueDim,
                       "2HK + 2HV*V")) ||
      failed(check.dim(ba, "ba", 1, 2 * valueHeads, "2HV")) ||
      failed(check.dim(mixedQkv, "mixed_qkv", 1,
                       2 * keyHeads * headDimK + valueDim, "2HK + HV*V")) ||
      failed(check.dim(b, "b", 1, valueHeads, "value heads")) ||
      failed(check.dim(a, "a", 1, valueHeads, "value heads")))
    return failure();
  if (failed(check.tokens(qkvz, "qkvz")) || failed(check.tokens(ba, "ba")) ||
      failed(check.tokens(mixedQkv, "mixed_qkv")) ||
      failed(check.tokens(z, "z")) || failed(check.tokens(b, "b")) ||
      failed(check.tokens(a, "a")))
    return failure();
  // The op only moves elements, so it keeps their type.
  if (failed(check.sameElementType(mixedQkv, "mixed_qkv", qkvz, "qkvz")) ||
      failed(check.sameElementType(z, "z", qkvz, "qkvz")) ||
      failed(check.sameElementType(b, "b", ba, "ba")) ||
      failed(check.sameElementType(a, "a", ba, "ba")))
    return failure();
  return verifySameSequenceLayout(op, {qkvz, ba, mixedQkv, z, b, a},
                                  "qkvz, ba, mixed_qkv, z, b and a");
}

LogicalResult SplitQkvzOp::verify() {
  return verifySplitQkvzSignature(*this, getQkvz(), getBa(), getMixedQkv(),
                                  getZ(), getB(), getA(), getKeyHeads(),
                                  getHeadDimK());
}

//===----------------------------------------------------------------------===//
// RegroupSectionsOp
//===----------------------------------------------------------------------===//

LogicalResult RegroupSectionsOp::verify() {
  auto type = getX().getType();
  if (getY().getType() != type)
    return emitOpError() << "the result type must equal the input's (" << type
                         << "): the op only permutes";
  if (getDim() >= type.getRank())
    return emitOpError() << "dim = " << getDim() << " is out of range for a rank-"
                         << type.getRank() << " tensor";
  if (getSectionSizes().empty())
    return emitOpError() << "needs at least one section";
  if (getSequenceLayout(type) && getDim() == 0)
    return emitOpError() << "permutes a feature dimension; dimension 0 of a "
                            "token-sharded tensor holds tokens";
  int64_t total = 0;
  for (int64_t size : getSectionSizes()) {
    if (size <= 0 || size % getGroups() != 0)
      return emitOpError() << "every section size must be a positive multiple "
                              "of groups = "
                           << getGroups() << ", found " << size;
    if (size > std::numeric_limits<int32_t>::max() - total)
      return emitOpError() << "the sections cover more than 2^31 - 1 elements";
    total += size;
  }
  const int64_t extent = type.getDimSize(getDim());
  if (!ShapedType::isDynamic(extent) && extent != total)
    return emitOpError() << "the sections cover " << total
                         << " elements but dimension " << getDim() << " has "
                         << extent;
  return success();
}

//===----------------------------------------------------------------------===//
// SplitQkvOp
//===----------------------------------------------------------------------===//

LogicalResult mlir::gdn::verifySplitQkvSignature(Operation *op, Value mixedQkv,
                                                 Value q, Value k, Value v) {
  ShapeChecker check(op);
  if (failed(check.rank(mixedQkv, "mixed_qkv", 2, "[T, 2HK + HV*V]")) ||
      failed(check.rank(q, "q", 3, "[T, H, K]")) ||
      failed(check.rank(k, "k", 3, "[T, H, K]")) ||
      failed(check.rank(v, "v", 3, "[T, HV, V]")))
    return failure();
  auto qType = cast<RankedTensorType>(q.getType()),
       vType = cast<RankedTensorType>(v.getType());
  if (ShapedType::isDynamic(qType.getDimSize(1)) ||
      ShapedType::isDynamic(qType.getDimSize(2)))
    return op->emitOpError()
           << "q must have static heads and head dim, found " << qType;
  if (ShapedType::isDynamic(vType.getDimSize(1)) ||
      ShapedType::isDynamic(vType.getDimSize(2)))
    return op->emitOpError()
           << "v must have static heads and head dim, found " << vType;
  int64_t keyHeads = qType.getDimSize(1), headDimK = qType.getDimSize(2);
  int64_t valueHeads = vType.getDimSize(1), headDimV = vType.getDimSize(2);
  if (failed(check.atLeastOne(q, "q", 1, "key heads")))
    return failure();
  if (valueHeads % keyHeads != 0)
    return op->emitOpError()
           << "value heads (" << valueHeads
           << ") must be a multiple of key heads (" << keyHeads << ")";
  if (failed(check.dim(k, "k", 1, keyHeads, "key heads")) ||
      failed(check.dim(k, "k", 2, headDimK, "head dim K")) ||
      failed(check.dim(mixedQkv, "mixed_qkv", 1,
                       2 * keyHeads * headDimK + valueHeads * headDimV,
                       "2HK + HV*V")) ||
      failed(check.tokens(mixedQkv, "mixed_qkv")) ||
      failed(check.tokens(q, "q")) || failed(check.tokens(k, "k")) ||
      failed(check.tokens(v, "v")))
    return failure();
  // The op only moves elements, so it keeps their type.
  if (failed(check.sameElementType(q, "q", mixedQkv, "mixed_qkv")) ||
      failed(check.sameElementType(k, "k", mixedQkv, "mixed_qkv")) ||
      failed(check.sameElementType(v, "v", mixedQkv, "mixed_qkv")))
    return failure();
  return verifySameSequenceLayout(op, {mixedQkv, q, k, v},
                                  "mixed_qkv, q, k and v");
}

LogicalResult SplitQkvOp::verify() {
  return verifySplitQkvSignature(*this, getMixedQkv(), getQ(), getK(), getV());
}

//===----------------------------------------------------------------------===//
// ConvertLayoutOp
//===----------------------------------------------------------------------===//

namespace {
/// The global extent of one dimension of a possibly distributed tensor.
int64_t globalSize(RankedTensorType type, unsigned dim) {
  int64_t local = type.getDimSize(dim);
  if (ShapedType::isDynamic(local))
    return local;
  Attribute layout = getSequenceLayout(type);
  if (auto seq = dyn_cast_or_null<SeqLayoutAttr>(layout); seq && dim == 0)
    return local * seq.getTotalRanks();
  if (auto heads = dyn_cast_or_null<HeadsLayoutAttr>(layout); heads && dim == 1)
    return local * heads.getRanks();
  return local;
}
} // namespace

LogicalResult ConvertLayoutOp::verify() {
  RankedTensorType source = getX().getType(), target = getY().getType();
  // The packing relates dimension 0 to tokens, so there must be one.
  if (source.getRank() < 1)
    return emitOpError() << "x must be a [T, ...] tensor of rank >= 1, found "
                         << source;
  if (source.getElementType() != target.getElementType())
    return emitOpError() << "changes only the layout; element types differ ("
                         << source.getElementType() << " vs "
                         << target.getElementType() << ")";
  for (RankedTensorType type : {source, target})
    if (auto seq = dyn_cast_or_null<SeqLayoutAttr>(getSequenceLayout(type));
        seq && seq.getInner() > 1)
      return emitOpError()
             << "cannot convert " << describeLayout(seq)
             << ": it spans the SP and CP groups; gather it over the SP "
                "group first (gdn_comm.all_gather, dim = 0)";
  if (source.getRank() != target.getRank())
    return emitOpError() << "changes only the layout; ranks differ ("
                         << source.getRank() << " vs " << target.getRank()
                         << ")";
  for (unsigned dim = 0; dim < source.getRank(); ++dim) {
    int64_t from = globalSize(source, dim), to = globalSize(target, dim);
    if (!sizesAgree(from, to))
      return emitOpError() << "source and result describe different global "
                              "tensors: dimension "
                           << dim << " is " << from << " globally in "
                           << describeLayout(getSequenceLayout(source))
                           << " but " << to << " in "
                           << describeLayout(getSequenceLayout(target));
  }
  PackingType packing = getPacking().getType();
  int64_t globalTokens = globalSize(source, 0);
  if (packing.hasStaticTokens() && !ShapedType::isDynamic(globalTokens) &&
      packing.getTokens() != globalTokens)
    return emitOpError() << "the packing describes " << packing.getTokens()
                         << " tokens but the tensor has " << globalTokens
                         << " globally";
  return success();
}
