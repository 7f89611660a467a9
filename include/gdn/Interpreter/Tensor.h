//===- Tensor.h - the reference interpreter's tensor ------------*- C++ -*-===//
//
// The interpreter computes in float64 whatever the program's dtypes are, and
// models storage precision honestly: a value stored in a bf16 tensor is
// rounded to bf16 exactly once, when it is stored. A Tensor therefore keeps
// float64 values plus the element kind its type declares.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_TENSOR_H
#define GDN_INTERPRETER_TENSOR_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::gdn::interp {

/// The storage precision of a tensor's elements.
enum class ElementKind { BF16, F16, F32, F64, I32, I64 };

/// The element kind of an MLIR element type, or an error naming the type.
llvm::Expected<ElementKind> getElementKind(Type elementType);

/// Name as in MLIR types (`bf16`, `i32`, ...).
const char *getElementKindName(ElementKind kind);

/// Rounds `value` to the nearest value representable in `kind` (ties to
/// even), computed without double rounding. Integers round to nearest.
double roundToStorage(double value, ElementKind kind);

/// The element count of a tensor of `shape`, or an error naming `what` when
/// the count overflows int64 or its float64 values (the interpreter's
/// storage) would not fit in this machine's memory.
llvm::Expected<int64_t> checkElementCount(llvm::ArrayRef<int64_t> shape,
                                          const llvm::Twine &what);

/// Checks that `values` can be stored as `kind` without changing them: for
/// integer kinds every value is a whole number within the kind's range (a
/// float .npy of offsets holding 2.7 or NaN is refused, not rounded).
/// Floating-point kinds accept anything. The error names `what`, the first
/// offending index and its value.
llvm::Error checkStorable(llvm::ArrayRef<double> values, ElementKind kind,
                          const llvm::Twine &what);

/// A dense row-major tensor of float64 values with a storage precision.
class Tensor {
public:
  Tensor() = default;
  Tensor(ElementKind kind, std::vector<int64_t> shape);

  ElementKind getKind() const { return kind; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }
  int64_t getDimSize(unsigned dim) const { return shape[dim]; }
  int64_t getNumElements() const { return static_cast<int64_t>(data.size()); }

  double *getData() { return data.data(); }
  const double *getData() const { return data.data(); }
  std::vector<double> &values() { return data; }
  const std::vector<double> &values() const { return data; }

  /// Rounds every element to the storage precision (call after computing).
  void roundToStorage();

  /// Elements as int64 (for offsets), or an error naming `name` and the
  /// first element that is not an integer (NaN, 2.7, or beyond int64).
  llvm::Expected<std::vector<int64_t>> toIntegers(llvm::StringRef name) const;

  /// Shape as MLIR prints it: `8x32xbf16`.
  std::string describe() const;

private:
  ElementKind kind = ElementKind::F64;
  std::vector<int64_t> shape;
  std::vector<double> data;
};

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_TENSOR_H
