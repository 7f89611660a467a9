//===- npy.h - minimal .npy files for the GPU harness -----------*- C++ -*-===//
//
// The GPU machine has no MLIR, so the harness cannot link the interpreter's
// .npy code; this is the same format, reading f4/f8/i4/i8 and writing f4/f8/
// i4, in plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_NPY_H
#define GDN_TEST_INTEGRATION_NPY_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace npy {

struct Array {
  std::string descr;            // "<f4", "<f8", "<i4", "<i8"
  std::vector<int64_t> shape;
  std::vector<double> values;   // converted to double
};

inline bool read(const std::string &path, Array &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open " + path;
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    error = path + " is not a .npy file";
    return false;
  }
  size_t headerLength = static_cast<uint8_t>(bytes[8]) |
                        (static_cast<uint8_t>(bytes[9]) << 8);
  std::string header = bytes.substr(10, headerLength);
  auto field = [&](const std::string &key) {
    size_t at = header.find("'" + key + "'");
    if (at == std::string::npos)
      return std::string();
    size_t colon = header.find(':', at);
    size_t start = header.find_first_not_of(" ", colon + 1);
    size_t end = header[start] == '(' ? header.find(')', start) + 1
                                      : header.find_first_of(",}", start);
    return header.substr(start, end - start);
  };
  out.descr = field("descr");
  out.descr = out.descr.substr(1, out.descr.size() - 2);
  std::string shape = field("shape");
  out.shape.clear();
  std::stringstream stream(shape.substr(1, shape.size() - 2));
  std::string piece;
  while (std::getline(stream, piece, ','))
    if (piece.find_first_not_of(" ") != std::string::npos)
      out.shape.push_back(std::stoll(piece));
  int64_t count = 1;
  for (int64_t size : out.shape)
    count *= size;
  size_t width = out.descr == "<f8" || out.descr == "<i8" ? 8 : 4;
  const char *data = bytes.data() + 10 + headerLength;
  if (bytes.size() < 10 + headerLength + count * width) {
    error = path + " is truncated";
    return false;
  }
  out.values.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    const char *p = data + i * width;
    if (out.descr == "<f4") {
      float v;
      std::memcpy(&v, p, 4);
      out.values[i] = v;
    } else if (out.descr == "<f8") {
      std::memcpy(&out.values[i], p, 8);
    } else if (out.descr == "<i4") {
      int32_t v;
      std::memcpy(&v, p, 4);
      out.values[i] = v;
    } else if (out.descr == "<i8") {
      int64_t v;
      std::memcpy(&v, p, 8);
      out.values[i] = static_cast<double>(v);
    } else {
      error = path + ": unsupported dtype " + out.descr;
      return false;
    }
  }
  return true;
}

inline bool write(const std::string &path, const Array &array) {
  std::string shape;
  for (int64_t size : array.shape)
    shape += (shape.empty() ? "" : ", ") + std::to_string(size);
  if (array.shape.size() == 1)
    shape += ",";
  std::string header = "{'descr': '" + array.descr +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
      << char(header.size() >> 8) << header;
  for (double value : array.values) {
    if (array.descr == "<f4") {
      float v = static_cast<float>(value);
      out.write(reinterpret_cast<const char *>(&v), 4);
    } else if (array.descr == "<i4") {
      int32_t v = static_cast<int32_t>(value);
      out.write(reinterpret_cast<const char *>(&v), 4);
    } else {
      out.write(reinterpret_cast<const char *>(&value), 8);
    }
  }
  return static_cast<bool>(out);
}

} // namespace npy

#endif // GDN_TEST_INTEGRATION_NPY_H
