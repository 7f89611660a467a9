//===- RandomStream.h - the interpreter's portable random numbers -*- C++
//-*-===//
//
// Inputs, cotangents and the entries a gradient check samples are all drawn
// from this generator: splitmix64 with Box-Muller normals, so the same seed
// gives the same numbers on every platform and standard library.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_INTERPRETER_RANDOMSTREAM_H
#define GDN_LIB_INTERPRETER_RANDOMSTREAM_H

#include <cmath>
#include <cstdint>

namespace mlir::gdn::interp {

/// One stream of numbers per (seed, stream) pair; streams are independent,
/// so adding an argument to a program does not change the others' values.
class RandomStream {
public:
  RandomStream(uint64_t seed, uint64_t stream)
      : state(seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull +
              1) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1).
  double uniform() {
    return (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0;
  }
  double normal() {
    double u = uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }

private:
  uint64_t state;
};

} // namespace mlir::gdn::interp

#endif // GDN_LIB_INTERPRETER_RANDOMSTREAM_H
