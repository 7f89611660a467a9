//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// A small reader and writer for the .npy format: a magic string, a version,
// a Python-literal header dict ({'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }), then the raw data. Anything else (big-endian, Fortran
// order, object arrays) is refused with a message.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/Npy.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir::gdn::interp;

static llvm::Error npyError(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError((path + ": " + message).str());
}

/// Extracts the value of `key` from the header dict, e.g. "'<f4'" or "(2, 3)".
static std::optional<llvm::StringRef> headerValue(llvm::StringRef header,
                                                  llvm::StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  llvm::StringRef rest = header.drop_front(at + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  rest = rest.ltrim();
  if (rest.starts_with("(")) {
    size_t close = rest.find(')');
    return close == llvm::StringRef::npos
               ? std::nullopt
               : std::optional(rest.take_front(close + 1));
  }
  size_t end = rest.find_first_of(",}");
  return rest.take_front(end).trim();
}

llvm::Expected<Tensor> mlir::gdn::interp::readNpy(llvm::StringRef path) {
  auto file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return npyError(path, "cannot open: " + file.getError().message());
  return parseNpy((*file)->getBuffer(), path);
}

llvm::Expected<Tensor> mlir::gdn::interp::parseNpy(llvm::StringRef bytes,
                                                   llvm::StringRef path) {
  if (!bytes.starts_with("\x93NUMPY") || bytes.size() < 10)
    return npyError(path, "not a .npy file (missing the \\x93NUMPY magic)");
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength =
        static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return npyError(path, "truncated header");
    headerLength = 0;
    for (int i = 3; i >= 0; --i)
      headerLength = (headerLength << 8) | static_cast<uint8_t>(bytes[8 + i]);
    headerStart = 12;
  } else {
    return npyError(path, "unsupported .npy version " + llvm::Twine(major));
  }
  if (bytes.size() < headerStart + headerLength)
    return npyError(path, "truncated header");
  llvm::StringRef header = bytes.substr(headerStart, headerLength);
  auto descr = headerValue(header, "descr");
  auto fortran = headerValue(header, "fortran_order");
  auto shapeText = headerValue(header, "shape");
  if (!descr || !fortran || !shapeText)
    return npyError(path, "header lacks descr, fortran_order or shape");
  if (*fortran != "False")
    return npyError(path, "Fortran-ordered arrays are not supported; save a "
                          "C-contiguous array");

  llvm::StringRef dtype = descr->trim("'\"");
  ElementKind kind;
  size_t width;
  if (dtype == "<f2") {
    kind = ElementKind::F16;
    width = 2;
  } else if (dtype == "<f4") {
    kind = ElementKind::F32;
    width = 4;
  } else if (dtype == "<f8") {
    kind = ElementKind::F64;
    width = 8;
  } else if (dtype == "<i4") {
    kind = ElementKind::I32;
    width = 4;
  } else if (dtype == "<i8") {
    kind = ElementKind::I64;
    width = 8;
  } else {
    return npyError(path, "unsupported dtype " + dtype +
                              "; use little-endian f2, f4, f8, i4 or i8");
  }

  std::vector<int64_t> shape;
  llvm::SmallVector<llvm::StringRef> pieces;
  shapeText->trim("()").split(pieces, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef piece : pieces) {
    int64_t size;
    if (piece.trim().getAsInteger(10, size) || size < 0)
      return npyError(path, "malformed shape " + *shapeText);
    shape.push_back(size);
  }
  // Size the data from the shape without overflow before allocating it.
  const char *data = bytes.data() + headerStart + headerLength;
  const uint64_t available = bytes.size() - headerStart - headerLength;
  uint64_t needed = width;
  for (int64_t size : shape)
    if (size != 0 && needed > available / static_cast<uint64_t>(size) + 1)
      return npyError(path, "shape " + *shapeText +
                                " needs more data than "
                                "the file's " +
                                llvm::Twine(available) + " bytes");
    else
      needed *= static_cast<uint64_t>(size);
  if (available < needed)
    return npyError(path, "holds " + llvm::Twine(available) +
                              " data bytes but shape " + *shapeText +
                              " needs " + llvm::Twine(needed));
  Tensor tensor(kind, shape);
  for (int64_t i = 0; i < tensor.getNumElements(); ++i) {
    const char *at = data + i * width;
    double value = 0;
    switch (kind) {
    case ElementKind::F16: {
      uint16_t bits;
      std::memcpy(&bits, at, 2);
      llvm::APFloat half(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
      value = half.convertToDouble();
      break;
    }
    case ElementKind::F32: {
      float f;
      std::memcpy(&f, at, 4);
      value = f;
      break;
    }
    case ElementKind::F64:
      std::memcpy(&value, at, 8);
      break;
    case ElementKind::I32: {
      int32_t v;
      std::memcpy(&v, at, 4);
      value = v;
      break;
    }
    default: {
      int64_t v;
      std::memcpy(&v, at, 8);
      value = static_cast<double>(v);
      break;
    }
    }
    tensor.getData()[i] = value;
  }
  return tensor;
}

llvm::Error mlir::gdn::interp::writeNpy(llvm::StringRef path,
                                        const Tensor &tensor) {
  // An integer result holding NaN or a value past its width (from a
  // program's arithmetic) is refused rather than converted, which C++ leaves
  // undefined.
  if (auto error = checkStorable(tensor.values(), tensor.getKind(), path))
    return error;
  std::string descr;
  switch (tensor.getKind()) {
  case ElementKind::BF16:
  case ElementKind::F32:
    descr = "<f4";
    break;
  case ElementKind::F16:
    descr = "<f2";
    break;
  case ElementKind::F64:
    descr = "<f8";
    break;
  case ElementKind::I32:
    descr = "<i4";
    break;
  case ElementKind::I64:
    descr = "<i8";
    break;
  }
  // Python tuple syntax: "()", "(4,)", "(2, 3)".
  std::string shape;
  for (int64_t size : tensor.getShape())
    shape += (shape.empty() ? "" : ", ") + std::to_string(size);
  if (tensor.getRank() == 1)
    shape += ",";
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Pad so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return npyError(path, "cannot write: " + ec.message());
  os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
     << char((header.size() >> 8) & 0xff) << header;
  for (double value : tensor.values()) {
    switch (tensor.getKind()) {
    case ElementKind::BF16:
    case ElementKind::F32: {
      float f = static_cast<float>(value);
      os.write(reinterpret_cast<const char *>(&f), 4);
      break;
    }
    case ElementKind::F16: {
      llvm::APFloat half(value);
      bool losesInfo;
      half.convert(llvm::APFloat::IEEEhalf(),
                   llvm::APFloat::rmNearestTiesToEven, &losesInfo);
      uint16_t bits =
          static_cast<uint16_t>(half.bitcastToAPInt().getZExtValue());
      os.write(reinterpret_cast<const char *>(&bits), 2);
      break;
    }
    case ElementKind::F64:
      os.write(reinterpret_cast<const char *>(&value), 8);
      break;
    case ElementKind::I32: {
      int32_t v = static_cast<int32_t>(value);
      os.write(reinterpret_cast<const char *>(&v), 4);
      break;
    }
    case ElementKind::I64: {
      int64_t v = static_cast<int64_t>(value);
      os.write(reinterpret_cast<const char *>(&v), 8);
      break;
    }
    }
  }
  return llvm::Error::success();
}
