//===- device_random.cuh - reproducible random inputs made on the GPU ------===//
//
// A counter-based hash gives every element its own uniform and normal
// values (reproducible, no host transfer for the benchmark shapes). Shared
// by the delta-rule forward and backward drivers.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_DEVICE_RANDOM_CUH
#define GDN_TEST_INTEGRATION_DEVICE_RANDOM_CUH

#include "cuda_check.h"
#include "device_buffers.cuh" // deviceAlloc, which this header used to hold

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace {

__device__ uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
/// Uniform in (0, 1) from a 64-bit counter and a stream id.
__device__ float uniformAt(uint64_t i, uint32_t stream) {
  const uint32_t h =
      mix(static_cast<uint32_t>(i) ^
          mix(static_cast<uint32_t>(i >> 32) + stream * 0x9e3779b9u));
  return ((h >> 8) + 0.5f) * (1.0f / 16777216.0f);
}
__device__ float normalAt(uint64_t i, uint32_t stream) {
  const float u = uniformAt(2 * i, stream), w = uniformAt(2 * i + 1, stream);
  return sqrtf(-2.0f * logf(u)) * cospif(2.0f * w);
}

/// rows x dim bf16, N(0,1), each row L2-normalised when `normalise`.
__global__ void fillRows(__nv_bfloat16 *x, int64_t rows, int dim,
                         uint32_t stream, bool normalise) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int i = 0; i < dim; ++i) {
      const float value = normalAt(r * dim + i, stream);
      sum += value * value;
    }
    const float scale = normalise ? rsqrtf(sum + 1e-6f) : 1.0f;
    for (int i = 0; i < dim; ++i)
      x[r * dim + i] =
          __float2bfloat16_rn(normalAt(r * dim + i, stream) * scale);
  }
}

__global__ void fillGates(float *g, float *beta, int64_t count,
                          uint32_t stream) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    g[i] = -0.5f * uniformAt(i, stream);
    beta[i] = 1.0f / (1.0f + expf(-normalAt(i, stream + 1)));
  }
}

/// Gates as a Qwen3-Next layer makes them at initialisation: per value head
/// h of `heads`, A_h uniform in [1, 16] and dt_h log-uniform in [1e-3, 0.1]
/// (Mamba's ranges); per token g = -A_h softplus(a + log(expm1(dt_h)))
/// with a ~ N(0, 1) standing in for the projection. Per chunk the heads
/// decay from about e^-0.1 to e^-100: the slow ones are what split chains'
/// warm-ups cannot shorten.
__global__ void fillModelGates(float *g, int64_t count, int heads,
                               uint32_t stream) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int head = static_cast<int>(i % heads);
    const float a = 1.0f + 15.0f * uniformAt(head, stream);
    const float dt =
        expf(logf(1e-3f) + uniformAt(head, stream + 1) * logf(100.0f));
    const float x = normalAt(i, stream + 2) + logf(expm1f(dt));
    g[i] = -a * (x > 20.0f ? x : log1pf(expf(x)));
  }
}

__global__ void scaleValues(float *x, int64_t count, float factor) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] *= factor;
}

__global__ void fillNormal(float *x, int64_t count, float scale,
                           uint32_t stream) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = scale * normalAt(i, stream);
}

} // namespace

#endif // GDN_TEST_INTEGRATION_DEVICE_RANDOM_CUH
