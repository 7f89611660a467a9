//===- delta_rule_bench.cu - check and time the delta-rule kernels
//---------===//
//
// Standalone driver for kernels/include/gdn/device/delta_rule.cuh on a GPU
// (no MLIR, no generated code). Inputs are generated on the device by a
// counter-based hash (reproducible, no host transfer for the big shapes):
// q, k rows L2-normalised, v ~ N(0,1), all bf16; g uniform in [-0.5, 0),
// beta = sigmoid(N(0,1)); initial states 0.5 N(0,1). Padding rows hold
// random values too, so a leak into real tokens shows.
//
//   delta_rule_bench check        small and medium packs against a float64
//                                 token-by-token CPU reference (relative RMS
//                                 <= 5e-3, no NaN/Inf, padding rows exactly
//                                 zero), each sequence alone == packed bit
//                                 for bit, 5 runs byte-identical
//   delta_rule_bench bench [N]    times both kernels together (CUDA events,
//                                 5 warm-ups, median of N >= 20 runs), then
//                                 each alone, at the reference shapes;
//                                 prints ms, the ratio to the roofline floor,
//                                 TFLOP/s by the full chunked FLOP count
//                                 (182,955 per token and value head at
//                                 d = 128) and the rate of
//                                 the minimal traffic (q, k, v, o, gates,
//                                 states) over the measured time
//   delta_rule_bench split [N]    split chains (what generated code runs)
//   delta_rule_bench targets [N]  the target shapes alone, split by the rule
//                                 (a short A/B between two builds)
//   delta_rule_bench launch [N]   the default block launched as a
//                                 dependent of the prepare kernel and in
//                                 plain stream order; the prepare kernel
//                                 with and without split bounds
//   delta_rule_bench fused [N]    the experimental one-kernel forward
//                                 against the two kernels, same shapes
//   delta_rule_bench check-fused  only the fused forward's checks (they
//                                 are part of `check` too)
//   delta_rule_bench digest       digests of o, final states and workspace
//                                 for a few configs: two builds that must
//                                 compute the same bits print the same lines
//
// Bench rows also time the forward replayed from a CUDA graph ("graph").
// Environment: BENCH_SETTLE=cold|hot puts the GPU in the same state before
// every row (3 s idle, or 2 s of the row's own forward: the clock follows
// the power draw), BENCH_ONLY=<text> times only rows whose name has it.
//
// Prints one PASS/FAIL line per check; exits non-zero on any failure.
// Build: nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a
//        -I kernels/include -I runtime/include test/Integration/harness/delta_rule_bench.cu
//
//===----------------------------------------------------------------------===//

#include "gdn/device/delta_rule.cuh"
#include "check_lines.h"
#include "compare.h"
#include "cuda_check.h"
#include "device_buffers.cuh"
#include "device_random.cuh"
#include "host_bf16.h"
#include "lengths.h"
#include "timing.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace gdn::device;

namespace {

using namespace harness;

template <int H, int HV, int D, int Vt, bool Initial, bool Final,
          int Stages = 2, int Groups = (Vt / 16 < 4 ? Vt / 16 : 4),
          bool FirstVersion = false, bool Wgmma = false, bool Fused = false>
struct Config {
  using Element = __nv_bfloat16;
  static constexpr int kKeyHeads = H, kValueHeads = HV, kHeadDimK = D,
                       kHeadDimV = D, kValueTile = Vt;
  static constexpr bool kHasInitialState = Initial, kHasFinalState = Final;
  static constexpr int kScanStages = Stages, kScanColumnGroups = Groups;
  // FirstVersion: the layouts of commit 023b9b4 (transposed scan B tiles,
  // the prepare kernel's L apart from Q and K), for comparison.
  static constexpr bool kScanRowMajorTiles = !FirstVersion,
                        kPrepareSharedLower = !FirstVersion;
  static constexpr bool kScanWgmma = Wgmma;
  static constexpr bool kFusedForward = Fused;
};
/// The wgmma scan (sm_90a) with V tile 64 or 128.
template <int H, int HV, int D, int Vt, bool Initial, bool Final>
using WgmmaConfig = Config<H, HV, D, Vt, Initial, Final, 2, 4, false, true>;
/// The fused forward (one warp-specialised kernel, sm_90a).
template <int H, int HV, int D, int Vt, bool Initial, bool Final>
using FusedConfig =
    Config<H, HV, D, Vt, Initial, Final, 2, 4, false, true, true>;
/// A fused config whose producer makes P alone: the prepare kernel (without
/// P) still makes M, G and the bounds (kFusedInverse = false).
template <class C> struct ProducerScores : C {
  static constexpr bool kFusedInverse = false;
};
/// C with its scan launched in plain stream order after the prepare kernel
/// (kProgrammaticLaunch = false), for an A/B in one build.
template <class C> struct PlainLaunch : C {
  static constexpr bool kProgrammaticLaunch = false;
};
/// C whose prepare kernel holds its last value-head pair's blocks back
/// about 200 us (kPrepareDelayCycles), so that the dependent scan's blocks
/// run beside them (checkDependentLaunch).
template <class C> struct SlowLastPrepare : C {
  static constexpr int kPrepareDelayCycles = 400000;
};
/// C with the wgmma scan's P made by the scan itself (true) or by the
/// prepare kernel (false), whatever the default for C's heads
/// (kWgmmaScanScores).
template <class C, bool InScan> struct WithScanScores : C {
  static constexpr bool kWgmmaScanScores = InScan;
};
/// The default scan (V tile 64, two stages, four column groups) with the
/// first version's layouts.
template <int H, int HV, int D, bool Initial, bool Final>
using FirstVersionConfig = Config<H, HV, D, 64, Initial, Final, 2, 4, true>;

/// One problem on the device: shapes, offsets and every tensor.
struct Problem {
  int h = 0, hv = 0, dk = 0, dv = 0;
  std::vector<int> lengths;
  std::vector<int32_t> cu, cuPadded;
  bool padded = false;
  int64_t tokens = 0;
  __nv_bfloat16 *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float *g = nullptr, *beta = nullptr, *state0 = nullptr, *final = nullptr;
  int32_t *cuDevice = nullptr, *cuPaddedDevice = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  // Chain splitting of the runs (DeltaRuleArgs' fields).
  int32_t segmentChunks = 0;
  float warmupLogBound = kDefaultWarmupLogBound;

  size_t qkCount() const { return size_t(tokens) * h * dk; }
  size_t vCount() const { return size_t(tokens) * hv * dv; }
  size_t gateCount() const { return size_t(tokens) * hv; }
  size_t stateCount() const { return lengths.size() * size_t(hv) * dk * dv; }

  PackingView packing() const {
    return {cuDevice, padded ? cuPaddedDevice : nullptr,
            static_cast<int32_t>(lengths.size()), static_cast<int32_t>(tokens)};
  }

  void allocate() {
    q = deviceAlloc<__nv_bfloat16>(qkCount());
    k = deviceAlloc<__nv_bfloat16>(qkCount());
    v = deviceAlloc<__nv_bfloat16>(vCount());
    o = deviceAlloc<__nv_bfloat16>(vCount());
    g = deviceAlloc<float>(gateCount());
    beta = deviceAlloc<float>(gateCount());
    state0 = deviceAlloc<float>(stateCount());
    final = deviceAlloc<float>(stateCount());
    cuDevice = deviceAlloc<int32_t>(cu.size());
    cuPaddedDevice = deviceAlloc<int32_t>(cuPadded.size());
    CUDA_OK(
        cudaMemcpy(cuDevice, cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(cuPaddedDevice, cuPadded.data(), cuPadded.size() * 4,
                       cudaMemcpyHostToDevice));
    workspaceBytes = DeltaRuleWorkspace::bytes(packing(), hv);
    CUDA_OK(cudaMalloc(&workspace, workspaceBytes));
  }

  void release() {
    for (void *p : {(void *)q, (void *)k, (void *)v, (void *)o, (void *)g,
                    (void *)beta, (void *)state0, (void *) final,
                    (void *)cuDevice, (void *)cuPaddedDevice, workspace})
      CUDA_OK(cudaFree(p));
  }
};

Problem makeProblem(int h, int hv, int d, std::vector<int> lengths,
                    std::vector<int> padding, uint32_t seed) {
  Problem p;
  p.h = h;
  p.hv = hv;
  p.dk = p.dv = d;
  p.lengths = std::move(lengths);
  const size_t n = p.lengths.size();
  padding.resize(n, 0);
  p.cu.assign(n + 1, 0);
  p.cuPadded.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    p.cu[i + 1] = p.cu[i] + p.lengths[i];
    p.cuPadded[i + 1] = p.cuPadded[i] + p.lengths[i] + padding[i];
    p.padded = p.padded || padding[i] != 0;
  }
  p.tokens = p.cuPadded[n];
  p.allocate();
  fillRows<<<1024, 128>>>(p.q, p.tokens * h, d, seed * 16 + 1, true);
  fillRows<<<1024, 128>>>(p.k, p.tokens * h, d, seed * 16 + 2, true);
  fillRows<<<1024, 128>>>(p.v, p.tokens * hv, d, seed * 16 + 3, false);
  fillGates<<<1024, 256>>>(p.g, p.beta, int64_t(p.gateCount()), seed * 16 + 4);
  fillNormal<<<1024, 256>>>(p.state0, int64_t(p.stateCount()), 0.5f,
                            seed * 16 + 6);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  return p;
}

/// The launch arguments of a problem (no status record: trusted offsets).
template <class C> DeltaRuleArgs<C> argsFor(const Problem &p) {
  DeltaRuleArgs<C> args = {};
  args.q = p.q;
  args.k = p.k;
  args.v = p.v;
  args.g = p.g;
  args.beta = p.beta;
  args.initialState = C::kHasInitialState ? p.state0 : nullptr;
  args.finalState = C::kHasFinalState ? p.final : nullptr;
  args.o = p.o;
  args.scale = 1.0f / std::sqrt(float(C::kHeadDimK));
  args.packing = p.packing();
  args.segmentChunks = p.segmentChunks;
  args.warmupLogBound = p.warmupLogBound;
  return args;
}

template <class C>
void run(const Problem &p, cudaStream_t stream,
         unsigned phases = kDeltaRuleBoth) {
  CUDA_OK(launchDeltaRule<C>(argsFor<C>(p), p.workspace, stream, phases));
}

//===----------------------------------------------------------------------===//
// check
//===----------------------------------------------------------------------===//

/// docs/spec.md's recurrence token by token in float64 (threads over value
/// heads).
void reference(const Problem &p, bool initial, std::vector<double> &o,
               std::vector<double> &final) {
  const std::vector<float> q = toFloat(download(p.q, p.qkCount())),
                           k = toFloat(download(p.k, p.qkCount())),
                           v = toFloat(download(p.v, p.vCount())),
                           g = download(p.g, p.gateCount()),
                           beta = download(p.beta, p.gateCount()),
                           state0 = download(p.state0, p.stateCount());
  const double scale = 1.0 / std::sqrt(double(p.dk));
  const int n = static_cast<int>(p.lengths.size()), dk = p.dk, dv = p.dv;
  o.assign(p.vCount(), 0.0);
  final.assign(p.stateCount(), 0.0);
  auto head = [&](int hd) {
    const int kh = hd / (p.hv / p.h);
    std::vector<double> s(size_t(dk) * dv), d(dv);
    for (int seq = 0; seq < n; ++seq) {
      const size_t at = (size_t(seq) * p.hv + hd) * dk * dv;
      for (size_t i = 0; i < s.size(); ++i)
        s[i] = initial ? state0[at + i] : 0.0;
      for (int t = 0; t < p.lengths[seq]; ++t) {
        const size_t row = size_t(p.cuPadded[seq]) + t;
        const float *qr = &q[(row * p.h + kh) * dk],
                    *kr = &k[(row * p.h + kh) * dk];
        const float *vr = &v[(row * p.hv + hd) * dv];
        const double alpha = std::exp(double(g[row * p.hv + hd]));
        const double b = beta[row * p.hv + hd];
        for (double &x : s)
          x *= alpha;
        for (int j = 0; j < dv; ++j)
          d[j] = 0.0;
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j)
            d[j] += s[size_t(i) * dv + j] * kr[i];
        for (int j = 0; j < dv; ++j)
          d[j] = b * (vr[j] - d[j]);
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j)
            s[size_t(i) * dv + j] += kr[i] * d[j];
        double *out = &o[(row * p.hv + hd) * dv];
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j)
            out[j] += s[size_t(i) * dv + j] * qr[i];
        for (int j = 0; j < dv; ++j)
          out[j] *= scale;
      }
      for (size_t i = 0; i < s.size(); ++i)
        final[at + i] = s[i];
    }
  };
  std::vector<std::thread> workers;
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&, w] {
      for (int hd = w; hd < p.hv; hd += threads)
        head(hd);
    });
  for (auto &worker : workers)
    worker.join();
}

std::string describe(const char *name, const Problem &p) {
  return std::string(name) + " H=" + std::to_string(p.h) +
         " HV=" + std::to_string(p.hv) + " d=" + std::to_string(p.dk) +
         describeLengths(p.lengths, p.cuPadded);
}

/// The sequence `seq` of `p` as a pack of its own (rows copied on device).
Problem alone(const Problem &p, int seq) {
  Problem one;
  one.h = p.h;
  one.hv = p.hv;
  one.dk = p.dk;
  one.dv = p.dv;
  one.lengths = {p.lengths[seq]};
  one.cu = {0, p.lengths[seq]};
  one.cuPadded = one.cu;
  one.tokens = p.lengths[seq];
  one.segmentChunks = p.segmentChunks;
  one.warmupLogBound = p.warmupLogBound;
  one.allocate();
  const size_t row0 = p.cuPadded[seq];
  auto copy = [](void *to, const void *from, size_t bytes) {
    if (bytes)
      CUDA_OK(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToDevice));
  };
  copy(one.q, p.q + row0 * p.h * p.dk, one.qkCount() * 2);
  copy(one.k, p.k + row0 * p.h * p.dk, one.qkCount() * 2);
  copy(one.v, p.v + row0 * p.hv * p.dv, one.vCount() * 2);
  copy(one.g, p.g + row0 * p.hv, one.gateCount() * 4);
  copy(one.beta, p.beta + row0 * p.hv, one.gateCount() * 4);
  copy(one.state0, p.state0 + size_t(seq) * p.hv * p.dk * p.dv,
       one.stateCount() * 4);
  return one;
}

template <class C>
void checkCase(const char *name, std::vector<int> lengths,
               std::vector<int> padding, uint32_t seed,
               int32_t segmentChunks = 0) {
  Problem p = makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK,
                          std::move(lengths), std::move(padding), seed);
  p.segmentChunks = segmentChunks;
  const std::string what =
      describe(name, p) +
      (segmentChunks ? " split " + std::to_string(segmentChunks) : "");
  // NaN bytes first: an element no thread writes cannot pass.
  CUDA_OK(cudaMemset(p.o, 0xff, p.vCount() * 2));
  CUDA_OK(cudaMemset(p.final, 0xff, p.stateCount() * 4));
  run<C>(p, 0);
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<__nv_bfloat16> o0 = download(p.o, p.vCount());
  const std::vector<float> final0 = download(p.final, p.stateCount());

  std::vector<double> wantO, wantFinal;
  reference(p, C::kHasInitialState, wantO, wantFinal);
  const std::vector<float> got = toFloat(o0);
  bool finite = true, paddingZero = true;
  const size_t row = size_t(p.hv) * p.dv;
  for (size_t s = 0; s < p.lengths.size(); ++s)
    for (size_t r = p.cuPadded[s] + p.lengths[s]; r < size_t(p.cuPadded[s + 1]);
         ++r)
      for (size_t j = 0; j < row; ++j)
        paddingZero = paddingZero && got[r * row + j] == 0.0f &&
                      !std::signbit(got[r * row + j]);
  const double errO = relativeRms(got, wantO, finite);
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, ": o relative RMS %.3e (<= 5e-3)", errO);
  expect(finite && errO <= 5e-3, what + buffer);
  expect(paddingZero, what + ": padding rows of o are zero");
  if (C::kHasFinalState) {
    finite = true;
    const double errS = relativeRms(final0, wantFinal, finite);
    std::snprintf(buffer, sizeof buffer,
                  ": final state relative RMS %.3e (<= 5e-3)", errS);
    expect(finite && errS <= 5e-3, what + buffer);
  }

  bool same = true;
  for (int i = 0; i < 5; ++i) {
    run<C>(p, 0);
    CUDA_OK(cudaDeviceSynchronize());
    same = same && sameBytes(download(p.o, p.vCount()), o0) &&
           sameBytes(download(p.final, p.stateCount()), final0);
  }
  expect(same, what + ": 5 more runs byte-identical");

  bool isolated = true;
  const size_t state = size_t(p.hv) * p.dk * p.dv;
  for (size_t s = 0; s < p.lengths.size(); ++s) {
    Problem one = alone(p, int(s));
    CUDA_OK(cudaMemset(one.final, 0xff, one.stateCount() * 4));
    run<C>(one, 0);
    CUDA_OK(cudaDeviceSynchronize());
    const auto oneO = download(one.o, one.vCount());
    isolated =
        isolated && std::memcmp(oneO.data(), o0.data() + p.cuPadded[s] * row,
                                oneO.size() * 2) == 0;
    if (C::kHasFinalState) {
      const auto oneFinal = download(one.final, state);
      isolated =
          isolated && std::memcmp(oneFinal.data(), final0.data() + s * state,
                                  state * 4) == 0;
    }
    one.release();
  }
  expect(isolated, what + ": each sequence alone == packed, bit for bit");
  p.release();
}

/// Two configurations that round in the same places (the layout knobs, V
/// tiles and stage counts change no arithmetic) give the same bits.
template <class A, class B>
void checkSameBits(const char *name, std::vector<int> lengths,
                   std::vector<int> padding, uint32_t seed) {
  Problem p = makeProblem(A::kKeyHeads, A::kValueHeads, A::kHeadDimK,
                          std::move(lengths), std::move(padding), seed);
  run<A>(p, 0);
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<__nv_bfloat16> oA = download(p.o, p.vCount());
  const std::vector<float> finalA = download(p.final, p.stateCount());
  CUDA_OK(cudaMemset(p.o, 0xff, p.vCount() * 2));
  CUDA_OK(cudaMemset(p.final, 0xff, p.stateCount() * 4));
  run<B>(p, 0);
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<__nv_bfloat16> oB = download(p.o, p.vCount());
  const std::vector<float> finalB = download(p.final, p.stateCount());
  expect(std::memcmp(oA.data(), oB.data(), oA.size() * 2) == 0 &&
             std::memcmp(finalA.data(), finalB.data(), finalA.size() * 4) == 0,
         describe(name, p) + ": o and final states bit-identical");
  p.release();
}

/// Split chains under slow gates (x 1/16: e^-1 per chunk, warm-ups of about
/// 17 chunks) and none (x 0: every segment starts at its sequence's start):
/// segments of 16 chunks against the float64 recurrence, no worse than the
/// unsplit scan, and with no decay bit-identical to it.
template <class C> void checkSlowGates(const char *name, uint32_t seed) {
  for (float gateScale : {1.0f / 16, 0.0f}) {
    Problem p = makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK,
                            {8192, 333}, {}, seed);
    scaleValues<<<1024, 256>>>(p.g, int64_t(p.gateCount()), gateScale);
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<double> wantO, wantFinal;
    reference(p, true, wantO, wantFinal);
    run<C>(p, 0);
    CUDA_OK(cudaDeviceSynchronize());
    const auto wholeO = download(p.o, p.vCount());
    const auto wholeFinal = download(p.final, p.stateCount());
    p.segmentChunks = 16;
    run<C>(p, 0);
    CUDA_OK(cudaDeviceSynchronize());
    const auto splitO = download(p.o, p.vCount());
    const auto splitFinal = download(p.final, p.stateCount());
    bool finite = true;
    const double errWhole = relativeRms(toFloat(wholeO), wantO, finite);
    const double errSplit = relativeRms(toFloat(splitO), wantO, finite);
    const double errFinal = relativeRms(splitFinal, wantFinal, finite);
    char buffer[200];
    std::snprintf(buffer, sizeof buffer,
                  "%s split 16, gates x %g: o relative RMS %.3e "
                  "(unsplit %.3e; <= 1.02x), final %.3e",
                  name, gateScale, errSplit, errWhole, errFinal);
    expect(finite && errSplit <= 1.02 * errWhole && errFinal <= 5e-3, buffer);
    if (gateScale == 0.0f)
      expect(sameBytes(splitO, wholeO) && sameBytes(splitFinal, wholeFinal),
             std::string(name) +
                 " split 16, no decay: every segment from its sequence's "
                 "start, bit-identical to unsplit");
    p.release();
  }
}

/// Bad input on a config: a negative segment length is refused before
/// anything runs (cudaErrorInvalidValue, o keeps its bytes); a packing
/// status that records a violation turns o and the final states into NaN,
/// never numbers from offsets that cannot be trusted.
template <class C> void checkRefusals(const char *name, uint32_t seed) {
  Problem p = makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK, {700, 65},
                          {}, seed);
  CUDA_OK(cudaMemset(p.o, 0x5a, p.vCount() * 2));
  DeltaRuleArgs<C> args = argsFor<C>(p);
  args.segmentChunks = -1;
  const cudaError_t error = launchDeltaRule<C>(args, p.workspace, 0);
  CUDA_OK(cudaDeviceSynchronize());
  bool untouched = true;
  for (const __nv_bfloat16 &x : download(p.o, p.vCount()))
    untouched = untouched && *reinterpret_cast<const uint16_t *>(&x) == 0x5a5a;
  expect(error == cudaErrorInvalidValue && untouched,
         std::string(name) +
             ": segmentChunks = -1: cudaErrorInvalidValue, o untouched");

  gdn_status_t invalid = {};
  invalid.code = GDN_STATUS_DECREASING;
  gdn_status_t *status = nullptr;
  CUDA_OK(cudaMalloc(&status, sizeof invalid));
  CUDA_OK(cudaMemcpy(status, &invalid, sizeof invalid, cudaMemcpyHostToDevice));
  args.segmentChunks = 0;
  args.status = status;
  CUDA_OK(launchDeltaRule<C>(args, p.workspace, 0));
  CUDA_OK(cudaDeviceSynchronize());
  bool allNaN = true;
  for (float x : toFloat(download(p.o, p.vCount())))
    allNaN = allNaN && std::isnan(x);
  if (C::kHasFinalState)
    for (float x : download(p.final, p.stateCount()))
      allNaN = allNaN && std::isnan(x);
  expect(allNaN, std::string(name) +
                     ": a violation in the packing status: o and the final "
                     "states all NaN");
  CUDA_OK(cudaFree(status));
  p.release();
}

/// Split chains: segments of a few chunks (many warm-ups and segment
/// boundaries) on both scans, edge lengths, padding, states; slow gates
/// (long warm-ups); and segments against the unsplit scan.
/// The scan (or the producer-of-P block) launched as a programmatic
/// dependent of the prepare kernel reads the workspace only after the
/// prepare kernel's grid has ended: with the last pair's prepare blocks
/// held back and the workspace, o and the final states filled with NaN
/// bytes first, the outputs equal a plain run's bit for bit, whole and
/// split (a warming segment reads the bounds too).
template <class C> void checkDependentLaunch(const char *name) {
  for (const int32_t segmentChunks : {0, 8}) {
    Problem p = makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK,
                            {700, 65, 1, 2048, 130}, {}, 61);
    p.segmentChunks = segmentChunks;
    run<C>(p, 0);
    CUDA_OK(cudaDeviceSynchronize());
    const auto o0 = download(p.o, p.vCount());
    const auto final0 = download(p.final, p.stateCount());
    CUDA_OK(cudaMemset(p.workspace, 0xff, p.workspaceBytes));
    CUDA_OK(cudaMemset(p.o, 0xff, p.vCount() * 2));
    CUDA_OK(cudaMemset(p.final, 0xff, p.stateCount() * 4));
    run<SlowLastPrepare<C>>(p, 0);
    CUDA_OK(cudaDeviceSynchronize());
    expect(sameBytes(download(p.o, p.vCount()), o0) &&
               sameBytes(download(p.final, p.stateCount()), final0),
           describe(name, p) + (segmentChunks ? " split 8" : "") +
               ": with the last pair's prepare blocks held back, o and the "
               "final states equal a plain run's");
    p.release();
  }
}

void checkSplit() {
  checkCase<WgmmaConfig<16, 32, 128, 128, true, true>>(
      "gqa16x32 wgmma vt128", {4096, 777, 0, 1, 130, 64}, {0, 9, 4, 0, 1, 0},
      31, 8);
  checkCase<WgmmaConfig<16, 32, 128, 64, false, true>>(
      "gqa16x32 wgmma vt64", {2000, 65, 0}, {3, 0, 1}, 32, 3);
  checkCase<WgmmaConfig<4, 4, 64, 64, true, false>>("mha4 d64 wgmma",
                                                    {3000, 63, 1}, {}, 33, 5);
  checkCase<Config<16, 32, 128, 128, true, true>>(
      "gqa16x32 vt128", {4096, 777, 0, 1, 130, 64}, {0, 9, 4, 0, 1, 0}, 34, 8);
  checkCase<Config<16, 32, 128, 64, true, true, 1>>("gqa16x32 1-stage",
                                                    {2000, 65, 0}, {}, 35, 4);
  checkCase<WithScanScores<WgmmaConfig<16, 32, 128, 128, true, true>, true>>(
      "gqa16x32 wgmma vt128 P in scan", {4096, 777, 0, 1, 130, 64},
      {0, 9, 4, 0, 1, 0}, 38, 8);
  checkRefusals<WgmmaConfig<2, 4, 128, 128, true, true>>("gqa2x4 wgmma", 37);
  checkRefusals<WgmmaConfig<4, 4, 128, 128, true, true>>("mha4 wgmma", 40);
  // Slow gates (e^-1 per chunk): warm-ups of about 17 chunks; no decay.
  checkSlowGates<WgmmaConfig<2, 4, 128, 128, true, true>>("gqa2x4 wgmma", 36);
  checkSlowGates<WgmmaConfig<4, 4, 128, 128, true, true>>("mha4 wgmma", 39);
}

/// The fused forward: the wgmma cases (edges, padding, GQA, d = 64, no
/// states, both V tiles), split chains (the warm-up bounds computed from
/// the inputs), slow gates and none, and the refusals.
void checkFused() {
  checkCase<FusedConfig<16, 32, 128, 128, true, true>>(
      "gqa16x32 fused vt128", {0, 1, 63, 64, 65, 130, 700},
      {0, 2, 0, 1, 0, 0, 3}, 41);
  checkCase<FusedConfig<16, 32, 128, 64, true, true>>(
      "gqa16x32 fused vt64", {130, 0, 1, 65, 300}, {1, 0, 0, 2, 0}, 42);
  checkCase<FusedConfig<16, 32, 128, 128, false, true>>(
      "gqa16x32 fused padded", {65, 0, 130, 1, 64}, {3, 5, 62, 0, 1}, 43);
  checkCase<FusedConfig<2, 4, 128, 128, true, true>>(
      "gqa2x4 fused long", {4096, 777, 0}, {0, 9, 4}, 44);
  checkCase<FusedConfig<4, 4, 64, 64, false, false>>(
      "mha4 d64 fused", {63, 64, 65, 130, 1, 0, 2000}, {}, 45);
  checkCase<FusedConfig<32, 32, 128, 128, true, true>>("mha32 fused",
                                                       {100, 64, 1, 0}, {}, 46);
  checkCase<FusedConfig<16, 32, 128, 128, true, true>>(
      "gqa16x32 fused vt128", {4096, 777, 0, 1, 130, 64}, {0, 9, 4, 0, 1, 0},
      47, 8);
  checkCase<FusedConfig<16, 32, 128, 64, false, true>>(
      "gqa16x32 fused vt64", {2000, 65, 0}, {3, 0, 1}, 48, 3);
  // Slow gates and none, the bounds from the inputs.
  checkSlowGates<FusedConfig<2, 4, 128, 128, true, true>>("gqa2x4 fused", 49);
  checkRefusals<FusedConfig<2, 4, 128, 128, true, true>>("gqa2x4 fused", 50);
  // The fused block with a producer of P alone (M, G and the bounds from
  // the prepare kernel): edges, padding, both V tiles, MHA with d = 64,
  // slow gates, refusals; split chains (the fourth case and the slow
  // gates: segments warmed up from the prepare kernel's bounds).
  checkCase<ProducerScores<FusedConfig<16, 32, 128, 128, true, true>>>(
      "gqa16x32 Pproducer vt128", {0, 1, 63, 64, 65, 130, 700},
      {0, 2, 0, 1, 0, 0, 3}, 51);
  checkCase<ProducerScores<FusedConfig<16, 32, 128, 64, false, true>>>(
      "gqa16x32 Pproducer vt64 padded", {65, 0, 130, 1, 64}, {3, 5, 62, 0, 1},
      52);
  checkCase<ProducerScores<FusedConfig<4, 4, 64, 64, false, false>>>(
      "mha4 d64 Pproducer", {63, 64, 65, 130, 1, 0, 2000}, {}, 53);
  checkCase<ProducerScores<FusedConfig<16, 32, 128, 128, true, true>>>(
      "gqa16x32 Pproducer vt128", {4096, 777, 0, 1, 130, 64},
      {0, 9, 4, 0, 1, 0}, 54, 8);
  // Groups of one, three and four value heads per key head, which
  // gdn-select-kernels also gives the producer, whole and split.
  checkCase<ProducerScores<FusedConfig<4, 4, 128, 128, true, true>>>(
      "mha4 Pproducer", {0, 1, 63, 64, 65, 130, 700}, {0, 2, 0, 1, 0, 0, 3},
      57);
  checkCase<ProducerScores<FusedConfig<2, 6, 128, 128, true, true>>>(
      "gqa2x6 Pproducer", {4096, 777, 0, 1, 130, 64}, {0, 9, 4, 0, 1, 0}, 58,
      8);
  checkCase<ProducerScores<FusedConfig<2, 8, 128, 128, true, true>>>(
      "gqa2x8 Pproducer", {0, 1, 63, 64, 65, 130, 700}, {}, 59);
  checkCase<ProducerScores<FusedConfig<2, 8, 128, 128, true, true>>>(
      "gqa2x8 Pproducer", {4096, 777, 0, 1, 130, 64}, {}, 60, 8);
  checkSlowGates<ProducerScores<FusedConfig<2, 4, 128, 128, true, true>>>(
      "gqa2x4 Pproducer", 55);
  checkRefusals<ProducerScores<FusedConfig<2, 4, 128, 128, true, true>>>(
      "gqa2x4 Pproducer", 56);
}

int check() {
  const std::vector<int> edges = {0, 1, 63, 64, 65, 130};
  // The benchmarked shape (gqa16x32, d = 128, V tile 64) with states.
  checkCase<Config<16, 32, 128, 64, true, true>>(
      "gqa16x32", {0, 1, 63, 64, 65, 130, 700}, {}, 1);
  // Alignment padding (cu_padded), final state only.
  checkCase<Config<16, 32, 128, 64, false, true>>(
      "gqa16x32 padded", {65, 0, 130, 1, 64}, {3, 5, 62, 0, 1}, 2);
  // Long sequences: error growth over 64+ chunks; GQA 2 -> 4; V tile 32.
  checkCase<Config<2, 4, 128, 32, true, true>>("gqa2x4 vt32", {4096, 777, 0},
                                               {0, 9, 4}, 3);
  // d = 64, MHA, no states.
  checkCase<Config<4, 4, 64, 64, false, false>>(
      "mha4 d64", {63, 64, 65, 130, 1, 0, 2000}, {}, 4);
  checkCase<Config<2, 4, 64, 32, true, true>>("gqa2x4 d64", edges,
                                              {1, 0, 2, 0, 3, 0}, 5);
  // The scan variants the bench compares: one stage; two column groups.
  checkCase<Config<16, 32, 128, 64, true, true, 1>>(
      "gqa16x32 1-stage", {130, 0, 1, 65, 300}, {2, 0, 0, 1, 0}, 6);
  checkCase<Config<16, 32, 128, 64, true, true, 2, 2>>(
      "gqa16x32 2 groups", {130, 0, 1, 65, 300}, {}, 7);
  checkCase<Config<16, 32, 128, 32, true, true, 1>>(
      "gqa16x32 vt32 1-stage", {130, 0, 1, 65, 300}, {}, 8);
  // V tile 32, two stages (timed on gqa16x32 since the first version).
  checkCase<Config<16, 32, 128, 32, true, true>>(
      "gqa16x32 vt32", {130, 0, 1, 65, 300}, {1, 0, 0, 2, 0}, 20);
  // V tile 16 (one column group: 128 threads), two stages and one; V tile
  // 32 in one column group, one stage; the first version's layouts.
  checkCase<Config<16, 32, 128, 16, true, true>>(
      "gqa16x32 vt16", {130, 0, 1, 65, 300}, {0, 3, 0, 1, 0}, 11);
  checkCase<Config<16, 32, 128, 16, true, true, 1>>(
      "gqa16x32 vt16 1-stage", {130, 0, 1, 65, 300}, {}, 12);
  checkCase<Config<16, 32, 128, 32, true, true, 1, 1>>(
      "gqa16x32 vt32 1-stage 1 group", {130, 0, 1, 65, 300}, {}, 13);
  // V tile 128 (the whole V: one block per sequence and head, four
  // column groups of 32 columns).
  checkCase<Config<16, 32, 128, 128, true, true>>(
      "gqa16x32 vt128", {0, 1, 63, 64, 65, 130, 700}, {0, 2, 0, 1, 0, 0, 3},
      15);
  checkCase<FirstVersionConfig<16, 32, 128, true, true>>(
      "gqa16x32 first version", {0, 1, 63, 64, 65, 130, 700}, {1, 0, 2, 0, 0,
      3, 0}, 14);
  // The layout knobs and the V tile change no rounding: bit-identical.
  checkSameBits<Config<16, 32, 128, 64, true, true>,
                FirstVersionConfig<16, 32, 128, true, true>>(
      "gqa16x32 default == first version", {700, 1, 0, 65}, {0, 2, 1, 0}, 18);
  checkSameBits<Config<16, 32, 128, 64, true, true>,
                Config<16, 32, 128, 128, true, true>>(
      "gqa16x32 vt64 == vt128", {700, 1, 0, 65}, {0, 2, 1, 0}, 19);
  // The wgmma scan: edge lengths, padding, GQA, d = 64, no states, both V
  // tiles.
  checkCase<WgmmaConfig<16, 32, 128, 128, true, true>>(
      "gqa16x32 wgmma vt128", {0, 1, 63, 64, 65, 130, 700},
      {0, 2, 0, 1, 0, 0, 3}, 21);
  checkCase<WgmmaConfig<16, 32, 128, 64, true, true>>(
      "gqa16x32 wgmma vt64", {130, 0, 1, 65, 300}, {1, 0, 0, 2, 0}, 22);
  checkCase<WgmmaConfig<16, 32, 128, 128, false, true>>(
      "gqa16x32 wgmma padded", {65, 0, 130, 1, 64}, {3, 5, 62, 0, 1}, 23);
  checkCase<WgmmaConfig<2, 4, 128, 64, true, true>>(
      "gqa2x4 wgmma long", {4096, 777, 0}, {0, 9, 4}, 24);
  checkCase<WgmmaConfig<4, 4, 64, 64, false, false>>(
      "mha4 d64 wgmma", {63, 64, 65, 130, 1, 0, 2000}, {}, 25);
  checkCase<WgmmaConfig<32, 32, 128, 128, true, true>>("mha32 wgmma",
                                                       {100, 64, 1, 0}, {}, 26);
  // P by the scan where the default takes the prepare kernel's (GQA), and
  // the other way round (MHA); both V tiles, padding.
  checkCase<WithScanScores<WgmmaConfig<16, 32, 128, 128, true, true>, true>>(
      "gqa16x32 wgmma vt128 P in scan", {0, 1, 63, 64, 65, 130, 700},
      {0, 2, 0, 1, 0, 0, 3}, 27);
  checkCase<WithScanScores<WgmmaConfig<16, 32, 128, 64, false, true>, true>>(
      "gqa16x32 wgmma vt64 P in scan", {65, 0, 130, 1, 64}, {3, 5, 62, 0, 1},
      28);
  checkCase<WithScanScores<WgmmaConfig<32, 32, 128, 128, true, true>, false>>(
      "mha32 wgmma P from prepare", {100, 64, 1, 0}, {}, 29);
  // The other benchmarked configurations (MHA: one value head per block in
  // the prepare kernel; groups of four value heads).
  checkCase<Config<32, 32, 128, 64, true, true>>("mha32", {100, 64, 1, 0}, {},
                                                 9);
  checkCase<Config<16, 64, 128, 64, true, true>>("gqa16x64", {130, 65, 0},
                                                 {1, 0, 2}, 10);
  checkCase<Config<32, 32, 128, 128, true, true>>("mha32 vt128",
                                                  {100, 64, 1, 0}, {}, 16);
  checkCase<Config<16, 64, 128, 128, true, true>>(
      "gqa16x64 vt128", {130, 65, 0}, {1, 0, 2}, 17);
  checkSplit();
  checkFused();
  checkDependentLaunch<
      ProducerScores<FusedConfig<16, 32, 128, 128, true, true>>>(
      "gqa16x32 P producer");
  checkDependentLaunch<WgmmaConfig<16, 32, 128, 128, true, true>>(
      "gqa16x32 wgmma");
  return failures;
}

//===----------------------------------------------------------------------===//
// bench
//===----------------------------------------------------------------------===//

/// Median milliseconds of `phases` over `iterations` event-timed runs
/// (after 5 warm-ups); min and max through the pointers.
template <class C>
double timePhases(const Problem &p, cudaStream_t stream, unsigned phases,
                  int iterations, double *fastest, double *slowest) {
  const std::vector<float> ms =
      launchTimesMs(stream, iterations, [&] { run<C>(p, stream, phases); });
  *fastest = ms.front();
  *slowest = ms.back();
  return ms[iterations / 2];
}

/// Median milliseconds of one forward replayed from a CUDA graph (the launches
/// captured once, which small shapes need and as the FLA baseline is timed;
/// docs/performance.md, Method): 5 warm-up replays, then `iterations`
/// event-timed ones.
template <class C>
double timeGraph(const Problem &p, cudaStream_t stream, int iterations) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  run<C>(p, stream, kDeltaRuleBoth);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  const double median = medianLaunchMs(
      stream, iterations, [&] { CUDA_OK(cudaGraphLaunch(exec, stream)); });
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  return median;
}

/// How a bench case splits chains: not at all; by the host rule
/// (deltaRuleSegmentChunks for the GPU's SM count, as generated code does);
/// by the rule with every segment exact (warm-ups from the sequence start).
/// kWhole: one segment per sequence (no split, no warm-up), but the prepare
/// kernel writes the transition bounds as for a split launch (what they
/// cost it).
enum class Split { kNone, kRule, kRuleExact, kWhole };

/// Threads and shared bytes of the launch that does the scan's work (the
/// fused kernel's for a fused config).
template <class C> constexpr int scanThreads() {
  if constexpr (FusedOnlyOf<C>::value)
    return FusedLaunch<C>::kThreads;
  else
    return ScanLaunch<C>::kThreads;
}
template <class C> constexpr size_t scanBytes() {
  if constexpr (FusedOnlyOf<C>::value)
    return FusedLaunch<C>::kBytes;
  else
    return ScanLaunch<C>::kBytes;
}

/// The GPU's state before each bench case (environment BENCH_SETTLE): its clock
/// follows its power draw, and the H200 lets a short burst after an idle spell
/// run faster than the same work at sustained power (SM clock 1410-1980 MHz,
/// 700 W peaks), so a case's time depended on the cases before it. "cold": 3 s
/// idle first; "hot": the case's own forward for 2 s first; unset: neither (the
/// order of cases decides). BENCH_ONLY: time only the rows whose name contains
/// it.
enum class Settle { kNone, kCold, kHot };
Settle settleMode() {
  const char *mode = std::getenv("BENCH_SETTLE");
  if (!mode || !*mode)
    return Settle::kNone;
  if (std::string(mode) == "cold")
    return Settle::kCold;
  if (std::string(mode) == "hot")
    return Settle::kHot;
  // A misspelt state would time the rows unsettled without a word.
  std::fprintf(stderr,
               "delta_rule_bench: BENCH_SETTLE must be cold or hot (or "
               "unset), found '%s'\n",
               mode);
  std::exit(2);
}
bool benchSelected(const char *name) {
  const char *only = std::getenv("BENCH_ONLY");
  return !only || std::string(name).find(only) != std::string::npos;
}

template <class C>
void benchCase(const char *name, std::vector<int> lengths, int iterations,
               double floorUs, Split split = Split::kNone,
               float gateScale = 1.0f, bool modelGates = false) {
  if (!benchSelected(name))
    return;
  Problem p =
      makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK, lengths, {}, 9);
  if (modelGates) {
    fillModelGates<<<1024, 256>>>(p.g, int64_t(p.gateCount()), C::kValueHeads,
                                  77);
    CUDA_OK(cudaDeviceSynchronize());
  }
  if (gateScale != 1.0f) {
    scaleValues<<<1024, 256>>>(p.g, int64_t(p.gateCount()), gateScale);
    CUDA_OK(cudaDeviceSynchronize());
  }
  if (split == Split::kWhole) {
    p.segmentChunks =
        (*std::max_element(lengths.begin(), lengths.end()) + 63) / 64;
  } else if (split != Split::kNone) {
    int device = 0, sms = 0;
    CUDA_OK(cudaGetDevice(&device));
    CUDA_OK(
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    p.segmentChunks = deltaRuleSegmentChunks<C>(p.packing(), sms);
    if (split == Split::kRuleExact)
      p.warmupLogBound = -INFINITY;
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const Settle settle = settleMode();
  if (settle == Settle::kCold) {
    CUDA_OK(cudaDeviceSynchronize());
    std::this_thread::sleep_for(std::chrono::seconds(3));
  } else if (settle == Settle::kHot) {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 20; ++i)
        run<C>(p, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
    }
  }
  double fastest, slowest, ignore;
  const double median =
      timePhases<C>(p, stream, kDeltaRuleBoth, iterations, &fastest, &slowest);
  const double prepare =
      timePhases<C>(p, stream, kDeltaRulePrepare, iterations, &ignore, &ignore);
  const double scan =
      timePhases<C>(p, stream, kDeltaRuleScan, iterations, &ignore, &ignore);
  const double graph = timeGraph<C>(p, stream, iterations);
  // Full chunked FLOP count: 6d^2 + 10Cd + (2/3)C^2 per token and value
  // head.
  const double d = C::kHeadDimK,
               flopPerTokenHead = 6 * d * d + 10 * 64 * d + 2.0 / 3 * 64 * 64;
  const double flop = flopPerTokenHead * double(p.tokens) * C::kValueHeads;
  // Minimal HBM bytes of the fused core (q, k, v in, o out, bf16; gates;
  // states in and out) against which the achieved rate is quoted.
  const double bytes =
      double(p.tokens) * (2.0 * C::kKeyHeads * d * 2 +
                          2.0 * C::kValueHeads * d * 2 + 8.0 * C::kValueHeads) +
      double(lengths.size()) * C::kValueHeads * d * d * 4 *
          (int(C::kHasInitialState) + int(C::kHasFinalState));
  const std::string lens = describeMix(lengths);
  using S = DeltaRuleShape<C>;
  char splitText[96] = "";
  if (split != Split::kNone || modelGates)
    std::snprintf(splitText, sizeof splitText, " [split %d%s, gates %s%g]",
                  p.segmentChunks, split == Split::kRuleExact ? " exact" : "",
                  modelGates ? "model x " : "x ", gateScale);
  if (settle != Settle::kNone)
    std::strncat(splitText, settle == Settle::kCold ? " [cold]" : " [hot]",
                 sizeof splitText - std::strlen(splitText) - 1);
  std::printf("BENCH %-18s %-10s %8.4f ms (min %.4f max %.4f; prepare %.4f, "
              "scan %.4f [%d thr, %zu KiB]; graph %.4f)  floor %.0f us = "
              "%.1f%%  %.1f TFLOP/s  %.2f TB/s minimal-traffic rate%s\n",
              name, lens.c_str(), median, fastest, slowest, prepare, scan,
              scanThreads<C>(), scanBytes<C>() / 1024, graph, floorUs,
              100.0 * floorUs / (median * 1000.0),
              flop / (median * 1e-3) / 1e12, bytes / (median * 1e-3) / 1e12,
              splitText);
  std::fflush(stdout);
  CUDA_OK(cudaStreamDestroy(stream));
  p.release();
}

/// The gqa16x32 forward gdn-select-kernels picks (P from the fused block's
/// producer, scores = "producer").
using DefaultGqa16x32 =
    ProducerScores<FusedConfig<16, 32, 128, 128, true, true>>;
/// The three gqa16x32 mixes of docs/performance.md (Targets and anchors):
/// 8192x4, 1x32768, 2048x4.
const std::vector<std::vector<int>> &targetMixes() {
  static const std::vector<std::vector<int>> mixes = {
      {8192, 8192, 8192, 8192}, {32768}, {2048, 2048, 2048, 2048}};
  return mixes;
}
/// Their roofline floors (us; docs/performance.md, Targets and anchors).
double targetFloorUs(const std::vector<int> &lengths) {
  return lengths[0] == 2048 ? 61 : 243;
}

/// Split chains on the target mixes (the rule leaves 8192x4 and 2048x4 whole),
/// with the bench's gates (about e^-16 per chunk: warm-ups of one or two
/// chunks), slow gates (e^-1 per chunk: about 17) and none (every segment
/// exact: the worst case, no faster than one block per chain). The target
/// shapes as generated code runs them (chains split by the rule), and the mha32
/// and gqa16x64 rows: a short A/B between two builds. Each "default" row is
/// what gdn-select-kernels picks (P from the fused block's producer, scores =
/// "producer", for every group), beside the previous default: gqa16x32's and
/// gqa16x64's two kernels with the prepare kernel's P ("wg128"), mha32's wgmma
/// scan computing P itself ("Pscan", kWgmmaScanScores' default).
int benchTargets(int iterations) {
  using Wg128 = WgmmaConfig<16, 32, 128, 128, true, true>;
  using Producer = DefaultGqa16x32;
  using Mha = WgmmaConfig<32, 32, 128, 128, true, true>;
  using MhaProducer = ProducerScores<FusedConfig<32, 32, 128, 128, true, true>>;
  using Wide = WgmmaConfig<16, 64, 128, 128, true, true>;
  using WideProducer =
      ProducerScores<FusedConfig<16, 64, 128, 128, true, true>>;
  const auto &mixes = targetMixes();
  for (const auto &lengths : mixes) {
    const double floorUs = targetFloorUs(lengths);
    benchCase<Producer>("gqa16x32 default", lengths, iterations, floorUs,
                        Split::kRule);
    benchCase<Wg128>("gqa16x32 wg128", lengths, iterations, floorUs,
                     Split::kRule);
  }
  for (const auto &lengths : {mixes[1], mixes[0]}) {
    benchCase<MhaProducer>("mha32 default", lengths, iterations, 251,
                           Split::kRule);
    benchCase<Mha>("mha32 Pscan", lengths, iterations, 251, Split::kRule);
    benchCase<WideProducer>("gqa16x64 default", lengths, iterations, 486,
                            Split::kRule);
    benchCase<Wide>("gqa16x64 wg128", lengths, iterations, 486, Split::kRule);
  }
  return failures;
}

/// The default gqa16x32 block launched as a programmatic dependent of the
/// prepare kernel (kProgrammaticLaunch, the default) and in plain stream
/// order, then the prepare kernel with and without the transition bounds
/// a split launch needs (its column of the rows split 0 and "whole").
int benchLaunch(int iterations) {
  using Producer = DefaultGqa16x32;
  const auto &mixes = targetMixes();
  for (const auto &lengths : mixes) {
    const double floorUs = targetFloorUs(lengths);
    benchCase<Producer>("gqa16x32 default", lengths, iterations, floorUs,
                        Split::kRule);
    benchCase<PlainLaunch<Producer>>("gqa16x32 plain", lengths, iterations,
                                     floorUs, Split::kRule);
  }
  for (const auto &lengths : {mixes[0], mixes[1]}) {
    benchCase<Producer>("gqa16x32 no bounds", lengths, iterations, 243,
                        Split::kNone);
    benchCase<Producer>("gqa16x32 bounds", lengths, iterations, 243,
                        Split::kWhole);
  }
  return failures;
}

int benchSplit(int iterations) {
  using Wg128 = WgmmaConfig<16, 32, 128, 128, true, true>;
  const std::vector<std::vector<int>> mixes = {{32768},
                                               {16384, 16384},
                                               {8192, 8192, 8192, 8192},
                                               {2048, 2048, 2048, 2048}};
  for (const auto &lengths : mixes) {
    const double floorUs = lengths[0] == 2048 ? 61 : 243;
    benchCase<Wg128>("gqa16x32 wg128", lengths, iterations, floorUs,
                     Split::kRule);
  }
  benchCase<Wg128>("gqa16x32 wg128", {32768}, iterations, 243, Split::kRule,
                   1.0f / 16);
  benchCase<Wg128>("gqa16x32 wg128", {32768}, iterations, 243,
                   Split::kRuleExact);
  // Gates as at a model's initialisation (fillModelGates): a few heads
  // barely decay, and their segments warm up over most of the chain. The
  // wide tile split, the narrow one split and whole.
  using Wg64 = WgmmaConfig<16, 32, 128, 64, true, true>;
  benchCase<Wg128>("gqa16x32 wg128", {32768}, iterations, 243, Split::kRule,
                   1.0f, true);
  benchCase<Wg64>("gqa16x32 wg64", {32768}, iterations, 243, Split::kRule, 1.0f,
                  true);
  benchCase<Wg64>("gqa16x32 wg64", {32768}, iterations, 243, Split::kNone, 1.0f,
                  true);
  benchCase<Wg64>("gqa16x32 wg64", {32768}, iterations, 243, Split::kRule);
  benchCase<Wg128>("gqa16x32 wg128", {131072}, iterations / 4 + 5, 971,
                   Split::kRule);
  benchCase<Wg128>("gqa16x32 wg128", {131072}, iterations / 4 + 5, 971);
  benchCase<WgmmaConfig<16, 32, 128, 64, true, true>>("gqa16x32 wg64", {32768},
                                                      iterations, 243);
  benchCase<WgmmaConfig<32, 32, 128, 128, true, true>>(
      "mha32 wg128", {32768}, iterations, 251, Split::kRule);
  benchCase<WgmmaConfig<16, 64, 128, 128, true, true>>(
      "gqa16x64 wg128", {32768}, iterations, 486, Split::kRule);
  benchCase<WgmmaConfig<16, 16, 128, 128, true, true>>(
      "mha16 wg128", {32768}, iterations, 126, Split::kRule);
  // Each shape's other source of P (kWgmmaScanScores): the scan's for
  // GQA, the prepare kernel's for MHA.
  benchCase<WithScanScores<Wg128, true>>(
      "gqa16x32 Pscan", {8192, 8192, 8192, 8192}, iterations, 243);
  benchCase<WithScanScores<Wg128, true>>("gqa16x32 Pscan", {32768}, iterations,
                                         243, Split::kRule);
  benchCase<WithScanScores<WgmmaConfig<32, 32, 128, 128, true, true>, false>>(
      "mha32 Pprepare", {32768}, iterations, 251, Split::kRule);
  benchCase<WithScanScores<WgmmaConfig<16, 16, 128, 128, true, true>, false>>(
      "mha16 Pprepare", {32768}, iterations, 126, Split::kRule);
  // The same at V tile 64 (one warpgroup makes all of P; the narrow tile
  // of split-chains=false), unsplit.
  using Mha64 = WgmmaConfig<32, 32, 128, 64, true, true>;
  for (const auto &lengths :
       std::vector<std::vector<int>>{{32768}, {8192, 8192, 8192, 8192}}) {
    benchCase<WithScanScores<Mha64, true>>("mha32 wg64 Pscan", lengths,
                                           iterations, 251);
    benchCase<WithScanScores<Mha64, false>>("mha32 wg64 Pprep", lengths,
                                            iterations, 251);
  }
  return failures;
}

/// The fused forward, and the fused block with a producer of P alone,
/// against the two kernels on the target mixes (split by the host rule,
/// as generated code does).
int benchFused(int iterations) {
  using Wg128 = WgmmaConfig<16, 32, 128, 128, true, true>;
  using Fu128 = FusedConfig<16, 32, 128, 128, true, true>;
  const std::vector<std::vector<int>> mixes = {{8192, 8192, 8192, 8192},
                                               {32768},
                                               {2048, 2048, 2048, 2048},
                                               {16384, 16384}};
  for (const auto &lengths : mixes) {
    const double floorUs = lengths[0] == 2048 ? 61 : 243;
    benchCase<Wg128>("gqa16x32 wg128", lengths, iterations, floorUs,
                     Split::kRule);
    benchCase<Fu128>("gqa16x32 fused", lengths, iterations, floorUs,
                     Split::kRule);
    benchCase<ProducerScores<Fu128>>("gqa16x32 Pproducer", lengths, iterations,
                                     floorUs, Split::kRule);
  }
  // Where the fused block's producer of P alone might pay: MHA (the
  // default computes P in the scan's consumers) and groups of four value
  // heads (the prepare kernel's Q K^T serves two).
  benchCase<WgmmaConfig<32, 32, 128, 128, true, true>>(
      "mha32 wg128", {32768}, iterations, 251, Split::kRule);
  benchCase<ProducerScores<FusedConfig<32, 32, 128, 128, true, true>>>(
      "mha32 Pproducer", {32768}, iterations, 251, Split::kRule);
  benchCase<WgmmaConfig<16, 64, 128, 128, true, true>>(
      "gqa16x64 wg128", {32768}, iterations, 486, Split::kRule);
  benchCase<ProducerScores<FusedConfig<16, 64, 128, 128, true, true>>>(
      "gqa16x64 Pproducer", {32768}, iterations, 486, Split::kRule);
  benchCase<WgmmaConfig<16, 64, 128, 128, true, true>>(
      "gqa16x64 wg128", {8192, 8192, 8192, 8192}, iterations, 486,
      Split::kRule);
  benchCase<ProducerScores<FusedConfig<16, 64, 128, 128, true, true>>>(
      "gqa16x64 Pproducer", {8192, 8192, 8192, 8192}, iterations, 486,
      Split::kRule);
  benchCase<Fu128>("gqa16x32 fused", {32768}, iterations, 243, Split::kRule,
                   1.0f, true);
  benchCase<FusedConfig<16, 32, 128, 64, true, true>>(
      "gqa16x32 fused64", {8192, 8192, 8192, 8192}, iterations, 243);
  benchCase<FusedConfig<32, 32, 128, 128, true, true>>(
      "mha32 fused", {32768}, iterations, 251, Split::kRule);
  benchCase<FusedConfig<16, 64, 128, 128, true, true>>(
      "gqa16x64 fused", {32768}, iterations, 486, Split::kRule);
  benchCase<FusedConfig<16, 64, 128, 128, true, true>>(
      "gqa16x64 fused", {8192, 8192, 8192, 8192}, iterations, 486);
  return failures;
}

int bench(int iterations) {
  using Gqa16x32 = Config<16, 32, 128, 64, true, true>;
  using Mha32 = Config<32, 32, 128, 64, true, true>;
  using Gqa16x64 = Config<16, 64, 128, 64, true, true>;
  // Floors: docs/performance.md, Targets and anchors (gqa16x64 has twice
  // the gqa16x32 FLOPs and is compute-bound: 486 us at 8192x4).
  benchCase<Gqa16x32>("gqa16x32", {8192, 8192, 8192, 8192}, iterations, 243);
  benchCase<Gqa16x32>("gqa16x32", {32768}, iterations, 243);
  benchCase<Gqa16x32>("gqa16x32", {2048, 2048, 2048, 2048}, iterations, 61);
  benchCase<Mha32>("mha32", {8192, 8192, 8192, 8192}, iterations, 251);
  benchCase<Gqa16x64>("gqa16x64", {8192, 8192, 8192, 8192}, iterations, 486);
  // The wgmma scan (V tile 128: one block per sequence and head; 64: two).
  using WgVt128 = WgmmaConfig<16, 32, 128, 128, true, true>;
  using WgVt64 = WgmmaConfig<16, 32, 128, 64, true, true>;
  for (const auto &lengths : std::vector<std::vector<int>>{
           {8192, 8192, 8192, 8192}, {32768}, {2048, 2048, 2048, 2048}}) {
    const double floorUs = lengths[0] == 2048 ? 61 : 243;
    benchCase<WgVt128>("gqa16x32 wg128", lengths, iterations, floorUs);
    benchCase<WgVt64>("gqa16x32 wg64", lengths, iterations, floorUs);
  }
  benchCase<WgmmaConfig<32, 32, 128, 128, true, true>>(
      "mha32 wg128", {8192, 8192, 8192, 8192}, iterations, 251);
  benchCase<WgmmaConfig<16, 64, 128, 128, true, true>>(
      "gqa16x64 wg128", {8192, 8192, 8192, 8192}, iterations, 486);
  // V tile 128 (one block per sequence and head) on the other shapes.
  benchCase<Config<32, 32, 128, 128, true, true>>(
      "mha32 vt128", {8192, 8192, 8192, 8192}, iterations, 251);
  benchCase<Config<16, 64, 128, 128, true, true>>(
      "gqa16x64 vt128", {8192, 8192, 8192, 8192}, iterations, 486);
  // Scan variants on gqa16x32, to choose the default: V tile 32 (twice the
  // blocks), one stage (two blocks per SM), two column groups (256 threads).
  using Vt32 = Config<16, 32, 128, 32, true, true>;
  using Vt64OneStage = Config<16, 32, 128, 64, true, true, 1>;
  using Vt32OneStage = Config<16, 32, 128, 32, true, true, 1>;
  using Vt64TwoGroups = Config<16, 32, 128, 64, true, true, 2, 2>;
  using Vt16 = Config<16, 32, 128, 16, true, true>;
  using Vt128 = Config<16, 32, 128, 128, true, true>;
  using Vt16OneStage = Config<16, 32, 128, 16, true, true, 1>;
  using Vt32OneStageOneGroup = Config<16, 32, 128, 32, true, true, 1, 1>;
  using FirstVersion = FirstVersionConfig<16, 32, 128, true, true>;
  const std::vector<std::vector<int>> mixes = {
      {8192, 8192, 8192, 8192}, {32768}, {2048, 2048, 2048, 2048}};
  for (const auto &lengths : mixes) {
    const double floorUs = lengths.size() == 4 && lengths[0] == 2048 ? 61 : 243;
    benchCase<FirstVersion>("gqa16x32 firstver", lengths, iterations,
                            floorUs);
    benchCase<Vt128>("gqa16x32 vt128", lengths, iterations, floorUs);
    benchCase<Vt16>("gqa16x32 vt16", lengths, iterations, floorUs);
    benchCase<Vt16OneStage>("gqa16x32 vt16 1stage", lengths, iterations,
                            floorUs);
    benchCase<Vt32OneStageOneGroup>("gqa16x32 vt32 1st 1g", lengths,
                                    iterations, floorUs);
    benchCase<Vt32>("gqa16x32 vt32", lengths, iterations, floorUs);
    benchCase<Vt64OneStage>("gqa16x32 1stage", lengths, iterations, floorUs);
    benchCase<Vt32OneStage>("gqa16x32 vt32 1stage", lengths, iterations,
                            floorUs);
    benchCase<Vt64TwoGroups>("gqa16x32 2groups", lengths, iterations, floorUs);
  }
  return failures;
}

//===----------------------------------------------------------------------===//
// digest
//===----------------------------------------------------------------------===//

/// FNV-1a over bytes: two builds of the kernels that must compute the same
/// bits (a layout change, a change of where values are staged) print the
/// same digests.
uint64_t fnv1a(const void *data, size_t bytes, uint64_t hash) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i)
    hash = (hash ^ p[i]) * 1099511628211ull;
  return hash;
}

/// One line per case: digests of o, the final states and the whole
/// workspace (zeroed first, so slots no chunk uses hash the same), after one
/// forward on the check's inputs, with chains split where `segmentChunks`
/// says.
template <class C>
void digestCase(const char *name, std::vector<int> lengths,
                int32_t segmentChunks = 0) {
  Problem p =
      makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK, lengths, {}, 5);
  p.segmentChunks = segmentChunks;
  CUDA_OK(cudaMemset(p.workspace, 0, p.workspaceBytes));
  CUDA_OK(cudaMemset(p.final, 0, p.stateCount() * 4)); // unwritten without
  run<C>(p, 0);                                        // final states
  CUDA_OK(cudaDeviceSynchronize());
  const uint64_t basis = 14695981039346656037ull;
  const auto o = download(p.o, p.vCount());
  const auto final = download(p.final, p.stateCount());
  const auto workspace = download(
      static_cast<const unsigned char *>(p.workspace), p.workspaceBytes);
  std::printf(
      "DIGEST %-28s o %016llx final %016llx workspace %016llx\n", name,
      (unsigned long long)fnv1a(o.data(), o.size() * 2, basis),
      (unsigned long long)fnv1a(final.data(), final.size() * 4, basis),
      (unsigned long long)fnv1a(workspace.data(), workspace.size(), basis));
  p.release();
}

/// The blocked inverse's counterpart: forward substitution over all 64 rows.
template <class C> struct WithoutBlockedInverse : C {
  static constexpr bool kPrepareBlockedInverse = false;
};

void digest() {
  const std::vector<int> mix = {700, 65, 1, 2048, 130};
  digestCase<WgmmaConfig<16, 32, 128, 128, true, true>>("gqa16x32 wgmma", mix);
  digestCase<WgmmaConfig<16, 32, 128, 128, true, true>>("gqa16x32 wgmma split",
                                                        mix, 8);
  digestCase<WgmmaConfig<32, 32, 128, 128, true, true>>("mha32 wgmma", mix);
  digestCase<Config<16, 32, 128, 64, true, true>>("gqa16x32 mma vt64", mix);
  digestCase<Config<4, 8, 64, 64, true, false>>("gqa4x8 d64", mix);
  digestCase<WithoutBlockedInverse<Config<16, 32, 128, 64, true, true>>>(
      "gqa16x32 unblocked", mix);
  digestCase<FusedConfig<16, 32, 128, 128, true, true>>("gqa16x32 fused", mix);
  digestCase<ProducerScores<FusedConfig<16, 32, 128, 128, true, true>>>(
      "gqa16x32 fused P producer", mix);
  // Split chains in the fused block (as the default runs them): o and the final
  // states as "gqa16x32 wgmma split", bit for bit (the workspace holds no P).
  digestCase<ProducerScores<FusedConfig<16, 32, 128, 128, true, true>>>(
      "gqa16x32 P producer split", mix, 8);
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  if (mode == "check") {
    const int result = check();
    std::printf("%s: delta rule check, %d failure(s)\n",
                result ? "FAIL" : "PASS", result);
    return result ? 1 : 0;
  }
  if (mode == "digest") {
    digest();
    return 0;
  }
  if (mode == "profile") { // one wgmma case, for a profiler's kernel filter
    benchCase<WgmmaConfig<16, 32, 128, 128, true, true>>(
        "gqa16x32 wg128", {8192, 8192, 8192, 8192}, 20, 243);
    return failures;
  }
  if (mode == "bench" || mode == "split" || mode == "fused" ||
      mode == "targets" || mode == "launch") {
    settleMode(); // a bad BENCH_SETTLE stops here, before the GPU work
    const int iterations = std::max(20, argc > 2 ? std::atoi(argv[2]) : 50);
    return mode == "bench"     ? bench(iterations)
           : mode == "split"   ? benchSplit(iterations)
           : mode == "targets" ? benchTargets(iterations)
           : mode == "launch"  ? benchLaunch(iterations)
                               : benchFused(iterations);
  }
  if (mode == "check-fused") { // the fused forward's checks alone
    checkFused();
    std::printf("%s: fused check, %d failure(s)\n", failures ? "FAIL" : "PASS",
                failures);
    return failures ? 1 : 0;
  }
  std::fprintf(stderr,
               "usage: %s check | check-fused | digest | bench [iterations] "
               "| split [iterations] | targets [iterations] | fused "
               "[iterations] | launch [iterations] | profile\n",
               argv[0]);
  return 2;
}
