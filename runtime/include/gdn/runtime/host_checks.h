//===- host_checks.h - argument checks of generated entry points -*- C++ -*-===//
//
// Generated entry points check every tensor they are given (pointer, rank,
// dtype, sizes) before launching anything, so that a caller's mistake is an
// error code rather than an out-of-bounds access on the device.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_HOST_CHECKS_H
#define GDN_RUNTIME_HOST_CHECKS_H

#include "gdn/runtime/abi.h"

#include <initializer_list>
#include <stddef.h>
#include <stdint.h>

namespace gdn {

/// Marks a size the check does not constrain.
constexpr int64_t kAnySize = -1;

/// True when `tensor` has `dtype` and `shape` (kAnySize matches any size) and
/// a data pointer unless it is empty.
inline bool checkTensor(const gdn_tensor_t &tensor, gdn_dtype_t dtype,
                        std::initializer_list<int64_t> shape) {
  if (tensor.dtype != dtype || tensor.rank != static_cast<int32_t>(shape.size()))
    return false;
  int64_t elements = 1;
  int d = 0;
  for (int64_t expected : shape) {
    const int64_t size = tensor.shape[d++];
    if (size < 0 || (expected != kAnySize && size != expected))
      return false;
    elements *= size;
  }
  return tensor.data != nullptr || elements == 0;
}

/// True when `tensor`'s data may be read and written with 16-byte vector
/// accesses (the kernels' row loads and stores); an empty tensor passes.
inline bool isVectorAligned(const gdn_tensor_t &tensor) {
  return reinterpret_cast<uintptr_t>(tensor.data) % 16 == 0;
}

/// Bytes of one element.
inline size_t elementBytes(gdn_dtype_t dtype) {
  switch (dtype) {
  case GDN_BF16:
  case GDN_F16:
    return 2;
  case GDN_F32:
  case GDN_I32:
    return 4;
  default:
    return 8;
  }
}

/// The bytes of a tensor's elements.
inline size_t tensorBytes(const gdn_tensor_t *tensor) {
  size_t bytes = elementBytes(tensor->dtype);
  for (int32_t d = 0; d < tensor->rank; ++d)
    bytes *= static_cast<size_t>(tensor->shape[d]);
  return bytes;
}

/// Rounds a workspace offset up to 256 bytes (any vector access is aligned).
inline size_t alignWorkspace(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// A descriptor for gdnrt's `*_workspace_bytes` queries, made before the
/// tensor has memory (the workspace is being sized): shape and dtype, no
/// data.
inline gdn_tensor_t shapeOnlyTensor(gdn_dtype_t dtype,
                                    std::initializer_list<int64_t> shape) {
  gdn_tensor_t tensor = {};
  tensor.dtype = dtype;
  for (int64_t size : shape)
    if (tensor.rank < GDN_MAX_RANK)
      tensor.shape[tensor.rank++] = size;
  return tensor;
}

} // namespace gdn

#endif // GDN_RUNTIME_HOST_CHECKS_H
