//===- SequenceLayout.cpp - layouts of packed tensors ---------------------===//
//
// One definition of a tensor's distribution across ranks, shared by every
// verifier and pass (see SequenceLayout.h).
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gdn;

Attribute mlir::gdn::getSequenceLayout(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return {};
  Attribute encoding = tensor.getEncoding();
  if (auto seq = dyn_cast_or_null<SeqLayoutAttr>(encoding))
    if (!seq.isSharded())
      return {};
  return encoding;
}

int64_t mlir::gdn::getLayoutRanks(Type type) {
  Attribute layout = getSequenceLayout(type);
  if (auto seq = dyn_cast_or_null<SeqLayoutAttr>(layout))
    return seq.getTotalRanks();
  if (auto heads = dyn_cast_or_null<HeadsLayoutAttr>(layout))
    return heads.getRanks();
  return 1;
}

std::string mlir::gdn::describeLayout(Attribute layout) {
  if (!layout)
    return "natural";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << layout;
  return text;
}

LogicalResult mlir::gdn::verifySameSequenceLayout(Operation *op,
                                                  ValueRange values,
                                                  StringRef what) {
  if (values.empty())
    return success();
  Attribute first = getSequenceLayout(values.front().getType());
  for (Value value : values.drop_front()) {
    Attribute layout = getSequenceLayout(value.getType());
    if (layout != first)
      return op->emitOpError()
             << what << " must share one sequence layout, but found "
             << describeLayout(first) << " and " << describeLayout(layout)
             << "; insert gdn.convert_layout to change a layout";
  }
  return success();
}
