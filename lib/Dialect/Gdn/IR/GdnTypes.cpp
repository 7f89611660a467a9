//===- GdnTypes.cpp - the packing type ------------------------------------===//
//
// Custom syntax for !gdn.packing, which reads like the shape of a tensor:
// counts may be `?`, and the flags follow as keywords.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"
#include "gdn/Support/PackingValidation.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gdn;

#define GET_TYPEDEF_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnTypes.cpp.inc"

void GdnDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "gdn/Dialect/Gdn/IR/GdnTypes.cpp.inc"
      >();
}

/// Parses `key = N` or `key = ?`.
static ParseResult parseCount(AsmParser &parser, StringRef key,
                              int64_t &value) {
  if (parser.parseKeyword(key) || parser.parseEqual())
    return failure();
  if (succeeded(parser.parseOptionalQuestion())) {
    value = ShapedType::kDynamic;
    return success();
  }
  return parser.parseInteger(value);
}

static void printCount(AsmPrinter &printer, int64_t value) {
  if (ShapedType::isDynamic(value))
    printer << "?";
  else
    printer << value;
}

Type PackingType::parse(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  int64_t seqs, tokens, maxLen = ShapedType::kDynamic;
  bool padded = false;
  if (parser.parseLess() || parseCount(parser, "seqs", seqs) ||
      parser.parseComma() || parseCount(parser, "tokens", tokens))
    return {};
  bool hasMaxLen = false;
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc flagLoc = parser.getCurrentLocation();
    if (succeeded(parser.parseOptionalKeyword("padded"))) {
      // A repeated flag is most likely a typo for another one; say so.
      if (padded) {
        parser.emitError(flagLoc, "'padded' is given twice in !gdn.packing");
        return {};
      }
      padded = true;
      continue;
    }
    if (succeeded(parser.parseOptionalKeyword("max_len"))) {
      if (hasMaxLen) {
        parser.emitError(flagLoc, "'max_len' is given twice in !gdn.packing");
        return {};
      }
      hasMaxLen = true;
      if (parser.parseEqual() || parser.parseInteger(maxLen))
        return {};
      continue;
    }
    parser.emitError(parser.getCurrentLocation(),
                     "expected 'padded' or 'max_len = N' in !gdn.packing");
    return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    seqs, tokens, padded, maxLen);
}

void PackingType::print(AsmPrinter &printer) const {
  printer << "<seqs = ";
  printCount(printer, getSeqs());
  printer << ", tokens = ";
  printCount(printer, getTokens());
  if (getPadded())
    printer << ", padded";
  if (hasMaxLen())
    printer << ", max_len = " << getMaxLen();
  printer << ">";
}

LogicalResult PackingType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t seqs, int64_t tokens, bool padded,
                                  int64_t maxLen) {
  if (!ShapedType::isDynamic(seqs) && seqs < 0)
    return emitError() << "!gdn.packing needs seqs >= 0, found " << seqs;
  if (!ShapedType::isDynamic(tokens) &&
      (tokens < 0 || tokens > kMaxPackedTokens))
    return emitError() << "!gdn.packing needs 0 <= tokens <= "
                       << kMaxPackedTokens << ", found " << tokens;
  if (!ShapedType::isDynamic(maxLen) && maxLen <= 0)
    return emitError() << "!gdn.packing needs max_len >= 1, found " << maxLen;
  return success();
}
