//===- CotangentTensors.cpp - the two tensor helpers the VJPs share -------===//
//
// Cotangents are float64 tensors shaped like the values they belong to;
// when a value has several uses, the cotangents of the uses add up.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/ReferenceGradients.h"

#include <cassert>

using namespace mlir::gdn::interp;

Tensor mlir::gdn::interp::zerosLike(const Tensor &like) {
  return Tensor(ElementKind::F64, std::vector<int64_t>(like.getShape()));
}

void mlir::gdn::interp::accumulateInto(Tensor &into, const Tensor &addend) {
  assert(into.getShape() == addend.getShape() && "cotangent shapes differ");
  double *to = into.getData();
  const double *from = addend.getData();
  for (int64_t i = 0; i < into.getNumElements(); ++i)
    to[i] += from[i];
}
