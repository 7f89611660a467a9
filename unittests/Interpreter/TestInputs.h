//===- TestInputs.h - random tensors for interpreter unit tests -*- C++ -*-===//
//
// Small helpers that draw packed GDN inputs for the property tests: the same
// distributions gdn-run uses (unit-norm keys, g <= 0, beta in (0, 1)).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_INTERPRETER_TESTINPUTS_H
#define GDN_UNITTESTS_INTERPRETER_TESTINPUTS_H

#include "gdn/Interpreter/Packing.h"
#include "gdn/Interpreter/Tensor.h"

#include <cmath>
#include <numeric>
#include <random>

namespace mlir::gdn::interp::testing {

inline Tensor randomTensor(std::mt19937_64 &rng, ElementKind kind,
                           std::vector<int64_t> shape, double scale = 1.0) {
  std::normal_distribution<double> normal(0.0, scale);
  Tensor tensor(kind, std::move(shape));
  for (double &value : tensor.values())
    value = normal(rng);
  tensor.roundToStorage();
  return tensor;
}

/// Normalises every row of the last dimension to unit length.
inline void normaliseRows(Tensor &tensor) {
  const int64_t width = tensor.getShape().back();
  for (int64_t row = 0; row * width < tensor.getNumElements(); ++row) {
    double norm = 0.0;
    for (int64_t i = 0; i < width; ++i)
      norm += std::pow(tensor.getData()[row * width + i], 2);
    for (int64_t i = 0; i < width; ++i)
      tensor.getData()[row * width + i] /= std::sqrt(norm);
  }
  tensor.roundToStorage();
}

inline std::vector<int64_t> offsetsOf(const std::vector<int64_t> &lengths) {
  std::vector<int64_t> offsets{0};
  for (int64_t length : lengths)
    offsets.push_back(offsets.back() + length);
  return offsets;
}

inline PackingInfo packingOf(const std::vector<int64_t> &lengths) {
  return llvm::cantFail(
      PackingInfo::create(offsetsOf(lengths), std::nullopt, -1));
}

/// Rows [begin, begin + count) of a [T, ...] tensor.
inline Tensor rows(const Tensor &tensor, int64_t begin, int64_t count) {
  std::vector<int64_t> shape(tensor.getShape().begin(),
                             tensor.getShape().end());
  const int64_t width = shape[0] ? tensor.getNumElements() / shape[0] : 0;
  shape[0] = count;
  Tensor result(tensor.getKind(), shape);
  std::copy(tensor.getData() + begin * width,
            tensor.getData() + (begin + count) * width, result.getData());
  return result;
}

/// Entry `index` of a [N, ...] tensor, as a [1, ...] tensor.
inline Tensor entry(const Tensor &tensor, int64_t index) {
  return rows(tensor, index, 1);
}

} // namespace mlir::gdn::interp::testing

#endif // GDN_UNITTESTS_INTERPRETER_TESTINPUTS_H
