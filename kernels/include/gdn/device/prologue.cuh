//===- prologue.cuh - the fused varlen prologue kernel ------*- CUDA -*-===//
//
// One pass over the input projection's conv channels [q | k | v]: the depthwise
// causal conv (width <= 4) with per-sequence initial and final states, SiLU,
// the split into q, k, v, and the L2 norm of q and k per head; plus the fp32
// gates g and beta. The conv input is read once and q, k, v are written once
// in the layout the delta-rule kernel reads, which is what makes the fused
// prologue cheaper than the conv alone.
//
// Mapping: each thread owns one 16-byte (or 8-byte, Config::kVectorBytes)
// slice of q/k/v channels (their conv input may be wider,
// Config::ConvInput: 32 bytes of f32 beside 8 bf16, 16 beside 4) and
// walks its block's rows, keeping the previous W-1 inputs in registers (a sliding
// window), so every row is read once (plus W-1 halo rows per row block).
// Rows arrive through a per-thread ring of asynchronous copies in shared
// memory, Config::kRowsInFlight deep. The grid is persistent: each row block
// walks one balanced range of rows. A head's K channels are an aligned group
// of K / vector-width lanes, so the L2 norm is a shuffle reduction.
// A sequence boundary resets the window from the sequence's initial state
// (or zeros): no tap ever reads another sequence's tokens.
// Each block validates the packing's offsets itself and finds its rows'
// sequences in them (no table, no launch before it); block (0, 0) writes the
// status record later kernels read (packing.cuh, docs/codegen.md).
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

#include <atomic>

namespace gdn {
namespace device {

template <class Config> struct PrologueArgs {
  using Act = typename Config::Activation;
  const typename ConvInputOf<Config>::type *mixed; ///< [T, C]
  const typename Config::ConvWeight *weight;       ///< [C, W]
  const typename Config::ConvWeight *bias;         ///< [C] or null
  const typename Config::ConvState *initialState;  ///< [N, C, W-1] or null
  typename Config::ConvState *finalState;          ///< [N, C, W-1] or null
  const typename Config::GateInput *a, *b;         ///< [T, HV]
  const typename Config::GateParam *aLog, *dtBias; ///< [HV]
  Act *q, *k, *v;                                  ///< [T, H*K], [T, HV*V]
  float *g, *beta;                                 ///< [T, HV]
  PackingView packing;
  PackingWorkspace workspace; ///< the status record: block (0, 0) writes it
};

/// Optional Config member kVectorBytes: the bytes of q, k or v a thread
/// owns per row, 16 (the default) or 8. The loop over rows is bound by the
/// latency of its instructions (16 warps an SM at 512 threads): over an f32
/// conv input, 16-byte vectors of bf16 (8 channels, two words of input a
/// row) need more than the 128 registers a thread may hold and spill,
/// while 8-byte ones (4 channels, one word) take about 90 and do not.
GDN_OPTIONAL_CONFIG_MEMBER(PrologueVectorBytesOf, kVectorBytes, 16)

/// A thread's channels of one row of q, k or v.
template <class Config>
using PrologueVector = PackedVector<typename Config::Activation,
                                    PrologueVectorBytesOf<Config>::value>;

/// The 16-byte words of conv input a thread reads per row: one vector of
/// PrologueVector's element count, in the input's type (2 for an f32 input
/// beside 16-byte vectors of bf16 q, k, v).
template <class Config> __host__ __device__ constexpr int prologueInputWords() {
  using Input = typename ConvInputOf<Config>::type;
  constexpr int kVec = PrologueVector<Config>::kWidth;
  static_assert(sizeof(Input) >= sizeof(typename Config::Activation),
                "the conv input must be at least as wide as q, k and v");
  static_assert(kVec * sizeof(Input) % 16 == 0,
                "a thread's conv input per row must be whole 16-byte words "
                "(8-byte vectors need an fp32 conv input)");
  return kVec * static_cast<int>(sizeof(Input)) / 16;
}

/// Shared memory of one block, in bytes: the ring of rows in flight (the
/// input words per thread and row) and one 16-byte word for the validation.
template <class Config> constexpr size_t prologueSharedBytes() {
  return sizeof(uint4) * (Config::kThreads * Config::kRowsInFlight *
                              prologueInputWords<Config>() +
                          1);
}

template <class Config>
__global__ void __launch_bounds__(Config::kThreads)
    prologueKernel(PrologueArgs<Config> args) {
  using Act = typename Config::Activation;
  using Vec = PrologueVector<Config>;
  constexpr int kVec = Vec::kWidth;
  using Input = typename ConvInputOf<Config>::type;
  using InVec = VectorOf<Input, kVec>;
  constexpr int kInWords = prologueInputWords<Config>();
  constexpr int kW = Config::kConvWidth;
  constexpr int kHistory = kW - 1;
  // The conv window rotates instead of shifting (see convRow); kPhases rows
  // per unrolled step make every window index a constant.
  constexpr int kPhases = kHistory > 0 ? kHistory : 1;
  constexpr int kRows = Config::kRowsInFlight;
  constexpr int kHeadLanes = Config::kHeadDimK / kVec;
  constexpr int kKeyDim = Config::kKeyHeads * Config::kHeadDimK;
  constexpr int kChannels =
      2 * kKeyDim + Config::kValueHeads * Config::kHeadDimV;
  // When the q/k channels end on a warp boundary, whole warps skip the norm.
  constexpr bool kNormWarpUniform = (2 * kKeyDim) % (32 * kVec) == 0;
  static_assert(Config::kHeadDimK % kVec == 0 && kHeadLanes <= 32 &&
                    (kHeadLanes & (kHeadLanes - 1)) == 0,
                "a head must be a power-of-two group of at most 32 lanes");
  static_assert(kChannels % kVec == 0, "channels must fill whole vectors");
  static_assert(kW <= 4, "the prologue kernel supports conv widths up to 4");
  static_assert(kRows >= 1 && kRows <= 16, "1 to 16 rows in flight");

  const PackingView &packing = args.packing;
  const int32_t tokens = packing.bufferTokens;
  const int c0 = (blockIdx.x * Config::kThreads + threadIdx.x) * kVec;
  // Threads past the last channel exist only when the channels do not fill
  // whole blocks; otherwise the compiler drops every `active` test.
  constexpr bool kAllActive = kChannels % (Config::kThreads * kVec) == 0;
  const bool active = kAllActive || c0 < kChannels;

  // Shared memory, carved from the dynamic allocation (prologueSharedBytes):
  // - ring: the block's i-th row lands in slot i % kRows,
  //   [slot][word][thread] (kInWords 16-byte words of input per thread and
  //   row); each thread copies and reads back only its own words, so the
  //   pipeline needs no barrier, and kRows rows per thread are in flight
  //   without holding registers (the kernel is bound by loads in flight).
  // - then one word for the block's first packing violation.
  extern __shared__ uint4 shared[];
  uint4 *ring = shared;

  // Conv taps and bias in registers: read from shared memory they would cost
  // kVec loads per row, a tenth of the loop's instructions.
  float weight[kW][kVec], bias[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
#pragma unroll
    for (int j = 0; j < kW; ++j)
      weight[j][i] = active ? loadScalar(args.weight + (c0 + i) * kW + j) : 0.0f;
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

  // The grid is persistent (as many row blocks as fit on the GPU at once),
  // and each row block walks one contiguous, balanced range of rows: one
  // pipeline fill and one conv halo per block, and no partial last wave.
  const int64_t rowsPerBlock =
      (static_cast<int64_t>(tokens) + gridDim.y - 1) / gridDim.y;
  const int32_t rangeBegin = static_cast<int32_t>(
      min(static_cast<int64_t>(blockIdx.y) * rowsPerBlock,
          static_cast<int64_t>(tokens)));
  const int32_t rangeEnd = static_cast<int32_t>(
      min(static_cast<int64_t>(rangeBegin) + rowsPerBlock,
          static_cast<int64_t>(tokens)));
  // The walk starts kHistory rows early (the conv halo), so that a sequence
  // entered mid-way finds its previous rows.
  const int32_t haloBegin = max(rangeBegin - kHistory, 0);

  // Copies run kRows rows ahead of the row being computed. One group is
  // committed per row, empty past the range, so that "all but kRows - 1
  // groups done" always means "this row has landed". Pointers and ring
  // offsets advance by addition: the loop has no multiplications left.
  constexpr int kPerWord = 16 / static_cast<int>(sizeof(Input));
  const Input *fetchFrom =
      args.mixed + static_cast<int64_t>(haloBegin) * kChannels + c0;
  const Input *const fetchEnd =
      args.mixed + static_cast<int64_t>(rangeEnd) * kChannels;
  uint4 *const mySlot0 = ring + threadIdx.x;
  constexpr int kSlotStride = kInWords * Config::kThreads;
  int fetchSlot = 0, readSlot = 0;
  auto nextSlot = [](int slot) {
    return slot + kSlotStride == kRows * kSlotStride ? 0 : slot + kSlotStride;
  };
  auto fetchNext = [&]() {
    if (active && fetchFrom < fetchEnd) {
#pragma unroll
      for (int w = 0; w < kInWords; ++w)
        copyAsync16(mySlot0 + fetchSlot + w * Config::kThreads,
                    fetchFrom + w * kPerWord);
    }
    commitAsyncCopies();
    fetchFrom += kChannels;
    fetchSlot = nextSlot(fetchSlot);
  };
  // Takes the next row out of the ring and frees its slot for a new copy.
  auto takeRow = [&]() {
    waitAsyncCopies<kRows - 1>();
    typename InVec::Raw raw;
    uint4 *words = reinterpret_cast<uint4 *>(&raw);
#pragma unroll
    for (int w = 0; w < kInWords; ++w)
      words[w] = active ? mySlot0[readSlot + w * Config::kThreads]
                        : make_uint4(0, 0, 0, 0);
    InVec in;
    in.unpack(raw);
    Vec x;
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      x.values[i] = in.values[i];
    readSlot = nextSlot(readSlot);
    fetchNext(); // after the unpack: the slot's old row is in registers
    return x;
  };
#pragma unroll
  for (int i = 0; i < kRows; ++i)
    fetchNext();

  // The offsets, checked by every block while its first rows are in flight
  // (the copies read only the buffer's rows, never through the offsets):
  // this kernel is the packing's first consumer in a function, so no
  // separate launch validates them before it. Block (0, 0) writes the status
  // record that later kernels read (stream order); with invalid offsets
  // every output this block owns is NaN, never a result.
  const unsigned long long violation = findFirstViolation(
      packing, reinterpret_cast<unsigned long long *>(
                   ring + Config::kThreads * kRows * kInWords));
  const bool invalid = violation != kNoViolation;
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)
    writeStatus(packing, violation, args.workspace.status);

  // The sequence of the next row, the same in every thread: the last one
  // whose slot starts at or before the row (so empty sequences are passed
  // over), found by bisection for the range's first row and then advanced
  // as the walk goes. Valid offsets with rows to walk mean at least one
  // sequence.
  const int32_t numSeqs = packing.numSeqs;
  const int32_t *const slotStarts =
      packing.cuPadded ? packing.cuPadded : packing.cuSeqlens;
  int32_t seq = 0;
  if (!invalid && rangeBegin < rangeEnd) {
    for (int32_t last = numSeqs - 1; seq < last;) {
      const int32_t middle = seq + (last - seq + 1) / 2;
      if (slotStarts[middle] <= rangeBegin)
        seq = middle;
      else
        last = middle - 1;
    }
  }

  // The kHistory rows before the next row to compute, oldest first, of
  // whatever sequence they belong to: filled from the halo, then carried
  // across runs and chunks. Padding rows do not update it: after padding the
  // next row always starts a sequence, which never reads it.
  Vec previous[kPhases];
#pragma unroll
  for (int j = 0; j < kPhases; ++j)
    previous[j].fill(0.0f);
  for (int32_t r = haloBegin; r < rangeBegin; ++r) {
    const Vec x = takeRow();
#pragma unroll
    for (int j = 0; j + 1 < kPhases; ++j)
      previous[j] = previous[j + 1];
    previous[kPhases - 1] = x;
  }

  Act *outRow = out + static_cast<int64_t>(rangeBegin) * outStride;
  // The L2 norm of each q/k head (every lane of the warp takes part in the
  // shuffle unless the whole warp skips it), then the store.
  auto normaliseAndStore = [&](Vec &y) {
    if (!kNormWarpUniform || normalise) {
      float squares = 0.0f;
#pragma unroll
      for (int i = 0; i < kVec; ++i)
        squares += y.values[i] * y.values[i];
      const float total = groupSum<kHeadLanes>(squares);
      if (normalise) {
        const float scale = rsqrtf(total + Config::kNormEps);
#pragma unroll
        for (int i = 0; i < kVec; ++i)
          y.values[i] *= scale;
      }
    }
    if (active)
      y.store(outRow);
    outRow += outStride;
  };

  Vec window[kPhases];
  // One row of a sequence at window phase p: tap j (oldest first) is
  // window[(p + j) % kPhases], and the new row replaces the oldest, so
  // walking kPhases rows brings the window back to phase 0 with no moves.
  auto convRow = [&](auto phase) {
    constexpr int p = decltype(phase)::value;
    const Vec x = takeRow();
    Vec y;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      float sum = bias[i];
#pragma unroll
      for (int j = 0; j < kHistory; ++j)
        sum += weight[j][i] * window[(p + j) % kPhases].values[i];
      sum += weight[kW - 1][i] * x.values[i];
      y.values[i] = Config::kSilu ? silu(sum) : sum;
    }
    if constexpr (kHistory > 0)
      window[p % kPhases] = x;
    normaliseAndStore(y);
  };

  // The range in chunks of kTokensPerBlock rows (the gates are shared out per
  // chunk), each chunk one run of rows of one sequence (or one padding row)
  // at a time: the sequence checks happen once per run, not per row.
  // The chunk end is found as begin + min(size, what is left), which cannot
  // overflow int32 even when a range ends near INT32_MAX. (64-bit chunk
  // positions cost 20 registers and half the resident blocks.)
  for (int32_t chunkBegin = rangeBegin, chunkEnd; chunkBegin < rangeEnd;
       chunkBegin = chunkEnd) {
    chunkEnd = chunkBegin + min(Config::kTokensPerBlock, rangeEnd - chunkBegin);

    int32_t r = chunkBegin;
    while (r < chunkEnd) {
      int32_t seqBegin = 0, seqEnd = 0; // invalid: every row as padding
      if (!invalid) {
        while (seq + 1 < numSeqs && slotStarts[seq + 1] <= r)
          ++seq;
        seqBegin = slotStarts[seq];
        seqEnd = seqBegin + packing.length(seq);
      }
      if (r >= seqEnd) { // padding after the sequence's real tokens
        takeRow();
        Vec y;
        y.fill(invalid ? NAN : 0.0f);
        normaliseAndStore(y);
        ++r;
        continue;
      }
      const int32_t runEnd = min(seqEnd, chunkEnd);
      // The taps before the run's first row: rows of the sequence (when it
      // started before this run), else its initial conv state (column
      // kHistory + row - begin), else zeros.
#pragma unroll
      for (int j = 0; j < kHistory; ++j) {
        const int32_t tapRow = r - kHistory + j;
        if (tapRow >= seqBegin) {
          window[j] = previous[j];
        } else if (Config::kHasInitialState && active) {
          const int column = kHistory + (tapRow - seqBegin);
#pragma unroll
          for (int i = 0; i < kVec; ++i)
            window[j].values[i] = loadScalar(
                args.initialState +
                (static_cast<int64_t>(seq) * kChannels + c0 + i) * kHistory +
                column);
        } else {
          window[j].fill(0.0f);
        }
      }
      const int32_t runBegin = r;
      for (; r + kPhases <= runEnd; r += kPhases)
        staticFor<kPhases>([&](auto phase) { convRow(phase); });
      staticFor<kPhases - 1>([&](auto phase) {
        if (r + decltype(phase)::value < runEnd)
          convRow(phase);
      });
      r = runEnd;
      if constexpr (kHistory > 0) {
        // Back to oldest-first order: the oldest tap sits at the phase the
        // next row would have had.
        const int nextPhase = (runEnd - runBegin) % kPhases;
        staticFor<kPhases>([&](auto phase) {
          constexpr int p = decltype(phase)::value;
          if (nextPhase == p) {
#pragma unroll
            for (int j = 0; j < kPhases; ++j)
              previous[j] = window[(p + j) % kPhases];
          }
        });
      }
      // The run ended its sequence: these taps are its final conv state
      // (a width-1 conv has none: the verifier rejects it).
      if (Config::kHasFinalState && active && runEnd == seqEnd) {
#pragma unroll
        for (int j = 0; j < kHistory; ++j)
#pragma unroll
          for (int i = 0; i < kVec; ++i)
            args.finalState[(static_cast<int64_t>(seq) * kChannels + c0 + i) *
                                kHistory +
                            j] =
                Element<typename Config::ConvState>::store(
                    previous[j].values[i]);
      }
    }

    // Gates for this chunk's tokens, shared out over the channel blocks.
    const int32_t gateCount = (chunkEnd - chunkBegin) * Config::kValueHeads;
    for (int32_t e = blockIdx.x * Config::kThreads + threadIdx.x; e < gateCount;
         e += gridDim.x * Config::kThreads) {
      const int32_t t = chunkBegin + e / Config::kValueHeads;
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
  waitAsyncCopies<0>();

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

#ifndef GDN_DEVICE_EMULATION // host emulation runs the kernel body itself
/// Launches the prologue on `stream`: channel blocks x row blocks, with as
/// many row blocks as are resident on the device at once (at most one per
/// kTokensPerBlock rows), and more than the default 48 KiB of dynamic shared
/// memory when the tile needs it (the verifier bounds it by what Hopper
/// allows; on a GPU that allows less, cudaFuncSetAttribute's error is
/// returned).
template <class Config>
inline cudaError_t launchPrologue(const PrologueArgs<Config> &args,
                                  cudaStream_t stream) {
  constexpr int kVec = PrologueVector<Config>::kWidth;
  constexpr int kChannels = 2 * Config::kKeyHeads * Config::kHeadDimK +
                            Config::kValueHeads * Config::kHeadDimV;
  constexpr size_t bytes = prologueSharedBytes<Config>();
  // The opt-in is set on every launch (a cheap attribute write that a
  // cudaDeviceReset would undo); the resident block count is found once per
  // device, since the occupancy query costs microseconds of host time.
  if (bytes > 48 * 1024) {
    cudaError_t error = cudaFuncSetAttribute(
        prologueKernel<Config>, cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(bytes));
    if (error != cudaSuccess)
      return error;
  }
  constexpr int kMaxDevices = 64;
  static std::atomic<int> residentBlocks[kMaxDevices];
  int device = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error != cudaSuccess)
    return error;
  int resident = device < kMaxDevices ? residentBlocks[device].load() : 0;
  if (resident == 0) {
    int processors = 0, perProcessor = 0;
    error = cudaDeviceGetAttribute(&processors,
                                   cudaDevAttrMultiProcessorCount, device);
    if (error == cudaSuccess)
      error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &perProcessor, prologueKernel<Config>, Config::kThreads, bytes);
    if (error != cudaSuccess)
      return error;
    resident = processors * perProcessor;
    if (device < kMaxDevices)
      residentBlocks[device].store(resident);
  }
  const int channelBlocks =
      (kChannels / kVec + Config::kThreads - 1) / Config::kThreads;
  const int64_t tokens = args.packing.bufferTokens;
  const int64_t chunks =
      (tokens + Config::kTokensPerBlock - 1) / Config::kTokensPerBlock;
  int64_t rowBlocks = resident / channelBlocks;
  rowBlocks = rowBlocks < 1 ? 1 : rowBlocks;
  rowBlocks = chunks < rowBlocks ? (chunks < 1 ? 1 : chunks) : rowBlocks;
  prologueKernel<Config>
      <<<dim3(channelBlocks, static_cast<unsigned>(rowBlocks)),
         Config::kThreads, bytes, stream>>>(args);
  return cudaGetLastError();
}

#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_PROLOGUE_CUH
