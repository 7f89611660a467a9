//===- delta_rule_backward_bench.cu - check and time the delta-rule backward ===//
//
// Standalone driver for kernels/include/gdn/device/delta_rule_backward.cuh
// on a GPU (no MLIR):
//
//   delta_rule_backward_bench check      packs with edge lengths, padding,
//                                        GQA, states, against the exact
//                                        float64 reverse sweep of
//                                        unittests/DeviceEmulation/
//                                        DeltaRuleProblem.h (docs/spec.md
//                                        tolerances: dq, dk, dv, dstate
//                                        8e-3; dg, dbeta 2e-2), padding rows
//                                        zero, 5 more runs byte-identical,
//                                        each sequence alone == packed
//   delta_rule_backward_bench bench [N]  the reference shapes of
//                                        docs/spec.md: backward and
//                                        forward times (CUDA events, 5
//                                        warm-ups, median of N), the ratio
//                                        to the backward floor and TFLOP/s
//                                        by 2.69x the forward's chunked count
//
// Build: nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a
//   -I kernels/include -I runtime/include -I unittests/DeviceEmulation
//   test/Integration/harness/delta_rule_backward_bench.cu
// (-DGDN_BENCH_SCAN_WGMMA=1, -DGDN_BENCH_REVERSE_WGMMA=1,
// -DGDN_BENCH_CHUNK_WGMMA=1: the kernels on wgmma, as sm_90a's generated
// code runs them; -DGDN_BENCH_FUSED_BACKWARD=1 with them: the reverse scan
// and the chunk gradients as the fused kernel at K = V = 128;
// -DGDN_BENCH_BF16_GRADIENTS=1: dq, dk, dv in bf16, as
// generated code writes them for bf16 programs; default fp32;
// -DGDN_BENCH_CLUSTER_SUMS=0: the fused kernel's GQA dq and dk as
// per-value-head partials and the sum kernel instead of its cluster sums.)
//
//===----------------------------------------------------------------------===//

#include "gdn/device/delta_rule_backward.cuh"

#include "DeltaRuleProblem.h"
#include "check_lines.h"
#include "cuda_check.h"
#include "device_buffers.cuh"
#include "device_random.cuh"
#include "host_bf16.h"
#include "lengths.h"
#include "timing.cuh"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

using namespace gdn::device;
using namespace gdn::device::testing;

namespace {

using namespace harness;

#ifndef GDN_BENCH_SCAN_WGMMA
#define GDN_BENCH_SCAN_WGMMA 0
#endif
#ifndef GDN_BENCH_REVERSE_WGMMA
#define GDN_BENCH_REVERSE_WGMMA 0
#endif
#ifndef GDN_BENCH_CHUNK_WGMMA
#define GDN_BENCH_CHUNK_WGMMA 0
#endif
#ifndef GDN_BENCH_FUSED_BACKWARD
#define GDN_BENCH_FUSED_BACKWARD 0
#endif
#ifndef GDN_BENCH_BF16_GRADIENTS
#define GDN_BENCH_BF16_GRADIENTS 0
#endif
#ifndef GDN_BENCH_CLUSTER_SUMS
#define GDN_BENCH_CLUSTER_SUMS 1
#endif
/// dq, dk and dv: fp32, or with -DGDN_BENCH_BF16_GRADIENTS=1 bf16, what
/// generated code returns for bf16 programs (the check widens them).
using BenchGradient = std::conditional_t<GDN_BENCH_BF16_GRADIENTS, __nv_bfloat16, float>;
template <int H, int HV, int D, bool Initial> struct Config {
  using Element = __nv_bfloat16;
  static constexpr int kKeyHeads = H, kValueHeads = HV, kHeadDimK = D,
                       kHeadDimV = D, kValueTile = D; // as generated code
  static constexpr bool kHasInitialState = Initial, kHasFinalState = false;
  /// -DGDN_BENCH_SCAN_WGMMA=1: the recomputation on the wgmma scan.
  static constexpr bool kScanWgmma = GDN_BENCH_SCAN_WGMMA;
  /// -DGDN_BENCH_REVERSE_WGMMA=1: the reverse scan on wgmma.
  static constexpr bool kReverseScanWgmma = GDN_BENCH_REVERSE_WGMMA;
  /// -DGDN_BENCH_CHUNK_WGMMA=1: the chunk gradients on wgmma.
  static constexpr bool kChunkGradWgmma = GDN_BENCH_CHUNK_WGMMA;
  /// -DGDN_BENCH_FUSED_BACKWARD=1: the reverse scan and the chunk gradients
  /// as one fused kernel (K = V = 128 only; others as above).
  static constexpr bool kFusedBackwardWgmma = GDN_BENCH_FUSED_BACKWARD && D == 128;
  /// -DGDN_BENCH_CLUSTER_SUMS=0: no cluster sums (FusedClusterKeyGradSums).
  static constexpr bool kFusedClusterKeyGradSums = GDN_BENCH_CLUSTER_SUMS;
  using Gradient = BenchGradient;
};

/// The forward of the same shape, with final states (timed beside the
/// backward).
template <class C> struct WithFinalState : C {
  static constexpr bool kHasFinalState = true;
};

/// A downloaded gradient as float (bf16 widened exactly, so that byte
/// comparisons of the widened values compare the bf16 bits).
template <class T> std::vector<float> widened(const std::vector<T> &x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    std::vector<float> wide(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      wide[i] = __bfloat162float(x[i]);
    return wide;
  }
}

/// Every tensor of one backward call on the device.
struct DeviceCase {
  int h = 0, hv = 0, dk = 0, dv = 0, seqs = 0;
  int64_t tokens = 0;
  bool padded = false, withFinal = false;
  bool fused = false; // BackwardWorkspaceLayout
  int keyGradBytes = 0;
  __nv_bfloat16 *q = nullptr, *k = nullptr, *v = nullptr, *dO = nullptr;
  float *g = nullptr, *beta = nullptr, *state0 = nullptr, *dFinal = nullptr;
  int32_t *cu = nullptr, *cuPadded = nullptr;
  BenchGradient *dq = nullptr, *dk_ = nullptr, *dv_ = nullptr;
  float *dg = nullptr, *dbeta = nullptr, *dstate = nullptr;
  void *workspace = nullptr;

  size_t keyCount() const { return size_t(tokens) * h * dk; }
  size_t valueCount() const { return size_t(tokens) * hv * dv; }
  size_t gateCount() const { return size_t(tokens) * hv; }
  size_t stateCount() const { return size_t(seqs) * hv * dk * dv; }
  size_t workspaceBytes() const {
    return DeltaRuleBackwardWorkspace::bytes(packing(), hv, dk, dv, fused, keyGradBytes);
  }
  template <class C> void setLayout() {
    fused = BackwardWorkspaceLayout<C>::kFused;
    keyGradBytes = BackwardWorkspaceLayout<C>::kKeyGradBytes;
  }
  PackingView packing() const {
    return {cu, padded ? cuPadded : nullptr, seqs, static_cast<int32_t>(tokens)};
  }
  void allocateOutputs() {
    dq = deviceAlloc<BenchGradient>(keyCount());
    dk_ = deviceAlloc<BenchGradient>(keyCount());
    dv_ = deviceAlloc<BenchGradient>(valueCount());
    dg = deviceAlloc<float>(gateCount());
    dbeta = deviceAlloc<float>(gateCount());
    dstate = deviceAlloc<float>(stateCount());
    CUDA_OK(cudaMalloc(&workspace, workspaceBytes()));
  }
  /// NaN bytes in every output: an element no thread writes cannot pass.
  void poisonOutputs() {
    CUDA_OK(cudaMemset(dq, 0xff, keyCount() * sizeof(BenchGradient)));
    CUDA_OK(cudaMemset(dk_, 0xff, keyCount() * sizeof(BenchGradient)));
    CUDA_OK(cudaMemset(dv_, 0xff, valueCount() * sizeof(BenchGradient)));
    CUDA_OK(cudaMemset(dg, 0xff, gateCount() * 4));
    CUDA_OK(cudaMemset(dbeta, 0xff, gateCount() * 4));
    CUDA_OK(cudaMemset(dstate, 0xff, stateCount() * 4));
  }
  Gradients<float> gradients(bool initial) const {
    Gradients<float> g_;
    g_.dq = widened(download(dq, keyCount()));
    g_.dk = widened(download(dk_, keyCount()));
    g_.dv = widened(download(dv_, valueCount()));
    g_.dg = download(dg, gateCount());
    g_.dbeta = download(dbeta, gateCount());
    g_.dstate = initial ? download(dstate, stateCount()) : std::vector<float>();
    return g_;
  }
  void release() {
    for (void *p : {(void *)q, (void *)k, (void *)v, (void *)dO, (void *)g, (void *)beta,
                    (void *)state0, (void *)dFinal, (void *)cu, (void *)cuPadded,
                    (void *)dq, (void *)dk_, (void *)dv_, (void *)dg, (void *)dbeta,
                    (void *)dstate, workspace})
      CUDA_OK(cudaFree(p));
  }
};

template <class C>
DeviceCase uploadCase(const Problem &p, const Cotangents &c, bool withFinal) {
  DeviceCase d;
  d.setLayout<C>();
  d.h = p.h;
  d.hv = p.hv;
  d.dk = p.dk;
  d.dv = p.dv;
  d.seqs = static_cast<int>(p.lengths.size());
  d.tokens = p.tokens;
  d.padded = p.cuPadded != p.cu;
  d.withFinal = withFinal;
  d.q = upload(toBf16(p.q));
  d.k = upload(toBf16(p.k));
  d.v = upload(toBf16(p.v));
  d.dO = upload(toBf16(c.dO));
  d.g = upload(p.g);
  d.beta = upload(p.beta);
  d.state0 = upload(p.state0);
  d.dFinal = upload(c.dFinal);
  d.cu = upload(p.cu);
  d.cuPadded = upload(p.cuPadded);
  d.allocateOutputs();
  return d;
}

/// Chain splitting of the backward's two scans: none, segments of given
/// lengths (checks), or the generated code's choice for the GPU (bench).
struct SplitChoice {
  int32_t forwardSegmentChunks = 0, reverseSegmentChunks = 0;
  float warmupLogBound = kDefaultWarmupLogBound;
  int smCount = 0; ///< > 0: deltaRuleBackwardSplit for this many SMs
};

template <class C>
void run(const DeviceCase &d, cudaStream_t stream, unsigned phases = kBackwardAll,
         const SplitChoice &split = {}) {
  DeltaRuleBackwardArgs<C> args = {};
  args.q = d.q;
  args.k = d.k;
  args.v = d.v;
  args.g = d.g;
  args.beta = d.beta;
  args.initialState = C::kHasInitialState ? d.state0 : nullptr;
  args.dO = d.dO;
  args.dFinalState = d.withFinal ? d.dFinal : nullptr;
  args.dq = d.dq;
  args.dk = d.dk_;
  args.dv = d.dv_;
  args.dg = d.dg;
  args.dbeta = d.dbeta;
  args.dInitialState = C::kHasInitialState ? d.dstate : nullptr;
  args.scale = 1.0f / std::sqrt(float(C::kHeadDimK));
  args.packing = d.packing();
  args.forwardSegmentChunks = split.forwardSegmentChunks;
  args.reverseSegmentChunks = split.reverseSegmentChunks;
  args.warmupLogBound = split.warmupLogBound;
  if (split.smCount > 0)
    deltaRuleBackwardSplit(args, split.smCount, split.warmupLogBound);
  CUDA_OK(launchDeltaRuleBackward<C>(args, d.workspace, stream, phases));
}

bool sameGradients(const Gradients<float> &a, const Gradients<float> &b) {
  return sameBytes(a.dq, b.dq) && sameBytes(a.dk, b.dk) && sameBytes(a.dv, b.dv) &&
         sameBytes(a.dg, b.dg) && sameBytes(a.dbeta, b.dbeta) && sameBytes(a.dstate, b.dstate);
}
std::vector<float> rowsOf(const std::vector<float> &x, const Problem &p, int seq,
                          size_t width) {
  return std::vector<float>(x.begin() + p.cuPadded[seq] * width,
                            x.begin() + (p.cuPadded[seq] + p.lengths[seq]) * width);
}

template <class C>
void checkCase(const char *name, std::vector<int> lengths, std::vector<int> padding,
               bool withFinal, unsigned seed, const SplitChoice &split = {}) {
  std::mt19937 random(seed);
  const Problem p = makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK, C::kHeadDimV,
                                lengths, padding, C::kHasInitialState, random);
  const Cotangents cot = makeCotangents(p, withFinal, random);
  const std::string what = name + describeLengths(p.lengths, p.cuPadded);

  DeviceCase d = uploadCase<C>(p, cot, withFinal);
  d.poisonOutputs();
  run<C>(d, 0, kBackwardAll, split);
  CUDA_OK(cudaDeviceSynchronize());
  const Gradients<float> got = d.gradients(C::kHasInitialState);
  const Gradients<double> want =
      referenceGradients(p, cot, 1.0 / std::sqrt(double(C::kHeadDimK)));
  struct Item {
    const char *name;
    const std::vector<float> &got;
    const std::vector<double> &want;
    double tolerance;
  };
  std::vector<Item> items = {{"dq", got.dq, want.dq, 8e-3},
                             {"dk", got.dk, want.dk, 8e-3},
                             {"dv", got.dv, want.dv, 8e-3},
                             {"dg", got.dg, want.dg, 2e-2},
                             {"dbeta", got.dbeta, want.dbeta, 2e-2}};
  if (C::kHasInitialState)
    items.push_back({"dstate", got.dstate, want.dstate, 8e-3});
  for (const Item &item : items) {
    bool finite = true;
    const double err = relativeRms(item.got, item.want, &finite);
    char buffer[160];
    std::snprintf(buffer, sizeof buffer, ": %s relative RMS %.3e (<= %.0e)%s", item.name,
                  err, item.tolerance, finite ? "" : ", NOT FINITE");
    expect(finite && err <= item.tolerance, what + buffer);
  }
  bool paddingZero = true;
  for (size_t s = 0; s < p.lengths.size(); ++s)
    for (int r = p.cuPadded[s] + p.lengths[s]; r < p.cuPadded[s + 1]; ++r) {
      for (int i = 0; i < p.h * p.dk; ++i)
        paddingZero = paddingZero && got.dq[size_t(r) * p.h * p.dk + i] == 0.0f &&
                      got.dk[size_t(r) * p.h * p.dk + i] == 0.0f;
      for (int i = 0; i < p.hv * p.dv; ++i)
        paddingZero = paddingZero && got.dv[size_t(r) * p.hv * p.dv + i] == 0.0f;
      for (int i = 0; i < p.hv; ++i)
        paddingZero = paddingZero && got.dg[size_t(r) * p.hv + i] == 0.0f &&
                      got.dbeta[size_t(r) * p.hv + i] == 0.0f;
    }
  expect(paddingZero, what + ": padding rows of every gradient are zero");

  bool same = true;
  for (int i = 0; i < 5; ++i) {
    d.poisonOutputs();
    run<C>(d, 0, kBackwardAll, split);
    CUDA_OK(cudaDeviceSynchronize());
    same = same && sameGradients(d.gradients(C::kHasInitialState), got);
  }
  expect(same, what + ": 5 more runs byte-identical");

  bool isolated = true;
  const size_t state = size_t(p.hv) * p.dk * p.dv;
  for (int s = 0; s < int(p.lengths.size()); ++s) {
    const Problem one = alone(p, s);
    Cotangents oneCot;
    oneCot.dO = rowsOf(cot.dO, p, s, size_t(p.hv) * p.dv);
    oneCot.dFinal.assign(cot.dFinal.begin() + s * state, cot.dFinal.begin() + (s + 1) * state);
    DeviceCase od = uploadCase<C>(one, oneCot, withFinal);
    run<C>(od, 0, kBackwardAll, split);
    CUDA_OK(cudaDeviceSynchronize());
    const Gradients<float> g = od.gradients(C::kHasInitialState);
    isolated = isolated && sameBytes(g.dq, rowsOf(got.dq, p, s, size_t(p.h) * p.dk)) &&
               sameBytes(g.dk, rowsOf(got.dk, p, s, size_t(p.h) * p.dk)) &&
               sameBytes(g.dv, rowsOf(got.dv, p, s, size_t(p.hv) * p.dv)) &&
               sameBytes(g.dg, rowsOf(got.dg, p, s, p.hv)) &&
               sameBytes(g.dbeta, rowsOf(got.dbeta, p, s, p.hv));
    if (C::kHasInitialState)
      isolated = isolated &&
                 sameBytes(g.dstate, std::vector<float>(got.dstate.begin() + s * state,
                                                       got.dstate.begin() + (s + 1) * state));
    od.release();
  }
  expect(isolated, what + ": each sequence alone == packed, bit for bit");
  d.release();
}

/// With warm-ups that may leave nothing out (limit -inf) every segment runs
/// from its sequence's start (end): split gradients equal the unsplit ones
/// bit for bit, so the segments cover every chunk exactly once.
template <class C> void checkSplitExact(std::vector<int> lengths, unsigned seed) {
  std::mt19937 random(seed);
  const Problem p = makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK, C::kHeadDimV,
                                lengths, {}, C::kHasInitialState, random);
  const Cotangents cot = makeCotangents(p, true, random);
  DeviceCase d = uploadCase<C>(p, cot, true);
  run<C>(d, 0);
  CUDA_OK(cudaDeviceSynchronize());
  const Gradients<float> whole = d.gradients(C::kHasInitialState);
  SplitChoice split;
  split.forwardSegmentChunks = 5;
  split.reverseSegmentChunks = 2;
  split.warmupLogBound = -INFINITY;
  d.poisonOutputs();
  run<C>(d, 0, kBackwardAll, split);
  CUDA_OK(cudaDeviceSynchronize());
  expect(sameGradients(d.gradients(C::kHasInitialState), whole),
         "split" + describeLengths(p.lengths, p.cuPadded) +
             ": exact segments (limit -inf) == unsplit, bit for bit");
  d.release();
}

int check() {
  checkCase<Config<16, 32, 128, true>>("gqa16x32", {0, 1, 63, 64, 65, 130, 300}, {}, true,
                                       1);
  checkCase<Config<16, 32, 128, false>>("gqa16x32 padded", {65, 0, 130, 1, 64},
                                        {3, 5, 62, 0, 1}, false, 2);
  checkCase<Config<2, 4, 128, true>>("gqa2x4 long", {2048, 777, 0}, {0, 9, 4}, true, 3);
  checkCase<Config<4, 4, 64, false>>("mha4 d64", {63, 64, 65, 130, 1, 0, 700}, {}, true, 4);
  // Without GQA at K = V = 128 (the fused kernel's own dq and dk, no sums).
  checkCase<Config<4, 4, 128, true>>("mha4 d128", {130, 0, 64, 65}, {0, 3, 0, 1}, true, 8);
  checkCase<Config<16, 64, 128, true>>("gqa16x64", {130, 65, 0}, {1, 0, 2}, true, 5);
  // Split chains: segments of 4 chunks in the forward recomputation and 3
  // in the reverse scan (boundaries that differ), warm-ups to 2^-24.
  SplitChoice split;
  split.forwardSegmentChunks = 4;
  split.reverseSegmentChunks = 3;
  checkCase<Config<16, 32, 128, true>>("gqa16x32 split", {3000, 0, 65, 1, 700}, {0, 2, 1, 0, 3},
                                       true, 6, split);
  checkSplitExact<Config<16, 32, 128, true>>({3000, 0, 65, 700}, 7);
  return failures;
}

//===----------------------------------------------------------------------===//
// bench
//===----------------------------------------------------------------------===//

template <class C>
void benchCase(const char *name, std::vector<int> lengths, int iterations, double floorUs) {
  DeviceCase d;
  d.h = C::kKeyHeads;
  d.hv = C::kValueHeads;
  d.dk = d.dv = C::kHeadDimK;
  d.seqs = static_cast<int>(lengths.size());
  const std::vector<int32_t> cu = offsetsOf<int32_t>(lengths);
  d.tokens = cu.back();
  d.withFinal = true;
  d.q = deviceAlloc<__nv_bfloat16>(d.keyCount());
  d.k = deviceAlloc<__nv_bfloat16>(d.keyCount());
  d.v = deviceAlloc<__nv_bfloat16>(d.valueCount());
  d.dO = deviceAlloc<__nv_bfloat16>(d.valueCount());
  d.g = deviceAlloc<float>(d.gateCount());
  d.beta = deviceAlloc<float>(d.gateCount());
  d.state0 = deviceAlloc<float>(d.stateCount());
  d.dFinal = deviceAlloc<float>(d.stateCount());
  d.cu = upload(cu);
  d.cuPadded = upload(cu);
  fillRows<<<1024, 128>>>(d.q, d.tokens * d.h, d.dk, 1, true);
  fillRows<<<1024, 128>>>(d.k, d.tokens * d.h, d.dk, 2, true);
  fillRows<<<1024, 128>>>(d.v, d.tokens * d.hv, d.dv, 3, false);
  fillRows<<<1024, 128>>>(d.dO, d.tokens * d.hv, d.dv, 4, false);
  fillGates<<<1024, 256>>>(d.g, d.beta, int64_t(d.gateCount()), 5);
  fillNormal<<<1024, 256>>>(d.state0, int64_t(d.stateCount()), 0.5f, 7);
  fillNormal<<<1024, 256>>>(d.dFinal, int64_t(d.stateCount()), 0.5f, 8);
  CUDA_OK(cudaGetLastError());
  d.setLayout<C>();
  d.allocateOutputs();
  float *o = deviceAlloc<float>(d.valueCount()); // bf16 o fits in half of it
  float *final = deviceAlloc<float>(d.stateCount());
  void *forwardWorkspace = nullptr;
  CUDA_OK(cudaMalloc(&forwardWorkspace, DeltaRuleWorkspace::bytes(d.packing(), d.hv)));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));

  int sms = 0;
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  SplitChoice split;
  split.smCount = sms; // as the generated entry point does
  DeltaRuleBackwardArgs<C> chosen = {};
  chosen.packing = d.packing();
  deltaRuleBackwardSplit(chosen, sms);
  const double whole = medianLaunchMs(stream, iterations, [&] { run<C>(d, stream); });
  const double backward =
      medianLaunchMs(stream, iterations, [&] { run<C>(d, stream, kBackwardAll, split); });
  // Each kernel alone (reading what the full runs left in the workspace).
  double phase[5];
  for (int i = 0; i < 5; ++i)
    phase[i] = medianLaunchMs(stream, iterations,
                              [&] { run<C>(d, stream, 1u << i, split); });
  using ForwardConfig = WithFinalState<C>;
  DeltaRuleArgs<ForwardConfig> forward = {};
  forward.q = d.q;
  forward.k = d.k;
  forward.v = d.v;
  forward.g = d.g;
  forward.beta = d.beta;
  forward.initialState = d.state0;
  forward.finalState = final;
  forward.o = reinterpret_cast<__nv_bfloat16 *>(o);
  forward.scale = 1.0f / std::sqrt(float(C::kHeadDimK));
  forward.packing = d.packing();
  const double forwardMs = medianLaunchMs(stream, iterations, [&] {
    CUDA_OK(launchDeltaRule<ForwardConfig>(forward, forwardWorkspace, stream));
  });
  // The backward's FLOPs: 2.69x the forward's full chunked count
  // (docs/performance.md, Targets and anchors).
  const double dd = C::kHeadDimK;
  const double forwardFlop =
      (6 * dd * dd + 10 * 64 * dd + 2.0 / 3 * 64 * 64) * double(d.tokens) * C::kValueHeads;
  const std::string lens = describeMix(lengths);
  std::printf("BENCH backward %-10s %-22s %8.4f ms  floor %.0f us = %5.1f%%  %6.1f TFLOP/s"
              "  (forward %.4f ms; backward / forward %.2f)  workspace %.0f MiB  %s dq, dk, dv\n"
              "      kernels: prepare %.4f, forward scan %.4f, reverse scan %.4f, "
              "chunk gradients %.4f, finish %.4f ms\n"
              "      segments: forward %d, reverse %d chunks (0: whole sequences); "
              "unsplit %.4f ms\n",
              name, lens.c_str(), backward, floorUs, 100.0 * floorUs / (backward * 1000.0),
              2.69 * forwardFlop / (backward * 1e-3) / 1e12, forwardMs, backward / forwardMs,
              d.workspaceBytes() / 1048576.0,
              GDN_BENCH_BF16_GRADIENTS ? "bf16" : "fp32", phase[0], phase[1], phase[2], phase[3],
              phase[4], chosen.forwardSegmentChunks,
              chosen.reverseSegmentChunks, whole);
  std::fflush(stdout);
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(o));
  CUDA_OK(cudaFree(final));
  CUDA_OK(cudaFree(forwardWorkspace));
  d.release();
}

int bench(int iterations) {
  using Gqa16x32 = Config<16, 32, 128, true>;
  // 32K tokens in 8 sequences (the backward row of docs/performance.md,
  // Targets and anchors; fixed uneven lengths so that runs compare), then
  // the forward table's mixes.
  benchCase<Gqa16x32>("gqa16x32", {1000, 7000, 3000, 5000, 2768, 6000, 4000, 4000},
                      iterations, 652);
  benchCase<Gqa16x32>("gqa16x32", {8192, 8192, 8192, 8192}, iterations, 652);
  benchCase<Gqa16x32>("gqa16x32", {32768}, iterations, 652);
  benchCase<Gqa16x32>("gqa16x32", {2048, 2048, 2048, 2048}, iterations, 163);
  benchCase<Config<32, 32, 128, true>>("mha32", {8192, 8192, 8192, 8192}, iterations, 652);
  benchCase<Config<16, 64, 128, true>>("gqa16x64", {8192, 8192, 8192, 8192}, iterations,
                                       1304);
  return failures;
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  if (mode == "check") {
    const int result = check();
    std::printf("%s: delta rule backward check, %d failure(s)\n", result ? "FAIL" : "PASS",
                result);
    return result ? 1 : 0;
  }
  if (mode == "bench") {
    const int iterations = std::max(10, argc > 2 ? std::atoi(argv[2]) : 30);
    return bench(iterations);
  }
  std::fprintf(stderr, "usage: %s check | bench [iterations]\n", argv[0]);
  return 2;
}
