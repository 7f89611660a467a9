//===- bench_shapes.h - argument shapes of a generated function's bench ---===//
//
// A generated signature gives each argument's dtype and role but not its
// static sizes, so the bench modes take argument i's shape from the
// environment: GDN_ARG<i>_SHAPE="Tx16x128", where T stands for the tokens
// and N for the sequences of the bench's pack.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_BENCH_SHAPES_H
#define GDN_TEST_INTEGRATION_HARNESS_BENCH_SHAPES_H

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace harness {

/// GDN_ARG<i>_SHAPE, or null when it is not set.
inline const char *benchShapeText(int i) {
  return std::getenv(("GDN_ARG" + std::to_string(i) + "_SHAPE").c_str());
}

/// The shape "Tx16x128" spells, with T = `tokens` and N = `seqs` (empty
/// text: a scalar).
inline std::vector<int64_t> parseBenchShape(const std::string &text,
                                            int64_t tokens, int64_t seqs) {
  std::vector<int64_t> shape;
  std::stringstream stream(text);
  std::string piece;
  while (std::getline(stream, piece, 'x'))
    shape.push_back(piece == "T"   ? tokens
                    : piece == "N" ? seqs
                                   : std::stoll(piece));
  return shape;
}

} // namespace harness

#endif // GDN_TEST_INTEGRATION_HARNESS_BENCH_SHAPES_H
