//===- host_tensors.h - a function's tensors on the host ---------*- C++
//-*-===//
//
// What the GPU harnesses of this directory share: a tensor kept on the host
// as doubles with the dtype it has on the device, its encoding to and from
// device bytes (bf16 and f16 rounded to nearest even, as the kernels store
// them), upload, and .npy files named by argument or result index.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_HOST_TENSORS_H
#define GDN_TEST_INTEGRATION_HARNESS_HOST_TENSORS_H

#include "compare.h" // relativeRms, which this header used to hold
#include "cuda_check.h"
#include "npy.h"

#include "gdn/runtime/abi.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace harness {

inline size_t elementBytes(gdn_dtype_t dtype) {
  return dtype == GDN_BF16 || dtype == GDN_F16  ? 2
         : dtype == GDN_F32 || dtype == GDN_I32 ? 4
                                                : 8;
}

/// A host tensor kept as doubles, with the dtype it has on the device.
struct HostTensor {
  gdn_dtype_t dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
  int64_t rowSize() const {
    int64_t n = 1;
    for (size_t d = 1; d < shape.size(); ++d)
      n *= shape[d];
    return n;
  }
};

inline std::vector<char> encode(const HostTensor &t) {
  std::vector<char> bytes(t.values.size() * elementBytes(t.dtype));
  for (size_t i = 0; i < t.values.size(); ++i) {
    char *p = bytes.data() + i * elementBytes(t.dtype);
    double v = t.values[i];
    switch (t.dtype) {
    case GDN_BF16: {
      __nv_bfloat16 x = __float2bfloat16_rn(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case GDN_F16: {
      __half x = __float2half_rn(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case GDN_F32: {
      float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case GDN_I32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case GDN_I64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    default:
      std::memcpy(p, &v, 8);
    }
  }
  return bytes;
}

inline double decode(const char *p, gdn_dtype_t dtype) {
  switch (dtype) {
  case GDN_BF16: {
    __nv_bfloat16 x;
    std::memcpy(&x, p, 2);
    return __bfloat162float(x);
  }
  case GDN_F16: {
    __half x;
    std::memcpy(&x, p, 2);
    return __half2float(x);
  }
  case GDN_F32: {
    float x;
    std::memcpy(&x, p, 4);
    return x;
  }
  case GDN_I32: {
    int32_t x;
    std::memcpy(&x, p, 4);
    return x;
  }
  case GDN_I64: {
    int64_t x;
    std::memcpy(&x, p, 8);
    return static_cast<double>(x);
  }
  default: {
    double x;
    std::memcpy(&x, p, 8);
    return x;
  }
  }
}

inline gdn_tensor_t upload(const HostTensor &t) {
  gdn_tensor_t d = {};
  d.dtype = t.dtype;
  d.rank = static_cast<int32_t>(t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i)
    d.shape[i] = t.shape[i];
  std::vector<char> bytes = encode(t);
  CUDA_OK(cudaMalloc(&d.data, std::max<size_t>(bytes.size(), 16)));
  CUDA_OK(
      cudaMemcpy(d.data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return d;
}

inline size_t bytesOf(const gdn_tensor_t &t) {
  size_t n = elementBytes(t.dtype);
  for (int d = 0; d < t.rank; ++d)
    n *= static_cast<size_t>(t.shape[d]);
  return n;
}

inline std::vector<double> decodeAll(const std::vector<char> &bytes,
                                     gdn_dtype_t dtype) {
  size_t width = elementBytes(dtype);
  std::vector<double> values(bytes.size() / width);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = decode(bytes.data() + i * width, dtype);
  return values;
}

/// Reads `path` into a host tensor of `dtype`; false with `error` set.
inline bool readTensor(const std::string &path, gdn_dtype_t dtype,
                       HostTensor &tensor, std::string &error) {
  npy::Array array;
  if (!npy::read(path, array, error))
    return false;
  tensor = {dtype, array.shape, array.values};
  return true;
}

/// Writes a device result's bytes as .npy (f64 as f8, i32 as i4, the
/// floating-point rest as f4, which holds bf16 and f16 exactly).
inline void writeResult(const std::string &path, const gdn_tensor_t &tensor,
                        const std::vector<char> &bytes) {
  npy::Array array;
  array.descr = tensor.dtype == GDN_F64   ? "<f8"
                : tensor.dtype == GDN_I32 ? "<i4"
                                          : "<f4";
  array.shape.assign(tensor.shape, tensor.shape + tensor.rank);
  array.values = decodeAll(bytes, tensor.dtype);
  npy::write(path, array);
}

} // namespace harness

#endif // GDN_TEST_INTEGRATION_HARNESS_HOST_TENSORS_H
