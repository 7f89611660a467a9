//===- prologue.cuh - the fused varlen prologue kernel ----------*- CUDA -*-===//
//
// One pass over the input projection's conv channels [q | k | v]: the depthwise
// causal conv (width <= 4) with per-sequence initial and final states, SiLU,
// the split into q, k, v, and the L2 norm of q and k per head; plus the fp32
// gates g and beta. The conv input is read once and q, k, v are written once
// in the layout the delta-rule kernel reads, which is what makes the fused
// prologue cheaper than the conv alone.
//
// Mapping: each thread owns one 16-byte slice of channels and walks the
// block's tokens, keeping the previous W-1 inputs in registers (a sliding
// window), so every row is read once; a head's K channels are an aligned
// group of K / vector-width lanes, so the L2 norm is a shuffle reduction.
// A sequence boundary resets the window from the sequence's initial state
// (or zeros): no tap ever reads another sequence's tokens.
//
// The emitter instantiates prologueKernel<Config> with a Config struct that
// fixes every specialization (types, width, head dim, tile, flags).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_PROLOGUE_CUH
#define GDN_DEVICE_PROLOGUE_CUH

#include "gdn/device/common.cuh"
#include "gdn/device/packing.cuh"

#include <math.h>

namespace gdn {
namespace device {

template <class Config> struct PrologueArgs {
  using Act = typename Config::Activation;
  const Act *mixed;                                   ///< [T, C]
  const typename Config::ConvWeight *weight;          ///< [C, W]
  const typename Config::ConvWeight *bias;            ///< [C] or null
  const typename Config::ConvState *initialState;     ///< [N, C, W-1] or null
  typename Config::ConvState *finalState;             ///< [N, C, W-1] or null
  const typename Config::GateInput *a, *b;            ///< [T, HV]
  const typename Config::GateParam *aLog, *dtBias;    ///< [HV]
  Act *q, *k, *v;                                     ///< [T, H*K], [T, HV*V]
  float *g, *beta;                                    ///< [T, HV]
  PackingView packing;
  PackingWorkspace workspace;
};

template <class Config>
__global__ void __launch_bounds__(Config::kThreads)
    prologueKernel(PrologueArgs<Config> args) {
  using Act = typename Config::Activation;
  using Vec = Vector16<Act>;
  constexpr int kVec = Vec::kWidth;
  constexpr int kW = Config::kConvWidth;
  constexpr int kHistory = kW - 1;
  constexpr int kHeadLanes = Config::kHeadDimK / kVec;
  constexpr int kKeyDim = Config::kKeyHeads * Config::kHeadDimK;
  constexpr int kChannels = 2 * kKeyDim + Config::kValueHeads * Config::kHeadDimV;
  static_assert(Config::kHeadDimK % kVec == 0 && kHeadLanes <= 32 &&
                    (kHeadLanes & (kHeadLanes - 1)) == 0,
                "a head must be a power-of-two group of at most 32 lanes");
  static_assert(kChannels % kVec == 0, "channels must fill 16-byte vectors");

  const PackingView &packing = args.packing;
  const int32_t tokens = packing.bufferTokens;
  const int c0 = (blockIdx.x * Config::kThreads + threadIdx.x) * kVec;
  const bool active = c0 < kChannels;
  const int32_t t0 = blockIdx.y * Config::kTokensPerBlock;
  const int32_t t1 = min(t0 + Config::kTokensPerBlock, tokens);
  // Invalid packing: write NaN everywhere this block owns, never a result.
  const bool invalid = args.workspace.status->code != GDN_STATUS_OK;

  float w[kVec][kW];
  float bias[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
#pragma unroll
    for (int j = 0; j < kW; ++j)
      w[i][j] = active ? loadScalar(args.weight + (c0 + i) * kW + j) : 0.0f;
    bias[i] = (active && Config::kHasBias) ? loadScalar(args.bias + c0 + i) : 0.0f;
  }

  Act *out = nullptr;
  int outStride = 0;
  if (c0 < kKeyDim) {
    out = args.q + c0;
    outStride = kKeyDim;
  } else if (c0 < 2 * kKeyDim) {
    out = args.k + (c0 - kKeyDim);
    outStride = kKeyDim;
  } else {
    out = args.v + (c0 - 2 * kKeyDim);
    outStride = kChannels - 2 * kKeyDim;
  }
  const bool normalise = c0 < 2 * kKeyDim;

  Vec window[kHistory > 0 ? kHistory : 1];
  int32_t currentSeq = -2;
  for (int32_t t = t0; t < t1; ++t) {
    // Uniform across the block: every thread handles token t now.
    const int32_t seq = invalid ? -1 : args.workspace.tokenSeq[t];
    Vec y;
    if (seq < 0) {
      y.fill(invalid ? NAN : 0.0f);
      currentSeq = -1;
    } else {
      const int32_t begin = packing.begin(seq);
      if (seq != currentSeq) {
        // Entering a sequence (at its start, or mid-sequence at the tile's
        // first token): fill the window with the taps before t.
#pragma unroll
        for (int j = 0; j < kHistory; ++j) {
          const int32_t u = t - kHistory + j;
          if (!active) {
            window[j].fill(0.0f);
          } else if (u >= begin) {
            window[j].load(args.mixed + static_cast<int64_t>(u) * kChannels + c0);
          } else if (Config::kHasInitialState) {
            const int idx = kHistory + (u - begin);
#pragma unroll
            for (int i = 0; i < kVec; ++i)
              window[j].values[i] = loadScalar(
                  args.initialState +
                  (static_cast<int64_t>(seq) * kChannels + c0 + i) * kHistory + idx);
          } else {
            window[j].fill(0.0f);
          }
        }
        currentSeq = seq;
      }
      Vec x;
      if (active)
        x.load(args.mixed + static_cast<int64_t>(t) * kChannels + c0);
      else
        x.fill(0.0f);
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        float sum = bias[i] + w[i][kW - 1] * x.values[i];
#pragma unroll
        for (int j = 0; j < kHistory; ++j)
          sum += w[i][j] * window[j].values[i];
        y.values[i] = Config::kSilu ? silu(sum) : sum;
      }
#pragma unroll
      for (int j = 0; j + 1 < kHistory; ++j)
        window[j] = window[j + 1];
      if (kHistory > 0)
        window[kHistory > 0 ? kHistory - 1 : 0] = x;
      if (Config::kHasFinalState && active &&
          t == begin + packing.length(seq) - 1) {
#pragma unroll
        for (int j = 0; j < kHistory; ++j)
#pragma unroll
          for (int i = 0; i < kVec; ++i)
            args.finalState[(static_cast<int64_t>(seq) * kChannels + c0 + i) *
                                kHistory + j] =
                Element<typename Config::ConvState>::store(window[j].values[i]);
      }
    }
    // L2 norm of each q/k head: every lane takes part in the shuffle.
    float squares = 0.0f;
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      squares += y.values[i] * y.values[i];
    const float total = groupSum<kHeadLanes>(squares);
    if (normalise && seq >= 0) {
      const float scale = rsqrtf(total + Config::kNormEps);
#pragma unroll
      for (int i = 0; i < kVec; ++i)
        y.values[i] *= scale;
    }
    if (active)
      y.store(out + static_cast<int64_t>(t) * outStride);
  }

  // Zero-length sequences still have a final conv state: their initial one.
  if (Config::kHasFinalState && active && blockIdx.y == 0) {
    for (int32_t seq = 0; seq < packing.numSeqs; ++seq) {
      if (packing.length(seq) != 0)
        continue;
      for (int j = 0; j < kHistory; ++j)
        for (int i = 0; i < kVec; ++i) {
          const int64_t at = (static_cast<int64_t>(seq) * kChannels + c0 + i) * kHistory + j;
          float value = invalid ? NAN
                        : Config::kHasInitialState ? loadScalar(args.initialState + at)
                                                   : 0.0f;
          args.finalState[at] = Element<typename Config::ConvState>::store(value);
        }
    }
  }

  // Gates for this block's tokens, shared out over the channel blocks.
  const int32_t gateCount = (t1 - t0) * Config::kValueHeads;
  for (int32_t e = blockIdx.x * Config::kThreads + threadIdx.x; e < gateCount;
       e += gridDim.x * Config::kThreads) {
    const int32_t t = t0 + e / Config::kValueHeads;
    const int32_t h = e % Config::kValueHeads;
    const int64_t at = static_cast<int64_t>(t) * Config::kValueHeads + h;
    if (invalid) {
      args.g[at] = NAN;
      args.beta[at] = NAN;
      continue;
    }
    const float a = loadScalar(args.a + at), b = loadScalar(args.b + at);
    args.g[at] = -expf(loadScalar(args.aLog + h)) *
                 softplus(a + loadScalar(args.dtBias + h));
    args.beta[at] = (Config::kNegEigval ? 2.0f : 1.0f) * sigmoid(b);
  }
}

/// Grid of the prologue: channel blocks x token tiles.
template <class Config> inline dim3 prologueGrid(int32_t tokens) {
  constexpr int kVec = Vector16<typename Config::Activation>::kWidth;
  constexpr int kChannels = 2 * Config::kKeyHeads * Config::kHeadDimK +
                            Config::kValueHeads * Config::kHeadDimV;
  const int channelBlocks = (kChannels / kVec + Config::kThreads - 1) / Config::kThreads;
  const int tokenBlocks = (tokens + Config::kTokensPerBlock - 1) / Config::kTokensPerBlock;
  return dim3(channelBlocks, tokenBlocks > 0 ? tokenBlocks : 1);
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_PROLOGUE_CUH
