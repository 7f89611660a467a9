//===- Tensor.cpp - float64 tensors with a storage precision --------------===//
//
// Storage rounding is the one place where the interpreter's numbers differ
// from exact float64 arithmetic, so it is done carefully: double -> float by
// round-to-odd, then float -> bf16 by round-to-nearest-even, which together
// round exactly once (float keeps more than bf16's bits + 2).
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::gdn::interp;

llvm::Expected<ElementKind> mlir::gdn::interp::getElementKind(Type type) {
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isInteger(32))
    return ElementKind::I32;
  if (type.isInteger(64) || type.isIndex())
    return ElementKind::I64;
  std::string name;
  llvm::raw_string_ostream os(name);
  os << type;
  return llvm::createStringError(
      "the interpreter supports bf16, f16, f32, f64, i32, i64 and index "
      "elements, found " +
      name);
}

const char *mlir::gdn::interp::getElementKindName(ElementKind kind) {
  switch (kind) {
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::F16:
    return "f16";
  case ElementKind::F32:
    return "f32";
  case ElementKind::F64:
    return "f64";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I64:
    return "i64";
  }
  return "?";
}

/// double -> float, rounding to odd: truncate towards zero and set the last
/// bit when inexact. A later rounding to fewer bits is then correct.
static float roundToOddFloat(double value) {
  float nearest = static_cast<float>(value);
  if (static_cast<double>(nearest) == value || std::isnan(value) ||
      std::isinf(nearest))
    return nearest;
  float truncated = nearest;
  if (std::fabs(static_cast<double>(nearest)) > std::fabs(value))
    truncated = std::nextafter(nearest, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &truncated, sizeof(bits));
  bits |= 1u;
  std::memcpy(&truncated, &bits, sizeof(bits));
  return truncated;
}

static double roundToBF16(double value) {
  if (std::isnan(value))
    return value;
  float f = roundToOddFloat(value);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  bits = (bits + rounding) & 0xFFFF0000u;
  std::memcpy(&f, &bits, sizeof(bits));
  return f;
}

static double roundToF16(double value) {
  llvm::APFloat apf(value);
  bool losesInfo;
  apf.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
              &losesInfo);
  apf.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &losesInfo);
  return apf.convertToDouble();
}

double mlir::gdn::interp::roundToStorage(double value, ElementKind kind) {
  switch (kind) {
  case ElementKind::BF16:
    return roundToBF16(value);
  case ElementKind::F16:
    return roundToF16(value);
  case ElementKind::F32:
    return static_cast<double>(static_cast<float>(value));
  case ElementKind::F64:
    return value;
  case ElementKind::I32:
  case ElementKind::I64:
    return std::nearbyint(value);
  }
  return value;
}

Tensor::Tensor(ElementKind kind, std::vector<int64_t> shape)
    : kind(kind), shape(std::move(shape)) {
  int64_t count = 1;
  for (int64_t size : this->shape)
    count *= size;
  data.assign(static_cast<size_t>(count), 0.0);
}

void Tensor::roundToStorage() {
  if (kind == ElementKind::F64)
    return;
  for (double &value : data)
    value = interp::roundToStorage(value, kind);
}

std::vector<int64_t> Tensor::toIntegers() const {
  std::vector<int64_t> result(data.size());
  for (size_t i = 0; i < data.size(); ++i)
    result[i] = static_cast<int64_t>(data[i]);
  return result;
}

std::string Tensor::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (int64_t size : shape)
    os << size << "x";
  os << getElementKindName(kind);
  return text;
}
