//===- epilogue.cuh - the gated RMSNorm epilogue kernel ---------*- CUDA -*-===//
//
// y = weight * (x * rsqrt(mean(x^2) + eps)) * silu(z) per token and head over
// V, in fp32, one pass over x and z. A row of V channels is an aligned group
// of V / vector-width lanes; the mean is a shuffle reduction.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_EPILOGUE_CUH
#define GDN_DEVICE_EPILOGUE_CUH

#include "gdn/device/common.cuh"

namespace gdn {
namespace device {

template <class Config> struct EpilogueArgs {
  const typename Config::Input *x;          ///< [rows, V]
  const typename Config::Gate *z;           ///< [rows, V]
  const typename Config::Weight *weight;    ///< [V]
  typename Config::Output *y;               ///< [rows, V]
  int64_t rows;                             ///< tokens * heads
};

template <class Config>
__global__ void __launch_bounds__(Config::kThreads)
    gatedRMSNormKernel(EpilogueArgs<Config> args) {
  using InVec = Vector16<typename Config::Input>;
  constexpr int kVec = InVec::kWidth;
  constexpr int kLanes = Config::kHeadDimV / kVec;
  static_assert(Config::kHeadDimV % kVec == 0 && kLanes <= 32 &&
                    (kLanes & (kLanes - 1)) == 0,
                "a row must be a power-of-two group of at most 32 lanes");
  constexpr int kRowsPerBlock = Config::kThreads / kLanes;
  const int lane = threadIdx.x % kLanes;
  float weight[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i)
    weight[i] = loadScalar(args.weight + lane * kVec + i);

  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
       base < args.rows; base += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const int64_t row = base + threadIdx.x / kLanes;
    const bool active = row < args.rows;
    InVec x;
    // z may be wider than x (an f32 projection output): the same element
    // count in a wider vector.
    VectorOf<typename Config::Gate, kVec> z;
    if (active) {
      x.load(args.x + row * Config::kHeadDimV + lane * kVec);
      z.load(args.z + row * Config::kHeadDimV + lane * kVec);
    } else {
      x.fill(0.0f);
      z.fill(0.0f);
    }
    float squares = 0.0f;
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      squares += x.values[i] * x.values[i];
    const float inverse =
        rsqrtf(groupSum<kLanes>(squares) / Config::kHeadDimV + Config::kEps);
    if (!active)
      continue;
    VectorOf<typename Config::Output, kVec> y;
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      y.values[i] = weight[i] * (x.values[i] * inverse) * silu(z.values[i]);
    y.store(args.y + row * Config::kHeadDimV + lane * kVec);
  }
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_EPILOGUE_CUH
