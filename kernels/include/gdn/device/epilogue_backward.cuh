//===- epilogue_backward.cuh - the gated RMSNorm backward ------*- CUDA -*-===//
//
// The reverse of epilogue.cuh: for y = w * (x r) * silu(z) per row of V
// channels, r = rsqrt(mean(x^2) + eps), given dy:
//   dz = dy w (x r) silu'(z)
//   dn = dy w silu(z)                                  (n = x r)
//   dx = r dn - r^3 x (x . dn) / V
//   dw = sum over rows of dy (x r) silu(z)
// One pass over x, z and dy, the mapping of the forward (a row is an
// aligned group of V / vector-width lanes; both row sums are shuffle
// reductions). Like the forward it is a function of rows alone: it takes
// no packing, and padding rows get the VJP of what the forward computed
// there.
//
// dw is deterministic without atomics: each block walks one contiguous
// range of rows, every thread adds its rows' terms in row order, the
// block's row groups are added in group order in shared memory and written
// as the block's partial, and sumPartialsKernel (backward_common.cuh) adds
// the partials in block order. The block count depends on the row count and
// the Config only, so the same inputs give the same bits on any GPU.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_EPILOGUE_BACKWARD_CUH
#define GDN_DEVICE_EPILOGUE_BACKWARD_CUH

#include "gdn/device/backward_common.cuh"
#include "gdn/device/common.cuh"

namespace gdn {
namespace device {

/// The type of the forward's output y when the Config names one (Output):
/// then the kernel can also write y, bit for bit what gatedRMSNormKernel
/// writes, so that a backward which needs y (out_proj's weight gradient)
/// does not run the forward again over x and z (docs/codegen.md).
template <class C, class = void> struct NormOutputOf {
  using type = typename C::InputGrad;
};
template <class C> struct NormOutputOf<C, std::void_t<typename C::Output>> {
  using type = typename C::Output;
};

/// Optional Config members kGateGradTokenStride and kGateGradHeads: dz
/// written as the columns of a wider tensor (the stacked cotangent of the
/// input projections, which one gradient GEMM reads: docs/codegen.md), the
/// tokens' rows kGateGradTokenStride elements apart, each kGateGradHeads
/// rows of V; 0, the default: dz is [rows, V] like x.
GDN_OPTIONAL_CONFIG_MEMBER(GateGradTokenStrideOf, kGateGradTokenStride, int64_t{0})
GDN_OPTIONAL_CONFIG_MEMBER(GateGradHeadsOf, kGateGradHeads, int64_t{1})

/// Config adds to the forward's (epilogue.cuh: Input, Gate, Weight,
/// kHeadDimV, kThreads, kEps) the gradient types OutputGrad (dy), InputGrad
/// (dx), GateGrad (dz), WeightGrad (dw: summed in fp32, stored once in
/// this type) and kBlocks, the most blocks (each takes at least
/// kMinRowsPerBlock rows); optionally Output (y's type, NormOutputOf).
template <class Config> struct EpilogueBackwardArgs {
  const typename Config::Input *x;       ///< [rows, V]
  const typename Config::Gate *z;        ///< [rows, V]
  const typename Config::Weight *weight; ///< [V]
  const typename Config::OutputGrad *dy; ///< [rows, V]
  typename Config::InputGrad *dx;        ///< [rows, V]
  typename Config::GateGrad *dz;         ///< [rows, V]
  typename Config::WeightGrad *dweight;  ///< [V]
  /// [rows, V] or null: the forward's output, written when given.
  typename NormOutputOf<Config>::type *y;
  int64_t rows;                          ///< tokens * heads
  /// [blocks][V] partial sums of dw; carved by launchEpilogueBackward.
  float *partials;
};

template <class Config> struct EpilogueBackwardShape {
  using InVec = Vector16<typename Config::Input>;
  static constexpr int kVec = InVec::kWidth;
  static constexpr int kLanes = Config::kHeadDimV / kVec;
  static constexpr int kGroups = Config::kThreads / kLanes; ///< rows per pass
  static constexpr int64_t kMinRowsPerBlock = 4 * kGroups;
  static constexpr size_t kSharedBytes =
      sizeof(float) * kGroups * Config::kHeadDimV;
  static constexpr int64_t blocks(int64_t rows) {
    return backwardBlocks(rows, kMinRowsPerBlock, Config::kBlocks);
  }
  static constexpr int64_t kGateGradTokenStride = GateGradTokenStrideOf<Config>::value;
  static constexpr int64_t kGateGradHeads = GateGradHeadsOf<Config>::value;
  static_assert(kGateGradTokenStride == 0 ||
                    (kGateGradHeads > 0 &&
                     kGateGradTokenStride >= kGateGradHeads * Config::kHeadDimV &&
                     kGateGradTokenStride * sizeof(typename Config::GateGrad) % 16 == 0),
                "dz's tokens: at least heads x V elements apart, on 16-byte boundaries");
  /// Where row `row`'s dz starts.
  __host__ __device__ static constexpr int64_t gateGradAt(int64_t row) {
    return kGateGradTokenStride == 0
               ? row * Config::kHeadDimV
               : row / kGateGradHeads * kGateGradTokenStride +
                     row % kGateGradHeads * Config::kHeadDimV;
  }
};

template <class Config>
__global__ void __launch_bounds__(Config::kThreads)
    gatedRMSNormBackwardKernel(EpilogueBackwardArgs<Config> args) {
  using S = EpilogueBackwardShape<Config>;
  using InVec = typename S::InVec;
  constexpr int kVec = S::kVec, kLanes = S::kLanes, kGroups = S::kGroups;
  // x's 16-byte vectors set the element count; z (an f32 projection
  // output beside a bf16 x) and the cotangents move as many elements.
  using GateVec = VectorOf<typename Config::Gate, kVec>;
  using DyVec = VectorOf<typename Config::OutputGrad, kVec>;
  constexpr int kV = Config::kHeadDimV;
  static_assert(kV % kVec == 0 && kLanes <= 32 && (kLanes & (kLanes - 1)) == 0,
                "a row must be a power-of-two group of at most 32 lanes");
  static_assert(Config::kThreads % kLanes == 0, "whole rows per block");
  const int lane = threadIdx.x % kLanes, group = threadIdx.x / kLanes;
  float weight[kVec], dweight[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    weight[i] = loadScalar(args.weight + lane * kVec + i);
    dweight[i] = 0.0f;
  }
  int64_t begin, end;
  balancedRange(args.rows, gridDim.x, blockIdx.x, begin, end);
  // Every thread runs the same number of passes (the shuffles need whole
  // warps); rows past the range are zeros and add nothing.
  for (int64_t base = begin; base < end; base += kGroups) {
    const int64_t row = base + group;
    const bool active = row < end;
    const int64_t at = row * kV + lane * kVec;
    InVec x;
    GateVec z;
    DyVec dy;
    if (active) {
      x.load(args.x + at);
      z.load(args.z + at);
      dy.load(args.dy + at);
    } else {
      x.fill(0.0f);
      z.fill(0.0f);
      dy.fill(0.0f);
    }
    float squares = 0.0f;
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      squares += x.values[i] * x.values[i];
    const float r = rsqrtf(groupSum<kLanes>(squares) / kV + Config::kEps);
    VectorOf<typename Config::GateGrad, kVec> dz;
    VectorOf<typename NormOutputOf<Config>::type, kVec> y;
    float dn[kVec], projection = 0.0f;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      float silu, slope;
      siluWithSlope(z.values[i], silu, slope);
      const float normed = x.values[i] * r;
      // The forward's expression and order (epilogue.cuh): the same bits.
      y.values[i] = weight[i] * normed * silu;
      const float scaled = dy.values[i] * weight[i];
      dweight[i] += dy.values[i] * normed * silu;
      dz.values[i] = scaled * normed * slope;
      dn[i] = scaled * silu;
      projection += x.values[i] * dn[i];
    }
    // dx = r dn - r^3 x (x . dn) / V.
    const float along = r * r * groupSum<kLanes>(projection) / kV;
    if (!active)
      continue;
    VectorOf<typename Config::InputGrad, kVec> dx;
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      dx.values[i] = r * (dn[i] - along * x.values[i]);
    dx.store(args.dx + at);
    dz.store(args.dz + S::gateGradAt(row) + lane * kVec);
    if (args.y)
      y.store(args.y + at);
  }
  // The block's partial of dw: row groups added in group order.
  extern __shared__ uint4 shared[];
  float *sums = reinterpret_cast<float *>(shared); // [kGroups][V]
#pragma unroll
  for (int i = 0; i < kVec; ++i)
    sums[group * kV + lane * kVec + i] = dweight[i];
  __syncthreads();
  for (int c = threadIdx.x; c < kV; c += Config::kThreads) {
    float total = 0.0f;
    for (int g = 0; g < kGroups; ++g)
      total += sums[g * kV + c];
    args.partials[static_cast<int64_t>(blockIdx.x) * kV + c] = total;
  }
}

/// Workspace bytes of launchEpilogueBackward for `rows` rows (host side).
template <class Config>
inline size_t epilogueBackwardWorkspaceBytes(int64_t rows) {
  return alignWorkspace(
      sizeof(float) * Config::kHeadDimV *
      static_cast<size_t>(EpilogueBackwardShape<Config>::blocks(rows)));
}

/// The final sum of dw (sumPartialsKernel's job).
template <class Config>
inline PartialSums
epilogueBackwardSums(const EpilogueBackwardArgs<Config> &args) {
  PartialSums job = {};
  job.sums[0] = partialSum(
      args.partials, args.dweight,
      static_cast<int32_t>(EpilogueBackwardShape<Config>::blocks(args.rows)),
      Config::kHeadDimV, Config::kHeadDimV);
  job.status = nullptr;
  return job;
}

#ifndef GDN_DEVICE_EMULATION
/// Launches the backward and the sum of dw on `stream`; `workspace` holds
/// epilogueBackwardWorkspaceBytes bytes. No host synchronisation.
template <class Config>
inline cudaError_t launchEpilogueBackward(EpilogueBackwardArgs<Config> args,
                                          void *workspace,
                                          cudaStream_t stream) {
  using S = EpilogueBackwardShape<Config>;
  args.partials = static_cast<float *>(workspace);
  gatedRMSNormBackwardKernel<Config>
      <<<static_cast<unsigned>(S::blocks(args.rows)), Config::kThreads,
         S::kSharedBytes, stream>>>(args);
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    return error;
  return launchSumPartials(epilogueBackwardSums(args), 1, stream);
}
#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_EPILOGUE_BACKWARD_CUH
