//===- SequenceLayout.h - layouts of packed tensors -------------*- C++ -*-===//
//
// A packed activation's distribution across ranks lives in its tensor encoding
// (#gdn.seq or #gdn.heads; none means natural order on one rank). These helpers
// give every verifier and pass one definition of "the layout of a value" and of
// when two layouts agree, so `#gdn.seq<natural>` and no encoding are the same.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_SEQUENCELAYOUT_H
#define GDN_DIALECT_GDN_SEQUENCELAYOUT_H

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace mlir::gdn {

/// The layout of a tensor type, normalised: `#gdn.seq<natural>` and a tensor
/// with no encoding both give a null attribute. Non-gdn encodings are
/// returned unchanged.
Attribute getSequenceLayout(Type type);

/// Number of ranks a tensor of this type is distributed over (1 if natural).
int64_t getLayoutRanks(Type type);

/// Prints a layout for diagnostics: `natural` for the null layout.
std::string describeLayout(Attribute layout);

/// Checks that all `values` (activations of one op) share one layout; on a
/// mismatch emits "<what> must share one sequence layout, but found A and B".
LogicalResult verifySameSequenceLayout(Operation *op, ValueRange values,
                                       llvm::StringRef what);

} // namespace mlir::gdn

#endif // GDN_DIALECT_GDN_SEQUENCELAYOUT_H
