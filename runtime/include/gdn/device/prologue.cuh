//===- prologue.cuh - the fused varlen prologue kernel ----------*- CUDA
//-*-===//
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
  const Act *mixed;                                ///< [T, C]
  const typename Config::ConvWeight *weight;       ///< [C, W]
  const typename Config::ConvWeight *bias;         ///< [C] or null
  const typename Config::ConvState *initialState;  ///< [N, C, W-1] or null
  typename Config::ConvState *finalState;          ///< [N, C, W-1] or null
  const typename Config::GateInput *a, *b;         ///< [T, HV]
  const typename Config::GateParam *aLog, *dtBias; ///< [HV]
  Act *q, *k, *v;                                  ///< [T, H*K], [T, HV*V]
  float *g, *beta;                                 ///< [T, HV]
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
  constexpr int kChannels =
      2 * kKeyDim + Config::kValueHeads * Config::kHeadDimV;
  static_assert(Config::kHeadDimK % kVec == 0 && kHeadLanes <= 32 &&
                    (kHeadLanes & (kHeadLanes - 1)) == 0,
                "a head must be a power-of-two group of at most 32 lanes");
  static_assert(kChannels % kVec == 0, "channels must fill 16-byte vectors");

  const PackingView &packing = args.packing;
  const int32_t tokens = packing.bufferTokens;
  const int c0 = (blockIdx.x * Config::kThreads + threadIdx.x) * kVec;
  const bool active = c0 < kChannels;
  // Invalid packing: write NaN everywhere this block owns, never a result.
  const bool invalid = args.workspace.status->code != GDN_STATUS_OK;

  // Conv weights live in shared memory (one float4 of taps per channel):
  // kept in registers they would cost 32 registers a thread and halve the
  // number of resident blocks, which a memory-bound kernel cannot afford.
  // Laid out [channel-in-slice][thread] so that a warp's 16-byte reads are
  // consecutive (no bank conflicts).
  static_assert(kW <= 4, "the prologue kernel supports conv widths up to 4");
  __shared__ float4 weights[Config::kThreads * kVec];
  float bias[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    float taps[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kW; ++j)
      taps[j] = active ? loadScalar(args.weight + (c0 + i) * kW + j) : 0.0f;
    weights[i * Config::kThreads + threadIdx.x] =
        make_float4(taps[0], taps[1], taps[2], taps[3]);
    bias[i] =
        (active && Config::kHasBias) ? loadScalar(args.bias + c0 + i) : 0.0f;
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

  // Token tiles: blockIdx.y, and further rounds when there are more tiles
  // than the grid's y limit (65535) allows.
  const int64_t numTiles =
      (static_cast<int64_t>(tokens) + Config::kTokensPerBlock - 1) /
      Config::kTokensPerBlock;
  for (int64_t tile = blockIdx.y; tile < numTiles; tile += gridDim.y) {
    const int32_t t0 = static_cast<int32_t>(tile * Config::kTokensPerBlock);
    const int32_t t1 = static_cast<int32_t>(
        min(tile * Config::kTokensPerBlock + Config::kTokensPerBlock,
            static_cast<int64_t>(tokens)));
    // The tile's row -> sequence table, read once into shared memory.
    __shared__ int32_t tileSeq[Config::kTokensPerBlock];
    for (int32_t i = threadIdx.x; i < t1 - t0; i += Config::kThreads)
      tileSeq[i] = invalid ? -1 : args.workspace.tokenSeq[t0 + i];
    __syncthreads();

    // Rows are loaded kUnroll at a time, one batch ahead of the batch being
    // computed (double buffering in registers), so that loads are in flight
    // while the conv, the norm and the stores of the previous rows run.
    constexpr int kUnroll = Config::kTokenUnroll;
    uint4 current[kUnroll], next[kUnroll];
    int32_t currentSeqOf[kUnroll], nextSeqOf[kUnroll];
    auto loadBatch = [&](int32_t tb, uint4(&raw)[kUnroll],
                         int32_t (&seqOf)[kUnroll]) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int32_t t = tb + u;
        seqOf[u] = t < t1 ? tileSeq[t - t0] : -2;
        raw[u] = make_uint4(0, 0, 0, 0);
        if (seqOf[u] >= 0 && active)
          raw[u] = *reinterpret_cast<const uint4 *>(
              args.mixed + static_cast<int64_t>(t) * kChannels + c0);
      }
    };
    loadBatch(t0, current, currentSeqOf);

    Vec window[kHistory > 0 ? kHistory : 1];
    int32_t currentSeq = -2;
    for (int32_t tb = t0; tb < t1; tb += kUnroll) {
      loadBatch(tb + kUnroll, next, nextSeqOf);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int32_t t = tb + u;
        const int32_t seq = currentSeqOf[u];
        if (seq == -2) // past the tile: uniform across the block
          break;
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
              const int32_t tap = t - kHistory + j;
              if (!active) {
                window[j].fill(0.0f);
              } else if (tap >= begin) {
                window[j].load(args.mixed +
                               static_cast<int64_t>(tap) * kChannels + c0);
              } else if (Config::kHasInitialState) {
                const int idx = kHistory + (tap - begin);
#pragma unroll
                for (int i = 0; i < kVec; ++i)
                  window[j].values[i] = loadScalar(
                      args.initialState +
                      (static_cast<int64_t>(seq) * kChannels + c0 + i) *
                          kHistory +
                      idx);
              } else {
                window[j].fill(0.0f);
              }
            }
            currentSeq = seq;
          }
          Vec x;
          x.unpack(current[u]);
#pragma unroll
          for (int i = 0; i < kVec; ++i) {
            const float4 packed = weights[i * Config::kThreads + threadIdx.x];
            const float w[4] = {packed.x, packed.y, packed.z, packed.w};
            float sum = bias[i] + w[kW - 1] * x.values[i];
#pragma unroll
            for (int j = 0; j < kHistory; ++j)
              sum += w[j] * window[j].values[i];
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
                args.finalState[(static_cast<int64_t>(seq) * kChannels + c0 +
                                 i) *
                                    kHistory +
                                j] =
                    Element<typename Config::ConvState>::store(
                        window[j].values[i]);
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
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        current[u] = next[u];
        currentSeqOf[u] = nextSeqOf[u];
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
    __syncthreads(); // the next tile reuses tileSeq
  }

  // Sequences whose final conv state no token writes: zero-length ones get
  // their initial state (or zeros); with invalid metadata every one is NaN.
  if (Config::kHasFinalState && active && blockIdx.y == 0) {
    for (int32_t seq = 0; seq < packing.numSeqs; ++seq) {
      if (!invalid && packing.length(seq) != 0)
        continue;
      for (int j = 0; j < kHistory; ++j)
        for (int i = 0; i < kVec; ++i) {
          const int64_t at =
              (static_cast<int64_t>(seq) * kChannels + c0 + i) * kHistory + j;
          float value = invalid ? NAN
                        : Config::kHasInitialState
                            ? loadScalar(args.initialState + at)
                            : 0.0f;
          args.finalState[at] =
              Element<typename Config::ConvState>::store(value);
        }
    }
  }
}

/// Grid of the prologue: channel blocks x token tiles.
template <class Config> inline dim3 prologueGrid(int32_t tokens) {
  constexpr int kVec = Vector16<typename Config::Activation>::kWidth;
  constexpr int kChannels = 2 * Config::kKeyHeads * Config::kHeadDimK +
                            Config::kValueHeads * Config::kHeadDimV;
  const int channelBlocks =
      (kChannels / kVec + Config::kThreads - 1) / Config::kThreads;
  const int64_t tiles =
      (static_cast<int64_t>(tokens) + Config::kTokensPerBlock - 1) /
      Config::kTokensPerBlock;
  // The kernel loops over tiles beyond the y limit.
  const unsigned tokenBlocks =
      static_cast<unsigned>(tiles < 1 ? 1 : (tiles > 65535 ? 65535 : tiles));
  return dim3(channelBlocks, tokenBlocks);
}

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_PROLOGUE_CUH
