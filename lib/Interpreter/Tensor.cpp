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
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <unistd.h>

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

// Callers check the shape first (checkElementCount) where it comes from
// outside the program: signatures, generated and .npy inputs.
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

llvm::Expected<std::vector<int64_t>>
Tensor::toIntegers(llvm::StringRef name) const {
  if (auto error = checkStorable(data, ElementKind::I64, name))
    return std::move(error);
  std::vector<int64_t> result(data.size());
  for (size_t i = 0; i < data.size(); ++i)
    result[i] = static_cast<int64_t>(data[i]);
  return result;
}

/// Bytes of physical memory, or 0 when the system does not say (asked
/// once: the interpreter checks every op's result against it).
static uint64_t getPhysicalMemory() {
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES),
               pageSize = sysconf(_SC_PAGESIZE);
    return pages > 0 && pageSize > 0 ? static_cast<uint64_t>(pages) * pageSize
                                     : uint64_t(0);
  }();
  return bytes;
}

llvm::Expected<int64_t>
mlir::gdn::interp::checkElementCount(llvm::ArrayRef<int64_t> shape,
                                     const llvm::Twine &what) {
  auto describeShape = [&] {
    std::string text;
    for (int64_t size : shape)
      text += (text.empty() ? "" : "x") + std::to_string(size);
    return text.empty() ? std::string("a scalar") : text;
  };
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0)
      return llvm::createStringError(what + " has a negative size (" +
                                     describeShape() + ")");
    if (size != 0 && count > std::numeric_limits<int64_t>::max() / size)
      return llvm::createStringError(
          what + " (" + describeShape() +
          ") has more elements than int64 counts; the interpreter runs "
          "tensors that fit in memory");
    count *= size;
  }
  const uint64_t memory = getPhysicalMemory();
  if (memory && static_cast<uint64_t>(count) > memory / sizeof(double))
    return llvm::createStringError(
        what + " (" + describeShape() + ", " + llvm::Twine(count) +
        " elements) needs " + llvm::Twine(count / (1 << 27)) +
        " GiB as float64, more than this machine's " +
        llvm::Twine(memory >> 30) +
        " GiB; run a smaller shape (fewer tokens, heads or channels)");
  return count;
}

llvm::Error mlir::gdn::interp::checkStorable(llvm::ArrayRef<double> values,
                                             ElementKind kind,
                                             const llvm::Twine &what) {
  double low, high;
  switch (kind) {
  case ElementKind::I32:
    low = std::numeric_limits<int32_t>::min();
    high = std::numeric_limits<int32_t>::max();
    break;
  case ElementKind::I64:
    // The doubles that convert to int64 exactly: below 2^63.
    low = -0x1p63;
    high = 0x1p63 - 1024.0;
    break;
  default:
    return llvm::Error::success();
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const double value = values[i];
    if (std::isfinite(value) && value == std::trunc(value) && value >= low &&
        value <= high)
      continue;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << what << "[" << i << "] = " << llvm::format("%.15g", value);
    if (std::isfinite(value) && value == std::trunc(value))
      os << " is outside the range of " << getElementKindName(kind)
         << "; give values that fit";
    else
      os << " is not a whole number; integer elements (offsets, counts) "
            "must be";
    return llvm::createStringError(text);
  }
  return llvm::Error::success();
}

std::string Tensor::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (int64_t size : shape)
    os << size << "x";
  os << getElementKindName(kind);
  return text;
}
