//===- prologue_backward.cuh - the prologue backward -----------*- CUDA -*-===//
//
// The reverse of prologue.cuh: given the forward's inputs and the cotangents
// of q, k (after their L2 norm), v, g, beta and the final conv state, the
// gradients of the conv input, the conv weight and bias, the initial conv
// state, a, b, A_log and dt_bias. Nothing the forward computed is saved:
// the conv, SiLU and norms are recomputed from the conv input, which costs
// no more reads than loading saved values would.
//
// Per sequence and channel c, with pre[t] = bias + sum_j w[j] x[t-W+1+j]
// (taps before the sequence read the initial state, or zeros) and
// y = silu(pre):
//   dy    = dv, or for a q/k head with r = rsqrt(sum y^2 + eps):
//           r (dyn - r^2 (y . dyn) y)                 (dyn: q/k's cotangent)
//   dpre  = dy silu'(pre)
//   dx[s] = sum_{d=0}^{W-1} dpre[s+d] w[W-1-d]  over the sequence's rows,
//           plus the final state's cotangent for the last W-1 inputs;
//           s < 0 is the initial state's column W-1+s
//   dw[j] = sum_t dpre[t] x[t-W+1+j],  dbias = sum_t dpre[t]
//
// Kernel 1, prologueBackwardKernel: the mapping of the forward (a thread
// owns one slice of kVectorBytes (8 or 16) of channels and walks its block's contiguous range
// of rows through a cp.async ring), two windows in registers: the last W-1
// inputs (for pre) and the last W-1 dpre (dx[s] is complete once dpre[s+W-1]
// is known, so dx trails the walk by W-1 rows). A block owns dx of its
// rows; it reads W-1 rows before its range (conv taps) and recomputes dpre
// of up to W-1 rows after it (the taps of its last dx rows), so no block
// depends on another and nothing crosses a sequence: each run of rows of
// one sequence starts its windows from the initial state or zeros. The
// weight and bias gradients are per-thread sums over the block's rows,
// written to the workspace per block (no atomics).
//
// Kernel 2, gatesBackwardKernel: da, db elementwise; dA_log and dt_bias's
// sums per block. The forward evaluates the gates on every buffer row
// (padding too, see prologue.cuh), so this is the VJP of that function:
// padding rows get a zero gradient when their cotangents are zero, which is
// what the delta rule's backward gives them.
//
// Kernel 3, sumPartialsKernel (backward_common.cuh): each parameter
// gradient is the sum of the block partials in block order. The block
// counts depend on the token count and the Config only, so the gradients
// are bit-identical run after run and on any GPU.
//
// Kernel 1 checks the offsets itself in every block (packing.cuh's
// findFirstViolation), as the forward prologue does, and its block (0, 0)
// writes the status record kernels 2 and 3 read: invalid offsets make every
// gradient NaN, and no kernel reads memory through them.
// Padding rows get zero gradient in the conv input.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_PROLOGUE_BACKWARD_CUH
#define GDN_DEVICE_PROLOGUE_BACKWARD_CUH

#include "gdn/device/backward_common.cuh"
#include "gdn/device/common.cuh"
#include "gdn/device/packing.cuh"

#include <math.h>

namespace gdn {
namespace device {

/// Config adds to the forward's (prologue.cuh) the gradient types:
///   ActivationGrad (the cotangents dq, dk, dv and the gradient of the conv
///   input; as wide as Activation), ConvStateGrad (final state's cotangent,
///   initial state's gradient), GateInputGrad (da, db), ConvWeightGrad
///   (weight and bias) and GateParamGrad (A_log, dt_bias), each fp32, bf16
///   or f16; and the tile:
///   kVectorBytes (8 or 16: the channels a thread owns, as bytes of
///   Activation; the conv input, ConvInput when the Config names it, may be
///   wider and moves the same channels in more bytes), kThreads,
///   kMinBlocksPerSM (the register budget:
///   __launch_bounds__), kRowsInFlight, kRowBlocks (the most row blocks;
///   each takes at least kMinRowsPerBlock rows) and kGateBlocks.
/// Parameter gradients are summed in fp32 and stored once in their type.
/// Optionally kMixedGradRowStride and kGateGradRowStride: the elements
/// between consecutive tokens of dmixed and of da, db, when they are
/// columns of a wider tensor (the stacked cotangent of the input
/// projections, which one gradient GEMM then reads: docs/codegen.md); 0,
/// the default, is their own width (C, HV).
GDN_OPTIONAL_CONFIG_MEMBER(MixedGradRowStrideOf, kMixedGradRowStride, int64_t{0})
GDN_OPTIONAL_CONFIG_MEMBER(GateGradRowStrideOf, kGateGradRowStride, int64_t{0})

template <class Config> struct PrologueBackwardArgs {
  using ActGrad = typename Config::ActivationGrad;
  // The forward's inputs.
  const typename ConvInputOf<Config>::type *mixed; ///< [T, C]
  const typename Config::ConvWeight *weight;       ///< [C, W]
  const typename Config::ConvWeight *bias;         ///< [C] or null
  const typename Config::ConvState *initialState;  ///< [N, C, W-1] or null
  const typename Config::GateInput *a, *b;         ///< [T, HV]
  const typename Config::GateParam *aLog, *dtBias; ///< [HV]
  // The cotangents of its results.
  const ActGrad *dq, *dk;                            ///< [T, H*K]
  const ActGrad *dv;                                 ///< [T, HV*V]
  const float *dg, *dbeta;                           ///< [T, HV]; null: zeros
  const typename Config::ConvStateGrad *dfinalState; ///< [N, C, W-1] or null
  // The gradients.
  ActGrad *dmixed;                          ///< [T, C]
  typename Config::ConvWeightGrad *dweight; ///< [C, W]
  typename Config::ConvWeightGrad *dbias;   ///< [C] (kHasBias)
  /// [N, C, W-1] when kHasInitialState.
  typename Config::ConvStateGrad *dinitialState;
  typename Config::GateInputGrad *da, *db;         ///< [T, HV]
  typename Config::GateParamGrad *daLog, *ddtBias; ///< [HV]
  PackingView packing;
  /// The status record: kernel 1 validates the offsets and writes it.
  PackingWorkspace metadata;
  /// Per-block partial sums; launchPrologueBackward carves them from its
  /// workspace (PrologueBackwardLayout).
  float *convPartials, *biasPartials, *gatePartials;
};

/// The shape-only quantities both the host and the kernels use.
template <class Config> struct PrologueBackwardShape {
  static constexpr int kVec =
      PackedVector<typename Config::Activation, Config::kVectorBytes>::kWidth;
  /// The conv input's vectors (x) and the cotangents' (dy, dx), kVec
  /// elements each.
  using Vec = VectorOf<typename ConvInputOf<Config>::type, kVec>;
  using GradVec = VectorOf<typename Config::ActivationGrad, kVec>;
  /// The ring moves both in units of the cotangent's vector (x is at
  /// least as wide: kInputUnits of them).
  using Unit = typename GradVec::Raw;
  static constexpr int kInputUnits =
      static_cast<int>(sizeof(typename Vec::Raw) / sizeof(Unit));
  static_assert(sizeof(typename Vec::Raw) % sizeof(Unit) == 0,
                "the conv input must be at least as wide as the cotangents");
  static constexpr int kKeyDim = Config::kKeyHeads * Config::kHeadDimK;
  static constexpr int kChannels =
      2 * kKeyDim + Config::kValueHeads * Config::kHeadDimV;
  /// Elements between consecutive tokens of dmixed and of da, db.
  static constexpr int64_t kMixedGradRowStride =
      MixedGradRowStrideOf<Config>::value ? MixedGradRowStrideOf<Config>::value
                                          : kChannels;
  static constexpr int64_t kGateGradRowStride =
      GateGradRowStrideOf<Config>::value ? GateGradRowStrideOf<Config>::value
                                         : Config::kValueHeads;
  static_assert(kMixedGradRowStride >= kChannels &&
                    kMixedGradRowStride * sizeof(typename Config::ActivationGrad) % 16 == 0,
                "dmixed's rows: at least C elements apart, on 16-byte boundaries");
  static_assert(kGateGradRowStride >= Config::kValueHeads,
                "da's and db's rows: at least HV elements apart");
  static constexpr int kChannelBlocks =
      (kChannels / kVec + Config::kThreads - 1) / Config::kThreads;
  /// Row blocks take at least this many rows: each recomputes up to 2 (W-1)
  /// halo rows.
  static constexpr int64_t kMinRowsPerBlock = 64;
  static constexpr int64_t kMinTokensPerGateBlock = 64;
  /// The ring, then one word for the offsets' check.
  static constexpr size_t kSharedBytes =
      sizeof(Unit) * (kInputUnits + 1) * Config::kThreads *
          Config::kRowsInFlight +
      sizeof(unsigned long long);
  /// Heads handled side by side in the gate kernel: lanes x heads slots.
  static constexpr int kGateLanes = Config::kValueHeads <= Config::kThreads
                                        ? Config::kThreads / Config::kValueHeads
                                        : 1;
  static constexpr int kGateSlots = kGateLanes * Config::kValueHeads;
  static constexpr size_t kGateSharedBytes = sizeof(float) * 2 * kGateSlots;

  static constexpr int64_t rowBlocks(int64_t tokens) {
    return backwardBlocks(tokens, kMinRowsPerBlock, Config::kRowBlocks);
  }
  static constexpr int64_t gateBlocks(int64_t tokens) {
    return backwardBlocks(tokens, kMinTokensPerGateBlock, Config::kGateBlocks);
  }
};

/// Where the partial sums live in the workspace (each piece 256-byte
/// aligned): [row blocks][C][W] weight, [row blocks][C] bias,
/// [gate blocks][2][HV] A_log then dt_bias.
template <class Config> struct PrologueBackwardLayout {
  using S = PrologueBackwardShape<Config>;
  size_t conv, bias, gates, total;
  explicit PrologueBackwardLayout(int64_t tokens) {
    const size_t rows = static_cast<size_t>(S::rowBlocks(tokens));
    conv = 0;
    bias = alignWorkspace(sizeof(float) * rows * S::kChannels *
                          Config::kConvWidth);
    gates = bias + (Config::kHasBias
                        ? alignWorkspace(sizeof(float) * rows * S::kChannels)
                        : 0);
    total = gates + alignWorkspace(sizeof(float) * 2 * Config::kValueHeads *
                                   static_cast<size_t>(S::gateBlocks(tokens)));
  }
};

template <class Config>
__global__ void __launch_bounds__(Config::kThreads, Config::kMinBlocksPerSM)
    prologueBackwardKernel(PrologueBackwardArgs<Config> args) {
  using S = PrologueBackwardShape<Config>;
  using Vec = typename S::Vec;
  using GradVec = typename S::GradVec;
  using Unit = typename S::Unit;
  constexpr int kInputUnits = S::kInputUnits;
  constexpr int kVec = S::kVec;
  constexpr int kW = Config::kConvWidth;
  constexpr int kHistory = kW - 1;
  // The windows rotate as in the forward: kPhases rows per unrolled step
  // make every window index a constant.
  constexpr int kPhases = kHistory > 0 ? kHistory : 1;
  constexpr int kRows = Config::kRowsInFlight;
  constexpr int kHeadLanes = Config::kHeadDimK / kVec;
  constexpr int kKeyDim = S::kKeyDim;
  constexpr int kChannels = S::kChannels;
  constexpr int kThreads = Config::kThreads;
  constexpr bool kNormWarpUniform = (2 * kKeyDim) % (32 * kVec) == 0;
  static_assert(Config::kHeadDimK % kVec == 0 && kHeadLanes <= 32 &&
                    (kHeadLanes & (kHeadLanes - 1)) == 0,
                "a head must be a power-of-two group of at most 32 lanes");
  static_assert(kChannels % kVec == 0, "channels must fill whole vectors");
  static_assert(kW >= 1 && kW <= 4, "conv widths 1 to 4");
  static_assert(kRows >= 1 && kRows <= 8, "1 to 8 rows in flight");

  const PackingView &packing = args.packing;
  const int32_t tokens = packing.bufferTokens;
  const int c0 = (blockIdx.x * kThreads + threadIdx.x) * kVec;
  constexpr bool kAllActive = kChannels % (kThreads * kVec) == 0;
  const bool active = kAllActive || c0 < kChannels;

  float weight[kW][kVec], bias[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
#pragma unroll
    for (int j = 0; j < kW; ++j)
      weight[j][i] =
          active ? loadScalar(args.weight + (c0 + i) * kW + j) : 0.0f;
    bias[i] =
        (active && Config::kHasBias) ? loadScalar(args.bias + c0 + i) : 0.0f;
  }

  // This thread's cotangent columns: q, k or v.
  const typename Config::ActivationGrad *cotangent;
  int cotangentStride;
  if (c0 < kKeyDim) {
    cotangent = args.dq + c0;
    cotangentStride = kKeyDim;
  } else if (c0 < 2 * kKeyDim) {
    cotangent = args.dk + (c0 - kKeyDim);
    cotangentStride = kKeyDim;
  } else {
    cotangent = args.dv + (c0 - 2 * kKeyDim);
    cotangentStride = kChannels - 2 * kKeyDim;
  }
  const bool normalise = c0 < 2 * kKeyDim;

  int32_t rangeBegin, rangeEnd;
  balancedRange(tokens, gridDim.y, blockIdx.y, rangeBegin, rangeEnd);
  // The walk reads W-1 rows before the range (conv taps of its first rows)
  // and up to W-1 after it (dpre of the rows its last dx rows need).
  const int32_t fetchBegin = max(rangeBegin - kHistory, 0);
  const int32_t fetchEnd = static_cast<int32_t>(min(
      static_cast<int64_t>(rangeEnd) + kHistory, static_cast<int64_t>(tokens)));

  // The ring: row i of the walk lands in slot i % kRows,
  // [slot][x units, dy][thread] (x takes kInputUnits units of dy's size);
  // each thread reads back only its own copies (no barrier), as in the
  // forward. One group per row, empty past the walk.
  extern __shared__ uint4 shared[];
  Unit *const mine = reinterpret_cast<Unit *>(shared) + threadIdx.x;
  constexpr int kSlotStride = (kInputUnits + 1) * kThreads;
  constexpr int kUnitElements =
      static_cast<int>(sizeof(Unit) / sizeof(*args.mixed));
  int32_t fetchRow = fetchBegin;
  int fetchSlot = 0, readSlot = 0;
  auto nextSlot = [](int slot) {
    return slot + kSlotStride == kRows * kSlotStride ? 0 : slot + kSlotStride;
  };
  auto fetchNext = [&]() {
    if (active && fetchRow < fetchEnd) {
      const auto *x = args.mixed + static_cast<int64_t>(fetchRow) * kChannels + c0;
#pragma unroll
      for (int u = 0; u < kInputUnits; ++u)
        copyAsync<sizeof(Unit)>(mine + fetchSlot + u * kThreads,
                                x + u * kUnitElements);
      copyAsync<sizeof(Unit)>(mine + fetchSlot + kInputUnits * kThreads,
                              cotangent + static_cast<int64_t>(fetchRow) *
                                              cotangentStride);
    }
    commitAsyncCopies();
    ++fetchRow;
    fetchSlot = nextSlot(fetchSlot);
  };
  auto takeRow = [&](Vec &x, GradVec &dy) {
    waitAsyncCopies<kRows - 1>();
    const Unit zero = {};
    typename Vec::Raw raw;
    Unit *units = reinterpret_cast<Unit *>(&raw);
#pragma unroll
    for (int u = 0; u < kInputUnits; ++u)
      units[u] = active ? mine[readSlot + u * kThreads] : zero;
    x.unpack(raw);
    dy.unpack(active ? mine[readSlot + kInputUnits * kThreads] : zero);
    readSlot = nextSlot(readSlot);
    fetchNext();
  };
#pragma unroll
  for (int i = 0; i < kRows; ++i)
    fetchNext();

  // The offsets, checked by every block while its first rows are in flight
  // (the copies read only buffer rows, never through the offsets). Block
  // (0, 0) writes the status record the later kernels read (stream order).
  const unsigned long long violation = findFirstViolation(
      packing, reinterpret_cast<unsigned long long *>(
                   reinterpret_cast<Unit *>(shared) + kSlotStride * kRows));
  const bool invalid = violation != kNoViolation;
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)
    writeStatus(packing, violation, args.metadata.status);

  // The W-1 inputs before the range, oldest first (zeros before row 0).
  Vec previous[kPhases];
#pragma unroll
  for (int j = 0; j < kPhases; ++j)
    previous[j].fill(0.0f);
  for (int32_t r = fetchBegin; r < rangeBegin; ++r) {
    Vec x;
    GradVec unused;
    takeRow(x, unused);
#pragma unroll
    for (int j = 0; j + 1 < kPhases; ++j)
      previous[j] = previous[j + 1];
    previous[kPhases - 1] = x;
  }

  float dweight[kW][kVec], dbias[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    dbias[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < kW; ++j)
      dweight[j][i] = 0.0f;
  }

  const int64_t stateBase = static_cast<int64_t>(c0) * kHistory;
  auto stateAt = [&](int32_t seq, int i, int column) {
    return static_cast<int64_t>(seq) * kChannels * kHistory + stateBase +
           i * kHistory + column;
  };

  // The sequence whose slot holds `row`: the last one whose slot starts at
  // or before it (so empty sequences are passed over), by bisection. Valid
  // offsets with rows to walk mean at least one sequence.
  const int32_t *const slotStarts =
      packing.cuPadded ? packing.cuPadded : packing.cuSeqlens;
  auto slotOf = [&](int32_t row) {
    int32_t seq = 0;
    for (int32_t last = packing.numSeqs - 1; seq < last;) {
      const int32_t middle = seq + (last - seq + 1) / 2;
      if (slotStarts[middle] <= row)
        seq = middle;
      else
        last = middle - 1;
    }
    return seq;
  };
  // A row no tap reads: padding (zero gradient), or any row when the
  // offsets are invalid (NaN).
  auto inertRow = [&](int32_t r) {
    Vec x;
    GradVec unused, out;
    takeRow(x, unused);
    out.fill(invalid ? NAN : 0.0f);
    if (active)
      out.store(args.dmixed + static_cast<int64_t>(r) * S::kMixedGradRowStride + c0);
  };

  for (int32_t r = rangeBegin; r < rangeEnd;) {
    if (invalid) {
      inertRow(r++);
      continue;
    }
    const int32_t seq = slotOf(r);
    const int32_t seqBegin = packing.begin(seq);
    const int32_t seqEnd = seqBegin + packing.length(seq);
    if (r >= seqEnd) {
      // The padding after the sequence's real tokens, to its slot's end.
      const int32_t paddingEnd = min(seqBegin + packing.slot(seq), rangeEnd);
      while (r < paddingEnd)
        inertRow(r++);
      continue;
    }
    const int32_t runBegin = r;
    const int32_t runEnd = min(seqEnd, rangeEnd);
    // dpre is needed W-1 rows past the run when the sequence goes on.
    const int32_t computeEnd =
        runEnd < seqEnd ? static_cast<int32_t>(
                              min(static_cast<int64_t>(seqEnd),
                                  static_cast<int64_t>(rangeEnd) + kHistory))
                        : seqEnd;
    const bool startsSequence = runBegin == seqBegin;

    // Conv taps before the run: rows of the sequence (the range's first
    // run), else the initial state (column W-1 + row - begin), else zeros.
    Vec window[kPhases], pending[kPhases];
#pragma unroll
    for (int j = 0; j < kPhases; ++j) {
      pending[j].fill(0.0f);
      const int32_t tapRow = r - kHistory + j;
      if (kHistory > 0 && tapRow >= seqBegin) {
        window[j] = previous[j];
      } else if (Config::kHasInitialState && kHistory > 0 && active) {
#pragma unroll
        for (int i = 0; i < kVec; ++i)
          window[j].values[i] =
              loadScalar(args.initialState +
                         stateAt(seq, i, kHistory + tapRow - seqBegin));
      } else {
        window[j].fill(0.0f);
      }
    }

    // The finished gradient of input s (a row of the run, or before the
    // sequence: the initial state's column), with the final state's
    // cotangent when s is one of the last W-1 inputs.
    auto emit = [&](int32_t s, Vec &out) {
      const bool row = s >= runBegin && s < runEnd;
      const bool state =
          Config::kHasInitialState && startsSequence && s < seqBegin;
      if (!active || !(row || state))
        return;
      if (Config::kHasFinalState && args.dfinalState &&
          s >= seqEnd - kHistory) {
#pragma unroll
        for (int i = 0; i < kVec; ++i)
          out.values[i] += loadScalar(args.dfinalState +
                                      stateAt(seq, i, s - (seqEnd - kHistory)));
      }
      if (row) {
        GradVec stored;
#pragma unroll
        for (int i = 0; i < kVec; ++i)
          stored.values[i] = out.values[i];
        stored.store(args.dmixed + static_cast<int64_t>(s) * S::kMixedGradRowStride + c0);
      } else {
#pragma unroll
        for (int i = 0; i < kVec; ++i)
          args.dinitialState[stateAt(seq, i, kHistory + s - seqBegin)] =
              Element<typename Config::ConvStateGrad>::store(out.values[i]);
      }
    };

    // One row t at window phase p: tap j (oldest first) is
    // window[(p + j) % kPhases], pending[(p + j) % kPhases] is dpre of row
    // t - W + 1 + j; the new row replaces the oldest of each.
    auto backRow = [&](auto phase, int32_t t) {
      constexpr int p = decltype(phase)::value;
      Vec x;
      GradVec dy;
      takeRow(x, dy);
      float y[kVec], slope[kVec];
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        float pre = bias[i];
#pragma unroll
        for (int j = 0; j < kHistory; ++j)
          pre += weight[j][i] * window[(p + j) % kPhases].values[i];
        pre += weight[kW - 1][i] * x.values[i];
        if (Config::kSilu) {
          siluWithSlope(pre, y[i], slope[i]);
        } else {
          y[i] = pre;
          slope[i] = 1.0f;
        }
      }
      // Through the L2 norm of q and k: dy = r (dyn - r^2 (y . dyn) y).
      if (!kNormWarpUniform || normalise) {
        float squares = 0.0f, projection = 0.0f;
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          squares += y[i] * y[i];
          projection += y[i] * dy.values[i];
        }
        squares = groupSum<kHeadLanes>(squares);
        projection = groupSum<kHeadLanes>(projection);
        if (normalise) {
          const float r = rsqrtf(squares + Config::kNormEps);
          const float along = r * r * projection;
#pragma unroll
          for (int i = 0; i < kVec; ++i)
            dy.values[i] = r * (dy.values[i] - along * y[i]);
        }
      }
      Vec dpre, out;
#pragma unroll
      for (int i = 0; i < kVec; ++i)
        dpre.values[i] = dy.values[i] * slope[i];
      if (t < runEnd) {
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
#pragma unroll
          for (int j = 0; j < kHistory; ++j)
            dweight[j][i] +=
                dpre.values[i] * window[(p + j) % kPhases].values[i];
          dweight[kW - 1][i] += dpre.values[i] * x.values[i];
          if (Config::kHasBias)
            dbias[i] += dpre.values[i];
        }
      }
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        float sum = dpre.values[i] * weight[0][i];
#pragma unroll
        for (int j = 0; j < kHistory; ++j)
          sum += pending[(p + j) % kPhases].values[i] * weight[kW - 1 - j][i];
        out.values[i] = sum;
      }
      emit(t - kHistory, out);
      if constexpr (kHistory > 0) {
        window[p % kPhases] = x;
        pending[p % kPhases] = dpre;
      }
    };

    int32_t t = runBegin;
#pragma unroll 1
    for (; t + kPhases <= computeEnd; t += kPhases)
      staticFor<kPhases>(
          [&](auto phase) { backRow(phase, t + decltype(phase)::value); });
    staticFor<kPhases - 1>([&](auto phase) {
      if (t + decltype(phase)::value < computeEnd)
        backRow(phase, t + decltype(phase)::value);
    });

    // The sequence ended inside the walk: its last W-1 inputs (and, for a
    // sequence shorter than W-1, initial-state columns) have every dpre
    // they need; the rows past the end contribute nothing.
    if constexpr (kHistory > 0) {
      if (computeEnd == seqEnd) {
        const int nextPhase = (computeEnd - runBegin) % kPhases;
        Vec ordered[kPhases]; // pending, oldest first
        staticFor<kPhases>([&](auto phase) {
          constexpr int p = decltype(phase)::value;
          if (nextPhase == p) {
#pragma unroll
            for (int j = 0; j < kPhases; ++j)
              ordered[j] = pending[(p + j) % kPhases];
          }
        });
#pragma unroll
        for (int k = 0; k < kHistory; ++k) {
          Vec out;
#pragma unroll
          for (int i = 0; i < kVec; ++i) {
            float sum = 0.0f;
#pragma unroll
            for (int d = 0; d + k < kHistory; ++d)
              sum += ordered[k + d].values[i] * weight[kW - 1 - d][i];
            out.values[i] = sum;
          }
          emit(seqEnd - kHistory + k, out);
        }
      }
    }
    r = runEnd;
  }
  waitAsyncCopies<0>();

  // Sequences with no rows: their final state is their initial state. With
  // invalid metadata every initial-state gradient is NaN.
  if (Config::kHasInitialState && kHistory > 0 && active && blockIdx.y == 0) {
    for (int32_t seq = 0; seq < packing.numSeqs; ++seq) {
      if (!invalid && packing.length(seq) != 0)
        continue;
      for (int i = 0; i < kVec; ++i)
        for (int j = 0; j < kHistory; ++j) {
          const int64_t at = stateAt(seq, i, j);
          const float value = invalid ? NAN
                              : (Config::kHasFinalState && args.dfinalState)
                                  ? loadScalar(args.dfinalState + at)
                                  : 0.0f;
          args.dinitialState[at] =
              Element<typename Config::ConvStateGrad>::store(value);
        }
    }
  }

  // This block's share of the weight and bias gradients.
  if (active) {
    float *to = args.convPartials +
                (static_cast<int64_t>(blockIdx.y) * kChannels + c0) * kW;
#pragma unroll
    for (int i = 0; i < kVec; ++i)
#pragma unroll
      for (int j = 0; j < kW; ++j)
        to[i * kW + j] = dweight[j][i];
    if (Config::kHasBias) {
#pragma unroll
      for (int i = 0; i < kVec; ++i)
        args.biasPartials[static_cast<int64_t>(blockIdx.y) * kChannels + c0 +
                          i] = dbias[i];
    }
  }
}

/// da, db elementwise over every buffer row, and this block's sums of the
/// A_log and dt_bias gradients. Slot (lane, head) of kGateLanes x HV walks
/// rows lane, lane + kGateLanes, ... of the block's range: consecutive
/// threads read consecutive elements, and the per-head sums add the lanes
/// in order.
template <class Config>
__global__ void __launch_bounds__(Config::kThreads)
    gatesBackwardKernel(PrologueBackwardArgs<Config> args) {
  using S = PrologueBackwardShape<Config>;
  constexpr int kHV = Config::kValueHeads;
  constexpr int kLanes = S::kGateLanes, kSlots = S::kGateSlots;
  using GradT = typename Config::GateInputGrad;
  const bool invalid = args.metadata.status->code != GDN_STATUS_OK;
  int32_t begin, end;
  balancedRange(args.packing.bufferTokens, gridDim.x, blockIdx.x, begin, end);
  extern __shared__ uint4 shared[];
  float *sums = reinterpret_cast<float *>(shared); // [2][kSlots]
  const float scale = Config::kNegEigval ? 2.0f : 1.0f;
  for (int slot = threadIdx.x; slot < kSlots; slot += Config::kThreads) {
    const int lane = slot / kHV, h = slot % kHV;
    const float rate = expf(loadScalar(args.aLog + h));
    const float dtBias = loadScalar(args.dtBias + h);
    float sumALog = 0.0f, sumDtBias = 0.0f;
    for (int32_t t = begin + lane; t < end; t += kLanes) {
      const int64_t at = static_cast<int64_t>(t) * kHV + h;
      const int64_t gradAt = static_cast<int64_t>(t) * S::kGateGradRowStride + h;
      if (invalid) {
        args.da[gradAt] = Element<GradT>::store(NAN);
        args.db[gradAt] = Element<GradT>::store(NAN);
        continue;
      }
      // g = -exp(A_log) softplus(u), u = a + dt_bias; softplus' is
      // sigmoid(u) below the threshold of 20 and 1 above it.
      const float dg = args.dg ? args.dg[at] : 0.0f;
      const float u = loadScalar(args.a + at) + dtBias;
      const float softplusU = softplus(u);
      const float slope = u > 20.0f ? 1.0f : sigmoid(u);
      const float du = dg * (-rate * slope);
      sumALog += dg * (-rate * softplusU);
      sumDtBias += du;
      args.da[gradAt] = Element<GradT>::store(du);
      // beta = c sigmoid(b): dbeta/db = c s (1 - s).
      const float dbeta = args.dbeta ? args.dbeta[at] : 0.0f;
      const float s = sigmoid(loadScalar(args.b + at));
      args.db[gradAt] = Element<GradT>::store(dbeta * scale * s * (1.0f - s));
    }
    sums[slot] = sumALog;
    sums[kSlots + slot] = sumDtBias;
  }
  __syncthreads();
  for (int h = threadIdx.x; h < kHV; h += Config::kThreads) {
    float aLogTotal = 0.0f, dtBiasTotal = 0.0f;
    for (int lane = 0; lane < kLanes; ++lane) {
      aLogTotal += sums[lane * kHV + h];
      dtBiasTotal += sums[kSlots + lane * kHV + h];
    }
    float *to = args.gatePartials + static_cast<int64_t>(blockIdx.x) * 2 * kHV;
    to[h] = aLogTotal;
    to[kHV + h] = dtBiasTotal;
  }
}

/// The final sums of the parameter gradients (kernel 3's job) over the
/// partials of `rows` row blocks and `gates` gate blocks; `count` is set to
/// the number of sums.
template <class Config>
inline PartialSums
prologueBackwardSums(const PrologueBackwardArgs<Config> &args, int32_t rows,
                     int32_t gates, int &count) {
  using S = PrologueBackwardShape<Config>;
  constexpr int kHV = Config::kValueHeads;
  PartialSums job = {};
  job.status = args.metadata.status;
  count = 0;
  constexpr int32_t kWeights = S::kChannels * Config::kConvWidth;
  job.sums[count++] =
      partialSum(args.convPartials, args.dweight, rows, kWeights, kWeights);
  if (Config::kHasBias)
    job.sums[count++] = partialSum(args.biasPartials, args.dbias, rows,
                                   S::kChannels, S::kChannels);
  // The gate partials are [block][A_log | dt_bias][HV].
  job.sums[count++] =
      partialSum(args.gatePartials, args.daLog, gates, kHV, 2 * kHV);
  job.sums[count++] =
      partialSum(args.gatePartials + kHV, args.ddtBias, gates, kHV, 2 * kHV);
  return job;
}

/// Workspace bytes of launchPrologueBackward for a buffer of `tokens` rows
/// (host side, no device access); the status record is separate
/// (PackingWorkspace).
template <class Config>
inline size_t prologueBackwardWorkspaceBytes(int64_t tokens) {
  return PrologueBackwardLayout<Config>(tokens).total;
}

/// Points args' partial sums into `workspace` (256-byte aligned).
template <class Config>
inline void carvePrologueBackwardWorkspace(PrologueBackwardArgs<Config> &args,
                                           void *workspace) {
  const PrologueBackwardLayout<Config> layout(args.packing.bufferTokens);
  char *base = static_cast<char *>(workspace);
  args.convPartials = reinterpret_cast<float *>(base + layout.conv);
  args.biasPartials = Config::kHasBias
                          ? reinterpret_cast<float *>(base + layout.bias)
                          : nullptr;
  args.gatePartials = reinterpret_cast<float *>(base + layout.gates);
}

#ifndef GDN_DEVICE_EMULATION // host emulation runs the kernel bodies itself
/// Launches the three kernels on `stream`; `workspace` holds
/// prologueBackwardWorkspaceBytes bytes. No host synchronisation; the
/// offsets need no earlier validation (kernel 1 checks them).
template <class Config>
inline cudaError_t launchPrologueBackward(PrologueBackwardArgs<Config> args,
                                          void *workspace,
                                          cudaStream_t stream) {
  using S = PrologueBackwardShape<Config>;
  carvePrologueBackwardWorkspace(args, workspace);
  const int64_t tokens = args.packing.bufferTokens;
  if (S::kSharedBytes > 48 * 1024) {
    cudaError_t error =
        cudaFuncSetAttribute(prologueBackwardKernel<Config>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(S::kSharedBytes));
    if (error != cudaSuccess)
      return error;
  }
  prologueBackwardKernel<Config>
      <<<dim3(S::kChannelBlocks, static_cast<unsigned>(S::rowBlocks(tokens))),
         Config::kThreads, S::kSharedBytes, stream>>>(args);
  gatesBackwardKernel<Config>
      <<<static_cast<unsigned>(S::gateBlocks(tokens)), Config::kThreads,
         S::kGateSharedBytes, stream>>>(args);
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    return error;
  int count = 0;
  PartialSums job =
      prologueBackwardSums(args, static_cast<int32_t>(S::rowBlocks(tokens)),
                           static_cast<int32_t>(S::gateBlocks(tokens)), count);
  return launchSumPartials(job, count, stream);
}
#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_PROLOGUE_BACKWARD_CUH
