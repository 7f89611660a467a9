//===- backward_check.cu - the prologue and epilogue backward on a GPU ----===//
//
// Checks and times the backward kernels of kernels/include/gdn/device/
// prologue_backward.cuh and epilogue_backward.cuh on the GPU:
//
//   backward_check check DIR   every case listed in DIR/cases (prepared
//                              by utils/prepare-backward-gpu-tests.sh:
//                              gdn-run's inputs, cotangents and float64
//                              gradients): each gradient within the
//                              relative-RMS tolerances of docs/spec.md, no
//                              NaN or Inf, 5 runs byte-identical, padding
//                              rows zero, packed == each sequence alone bit
//                              for bit, invalid metadata all NaN
//   backward_check bench [REPS [FILTER]]
//                              the reference shape (T = 32768, 8192
//                              channels, gqa16x32; the epilogue over 32
//                              heads of 128) on random data: determinism at
//                              full size, then the median time of every
//                              tile variant and its bandwidth against a
//                              device copy of the same bytes
//
// A case's directory holds `config` (a name of the table below), in/argN.npy
// and in/cotangentN.npy (the program's argument and result order), and
// expected/gradN.npy. The prologue programs' arguments are mixed, conv
// weight, [bias], [initial state], a, b, A_log, dt_bias, cu_seqlens,
// [cu_padded]; their results q, k, v, g, beta, [final state].
//
// Prints PASS/FAIL lines (check) and BENCH lines (bench); exits 1 when a
// check fails, 2 when a CUDA call does.
//
//===----------------------------------------------------------------------===//

#include "gdn/device/epilogue_backward.cuh"
#include "gdn/device/packing.cuh"
#include "gdn/device/prologue_backward.cuh"

#include "compare.h"
#include "cuda_check.h"
#include "lengths.h"
#include "npy.h"
#include "timing.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace gdn::device;
using bf16 = __nv_bfloat16;

#define GDN_COMMA ,

namespace {

using namespace harness;

//===--- Configurations ---------------------------------------------------===//

/// A prologue backward configuration: bf16 activations, conv weights and
/// states (as the GPU programs of test/Integration/Inputs), fp32 gate
/// parameters and g/beta cotangents; every gradient in its tensor's type
/// (bf16 conv weight and bias gradients), unless WeightGrad says fp32.
template <int KeyHeads, int ValueHeads, int DimK, int DimV, int Width,
          bool Bias, bool Initial, bool Final, bool NegEigval,
          int VectorBytes = 8, int Threads = 256, int MinBlocks = 2,
          int RowBlocks = 33, int RowsInFlight = 4, typename WeightGrad = bf16>
struct PrologueConfig {
  using Activation = bf16;
  using ConvWeight = bf16;
  using ConvState = bf16;
  using GateInput = bf16;
  using GateParam = float;
  using ActivationGrad = bf16;
  using ConvStateGrad = bf16;
  using GateInputGrad = bf16;
  using ConvWeightGrad = WeightGrad;
  using GateParamGrad = float;
  static constexpr int kKeyHeads = KeyHeads, kValueHeads = ValueHeads,
                       kHeadDimK = DimK, kHeadDimV = DimV, kConvWidth = Width;
  static constexpr int kVectorBytes = VectorBytes, kThreads = Threads,
                       kMinBlocksPerSM = MinBlocks,
                       kRowsInFlight = RowsInFlight, kRowBlocks = RowBlocks,
                       kGateBlocks = 132;
  static constexpr bool kSilu = true, kHasBias = Bias,
                        kHasInitialState = Initial, kHasFinalState = Final,
                        kNegEigval = NegEigval;
  static constexpr float kNormEps = 1e-6f;
};

// The small GQA config of the GPU programs: 2 key heads of 64, 4 value
// heads of 32, 384 channels.
using SmallW4All = PrologueConfig<2, 4, 64, 32, 4, true, true, true, true>;
// fp32 weight gradients (what a trainer keeping fp32 main gradients takes).
using SmallW4Final = PrologueConfig<2, 4, 64, 32, 4, false, false, true, false,
                                    8, 256, 2, 33, 4, float>;
using SmallW3All = PrologueConfig<2, 4, 64, 32, 3, true, true, true, true>;
using SmallW3Plain =
    PrologueConfig<2, 4, 64, 32, 3, false, false, false, false>;
using SmallW2Final = PrologueConfig<2, 4, 64, 32, 2, false, false, true, false>;
using SmallW2Initial =
    PrologueConfig<2, 4, 64, 32, 2, false, true, false, false>;
// gqa16x32 (8192 channels, width 4, nothing optional): the tile variants
// the bench compares (vector bytes, threads, blocks per SM for the register
// budget, row blocks: one wave of the H200's 132 SMs at that occupancy,
// rows in flight). Measured on the H200 (docs/backward.md): 8-byte vectors
// in 512-thread blocks (V8T512) fastest, 0.60 ms at T = 32768.
template <int VectorBytes, int Threads, int MinBlocks, int RowBlocks,
          int RowsInFlight>
using Gqa16x32Tile =
    PrologueConfig<16, 32, 128, 128, 4, false, false, false, false, VectorBytes,
                   Threads, MinBlocks, RowBlocks, RowsInFlight>;
using Gqa16x32 = Gqa16x32Tile<8, 256, 2, 33, 4>;
using Gqa16x32V8R8 = Gqa16x32Tile<8, 256, 2, 33, 8>;
using Gqa16x32V16 = Gqa16x32Tile<16, 256, 1, 33, 4>;
using Gqa16x32V16R8 = Gqa16x32Tile<16, 256, 1, 33, 8>;
using Gqa16x32V8T128 = Gqa16x32Tile<8, 128, 3, 24, 4>;
using Gqa16x32V8T512 = Gqa16x32Tile<8, 512, 1, 33, 6>;

template <int Threads = 256, int Blocks = 528> struct EpilogueTile {
  using Input = bf16;
  using Gate = bf16;
  using Weight = bf16;
  using Output = bf16;
  using OutputGrad = bf16;
  using InputGrad = bf16;
  using GateGrad = bf16;
  using WeightGrad = bf16;
  static constexpr int kHeadDimV = 128, kThreads = Threads, kBlocks = Blocks;
  static constexpr float kEps = 1e-6f;
};
using EpilogueConfig = EpilogueTile<>;

//===--- Device buffers ---------------------------------------------------===//

/// Element<T> of common.cuh on the host (its conversions are device-only).
template <typename T> struct HostElement {
  static float load(T x) { return static_cast<float>(x); }
  static T store(float x) { return static_cast<T>(x); }
};
template <> struct HostElement<bf16> {
  static float load(bf16 x) { return __bfloat162float(x); }
  static bf16 store(float x) { return __float2bfloat16_rn(x); }
};

template <typename T> struct DeviceArray {
  T *data = nullptr;
  size_t size = 0;
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : size(n) {
    CUDA_OK(cudaMalloc(&data, std::max<size_t>(n, 1) * sizeof(T)));
  }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  DeviceArray(DeviceArray &&other) noexcept { *this = std::move(other); }
  DeviceArray &operator=(DeviceArray &&other) noexcept {
    std::swap(data, other.data);
    std::swap(size, other.size);
    return *this;
  }
  ~DeviceArray() {
    if (data)
      cudaFree(data);
  }
  void upload(const std::vector<double> &values) {
    std::vector<T> host(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      host[i] = HostElement<T>::store(static_cast<float>(values[i]));
    if (!host.empty())
      CUDA_OK(cudaMemcpy(data, host.data(), host.size() * sizeof(T),
                         cudaMemcpyHostToDevice));
  }
  /// Fills with 0xff bytes: NaN in every float format, so an element the
  /// kernels do not write shows.
  void poison() {
    CUDA_OK(cudaMemset(data, 0xff, std::max<size_t>(size, 1) * sizeof(T)));
  }
  std::vector<T> raw() const {
    std::vector<T> host(size);
    if (size)
      CUDA_OK(cudaMemcpy(host.data(), data, size * sizeof(T),
                         cudaMemcpyDeviceToHost));
    return host;
  }
  std::vector<double> values() const {
    std::vector<T> host = raw();
    std::vector<double> out(size);
    for (size_t i = 0; i < size; ++i)
      out[i] = HostElement<T>::load(host[i]);
    return out;
  }
};

DeviceArray<int32_t> uploadOffsets(const std::vector<int32_t> &values) {
  DeviceArray<int32_t> out(values.size());
  if (!values.empty())
    CUDA_OK(cudaMemcpy(out.data, values.data(), values.size() * sizeof(int32_t),
                       cudaMemcpyHostToDevice));
  return out;
}

//===--- Comparison -------------------------------------------------------===//

struct Verdict {
  bool ok = true;
  std::vector<std::string> lines;
  void fail(const std::string &line) {
    ok = false;
    lines.push_back("  " + line);
  }
};

/// Relative RMS error of `got` against `want` (0 when both vanish), with a
/// line per gradient; NaN or Inf anywhere fails.
void compareGradient(Verdict &verdict, const char *name,
                     const std::vector<double> &got,
                     const std::vector<double> &want, double tolerance,
                     std::map<std::string, double> *errors = nullptr) {
  if (got.size() != want.size()) {
    verdict.fail(std::string(name) + ": " + std::to_string(got.size()) +
                 " elements, expected " + std::to_string(want.size()));
    return;
  }
  const RmsError error = rmsError(got, want);
  const double rel = error.relative;
  char line[256];
  std::snprintf(
      line, sizeof(line),
      "%-9s %8zu elements  rel_rms = %.3e  max_abs = %.3e  (tolerance %.0e)%s",
      name, got.size(), rel, error.maxAbs, tolerance,
      error.finite ? "" : "  NaN/Inf!");
  if (errors)
    (*errors)[name] = rel;
  if (!error.finite || !(rel <= tolerance))
    verdict.fail(line);
  else
    verdict.lines.push_back(std::string("  ") + line);
}

bool loadNpy(const std::string &path, npy::Array &array, Verdict &verdict) {
  std::string error;
  if (npy::read(path, array, error))
    return true;
  verdict.fail(error);
  return false;
}

bool exists(const std::string &path) { return std::ifstream(path).good(); }

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

//===--- The prologue backward --------------------------------------------===//

/// Host copies of one prologue problem (inputs and cotangents).
struct PrologueHost {
  std::vector<int32_t> cu, cuPadded; ///< cuPadded empty: not padded
  int64_t tokens = 0;
  std::vector<double> mixed, weight, bias, initial, a, b, aLog, dtBias;
  std::vector<double> dq, dk, dv, dg, dbeta, dfinal;
  int32_t seqs() const { return static_cast<int32_t>(cu.size()) - 1; }
  int32_t begin(int32_t s) const {
    return cuPadded.empty() ? cu[s] : cuPadded[s];
  }
  int32_t length(int32_t s) const { return cu[s + 1] - cu[s]; }
};

/// What a backward run returns, as raw bytes per gradient (for bitwise
/// comparisons) and as values.
struct Gradients {
  std::map<std::string, std::vector<unsigned char>> bytes;
  std::map<std::string, std::vector<double>> values;
};

template <typename T>
void record(Gradients &out, const char *name, const DeviceArray<T> &array) {
  std::vector<T> raw = array.raw();
  std::vector<unsigned char> bytes(raw.size() * sizeof(T));
  if (!raw.empty())
    std::memcpy(bytes.data(), raw.data(), bytes.size());
  out.bytes[name] = std::move(bytes);
  out.values[name] = array.values();
}

/// Uploads a problem, runs the backward `runs` times (outputs poisoned
/// before each run) and returns each run's gradients. `status` (when not
/// null) receives the packing check's return value and message.
template <class C>
std::vector<Gradients> runPrologue(const PrologueHost &h, int runs,
                                   std::string *status = nullptr) {
  using S = PrologueBackwardShape<C>;
  constexpr int kC = S::kChannels, kHV = C::kValueHeads, kW = C::kConvWidth;
  constexpr int kKeyDim = S::kKeyDim, kValueDim = kC - 2 * kKeyDim;
  const int64_t T = h.tokens;
  const int32_t n = h.seqs();
  const size_t stateSize = size_t(std::max(n, 0)) * kC * (kW - 1);
  DeviceArray<bf16> mixed(T * kC), weight(kC * kW), bias(kC),
      initial(stateSize), a(T * kHV), b(T * kHV), dq(T * kKeyDim),
      dk(T * kKeyDim), dv(T * kValueDim), dfinal(stateSize);
  DeviceArray<float> aLog(kHV), dtBias(kHV), dg(T * kHV), dbeta(T * kHV);
  mixed.upload(h.mixed);
  weight.upload(h.weight);
  if (C::kHasBias)
    bias.upload(h.bias);
  if (C::kHasInitialState)
    initial.upload(h.initial);
  a.upload(h.a);
  b.upload(h.b);
  aLog.upload(h.aLog);
  dtBias.upload(h.dtBias);
  dq.upload(h.dq);
  dk.upload(h.dk);
  dv.upload(h.dv);
  dg.upload(h.dg);
  dbeta.upload(h.dbeta);
  if (C::kHasFinalState)
    dfinal.upload(h.dfinal);
  DeviceArray<int32_t> cu = uploadOffsets(h.cu),
                       cuPadded = uploadOffsets(h.cuPadded);

  DeviceArray<bf16> dmixed(T * kC), dinitial(stateSize), da(T * kHV),
      db(T * kHV);
  DeviceArray<typename C::ConvWeightGrad> dweight(kC * kW), dbias(kC);
  DeviceArray<typename C::GateParamGrad> daLog(kHV), ddtBias(kHV);
  PackingView packing = {cu.data, h.cuPadded.empty() ? nullptr : cuPadded.data,
                         n, static_cast<int32_t>(T)};
  DeviceArray<unsigned char> metadata(PackingWorkspace::bytes());
  DeviceArray<unsigned char> workspace(prologueBackwardWorkspaceBytes<C>(T));
  PrologueBackwardArgs<C> args = {};
  args.mixed = mixed.data;
  args.weight = weight.data;
  args.bias = C::kHasBias ? bias.data : nullptr;
  args.initialState = C::kHasInitialState ? initial.data : nullptr;
  args.a = a.data;
  args.b = b.data;
  args.aLog = aLog.data;
  args.dtBias = dtBias.data;
  args.dq = dq.data;
  args.dk = dk.data;
  args.dv = dv.data;
  args.dg = dg.data;
  args.dbeta = dbeta.data;
  args.dfinalState = C::kHasFinalState ? dfinal.data : nullptr;
  args.dmixed = dmixed.data;
  args.dweight = dweight.data;
  args.dbias = C::kHasBias ? dbias.data : nullptr;
  args.dinitialState = C::kHasInitialState ? dinitial.data : nullptr;
  args.da = da.data;
  args.db = db.data;
  args.daLog = daLog.data;
  args.ddtBias = ddtBias.data;
  args.packing = packing;
  args.metadata = PackingWorkspace::carve(metadata.data);

  std::vector<Gradients> results;
  for (int run = 0; run < runs; ++run) {
    dmixed.poison();
    dinitial.poison();
    da.poison();
    db.poison();
    dweight.poison();
    dbias.poison();
    daLog.poison();
    ddtBias.poison();
    workspace.poison();
    CUDA_OK(launchPrologueBackward<C>(args, workspace.data, 0));
    CUDA_OK(cudaDeviceSynchronize());
    Gradients g;
    record(g, "dmixed", dmixed);
    record(g, "dweight", dweight);
    if (C::kHasBias)
      record(g, "dbias", dbias);
    if (C::kHasInitialState)
      record(g, "dinitial", dinitial);
    record(g, "da", da);
    record(g, "db", db);
    record(g, "dA_log", daLog);
    record(g, "ddt_bias", ddtBias);
    results.push_back(std::move(g));
  }
  if (status) {
    char message[256];
    const int code = describePackingStatus(args.metadata.status, 0, message,
                                           sizeof(message));
    *status = std::to_string(code) + ": " + message;
  }
  return results;
}

/// Rows [first, first + count) of a [rows, width] tensor.
std::vector<double> rows(const std::vector<double> &x, int64_t width,
                         int64_t first, int64_t count) {
  return std::vector<double>(x.begin() + first * width,
                             x.begin() + (first + count) * width);
}

template <class C>
bool checkPrologue(const std::string &dir, const std::string &name,
                   std::map<std::string, double> *errorsOut = nullptr) {
  using S = PrologueBackwardShape<C>;
  constexpr int kC = S::kChannels, kHV = C::kValueHeads, kW = C::kConvWidth;
  constexpr int kKeyDim = S::kKeyDim, kValueDim = kC - 2 * kKeyDim;
  Verdict verdict;
  // Arguments in the programs' order; the gradient of argument i is gradi.
  int arg = 0;
  const int mixedArg = arg++, weightArg = arg++;
  const int biasArg = C::kHasBias ? arg++ : -1;
  const int initialArg = C::kHasInitialState ? arg++ : -1;
  const int aArg = arg++, bArg = arg++, aLogArg = arg++, dtBiasArg = arg++;
  const int cuArg = arg++, cuPaddedArg = arg;
  auto in = [&](const std::string &file, npy::Array &array) {
    return loadNpy(dir + "/in/" + file + ".npy", array, verdict);
  };
  auto argument = [&](int index, npy::Array &array) {
    return in("arg" + std::to_string(index), array);
  };
  npy::Array mixed, weight, bias, initial, a, b, aLog, dtBias, cu, cuPadded;
  npy::Array dq, dk, dv, dg, dbeta, dfinal;
  bool ok = argument(mixedArg, mixed) && argument(weightArg, weight) &&
            (biasArg < 0 || argument(biasArg, bias)) &&
            (initialArg < 0 || argument(initialArg, initial)) &&
            argument(aArg, a) && argument(bArg, b) && argument(aLogArg, aLog) &&
            argument(dtBiasArg, dtBias) && argument(cuArg, cu) &&
            in("cotangent0", dq) && in("cotangent1", dk) &&
            in("cotangent2", dv) && in("cotangent3", dg) &&
            in("cotangent4", dbeta) &&
            (!C::kHasFinalState || in("cotangent5", dfinal));
  const bool padded =
      exists(dir + "/in/arg" + std::to_string(cuPaddedArg) + ".npy");
  if (ok && padded)
    ok = argument(cuPaddedArg, cuPadded);
  if (!ok || mixed.shape.size() != 2 || mixed.shape[1] != kC) {
    if (ok)
      verdict.fail("the conv input is not [T, " + std::to_string(kC) + "]");
    std::printf("FAIL check %s\n", name.c_str());
    for (const std::string &line : verdict.lines)
      std::printf("%s\n", line.c_str());
    return false;
  }
  PrologueHost h;
  h.tokens = mixed.shape[0];
  for (double v : cu.values)
    h.cu.push_back(static_cast<int32_t>(v));
  for (double v : cuPadded.values)
    h.cuPadded.push_back(static_cast<int32_t>(v));
  h.mixed = mixed.values;
  h.weight = weight.values;
  h.bias = bias.values;
  h.initial = initial.values;
  h.a = a.values;
  h.b = b.values;
  h.aLog = aLog.values;
  h.dtBias = dtBias.values;
  h.dq = dq.values;
  h.dk = dk.values;
  h.dv = dv.values;
  h.dg = dg.values;
  h.dbeta = dbeta.values;
  h.dfinal = dfinal.values;

  // Gradients against gdn-run: docs/spec.md's bf16 column (conv grads
  // 8e-3; A_log, dt_bias 2e-2; da, db held to 8e-3).
  std::vector<Gradients> runs = runPrologue<C>(h, 5);
  const Gradients &first = runs[0];
  auto expect = [&](const char *gradName, int argIndex, double tolerance) {
    npy::Array want;
    if (loadNpy(dir + "/expected/grad" + std::to_string(argIndex) + ".npy",
                want, verdict))
      compareGradient(verdict, gradName, first.values.at(gradName), want.values,
                      tolerance, errorsOut);
  };
  expect("dmixed", mixedArg, 8e-3);
  expect("dweight", weightArg, 8e-3);
  if (C::kHasBias)
    expect("dbias", biasArg, 8e-3);
  if (C::kHasInitialState)
    expect("dinitial", initialArg, 8e-3);
  expect("da", aArg, 8e-3);
  expect("db", bArg, 8e-3);
  expect("dA_log", aLogArg, 2e-2);
  expect("ddt_bias", dtBiasArg, 2e-2);

  // Run to run: every gradient byte-identical over 5 runs.
  int differing = 0;
  for (size_t r = 1; r < runs.size(); ++r)
    for (const auto &[gradName, bytes] : first.bytes)
      if (runs[r].bytes.at(gradName) != bytes) {
        ++differing;
        verdict.fail("run " + std::to_string(r + 1) +
                     " differs from run 1 in " + gradName);
      }
  if (!differing)
    verdict.lines.push_back("  5 runs byte-identical (" +
                            std::to_string(first.bytes.size()) + " gradients)");

  // Padding rows: zero conv-input gradient.
  const std::vector<double> &dmixed = first.values.at("dmixed");
  int64_t paddingRows = 0;
  for (int32_t s = 0; s < h.seqs(); ++s) {
    const int32_t slotEnd = padded ? h.cuPadded[s + 1] : h.cu[s + 1];
    for (int64_t t = h.begin(s) + h.length(s); t < slotEnd; ++t, ++paddingRows)
      for (int c = 0; c < kC; ++c)
        if (dmixed[t * kC + c] != 0.0) {
          verdict.fail("padding row " + std::to_string(t) +
                       " has a nonzero conv-input gradient");
          t = slotEnd;
          break;
        }
  }

  // Packed == each sequence alone, bit for bit (rows of the conv input and
  // gates, the sequence's initial state).
  int mismatches = 0;
  for (int32_t s = 0; s < h.seqs(); ++s) {
    const int32_t begin = h.begin(s), length = h.length(s);
    PrologueHost alone;
    alone.tokens = length;
    alone.cu = {0, length};
    alone.mixed = rows(h.mixed, kC, begin, length);
    alone.weight = h.weight;
    alone.bias = h.bias;
    const int64_t stateWidth = int64_t(kC) * (kW - 1);
    if (C::kHasInitialState)
      alone.initial = rows(h.initial, stateWidth, s, 1);
    if (C::kHasFinalState)
      alone.dfinal = rows(h.dfinal, stateWidth, s, 1);
    alone.a = rows(h.a, kHV, begin, length);
    alone.b = rows(h.b, kHV, begin, length);
    alone.aLog = h.aLog;
    alone.dtBias = h.dtBias;
    alone.dq = rows(h.dq, kKeyDim, begin, length);
    alone.dk = rows(h.dk, kKeyDim, begin, length);
    alone.dv = rows(h.dv, kValueDim, begin, length);
    alone.dg = rows(h.dg, kHV, begin, length);
    alone.dbeta = rows(h.dbeta, kHV, begin, length);
    const Gradients single = runPrologue<C>(alone, 1)[0];
    auto same = [&](const char *gradName, int64_t width, int64_t first,
                    int64_t count, size_t elementBytes) {
      const std::vector<unsigned char> &packedBytes =
          runs[0].bytes.at(gradName);
      const std::vector<unsigned char> &aloneBytes = single.bytes.at(gradName);
      const size_t bytes = size_t(width * count) * elementBytes;
      if (bytes &&
          std::memcmp(packedBytes.data() + first * width * elementBytes,
                      aloneBytes.data(), bytes) != 0) {
        ++mismatches;
        verdict.fail(std::string(gradName) + " of sequence " +
                     std::to_string(s) + " differs from the sequence alone");
      }
    };
    same("dmixed", kC, begin, length, sizeof(bf16));
    same("da", kHV, begin, length, sizeof(bf16));
    same("db", kHV, begin, length, sizeof(bf16));
    if (C::kHasInitialState)
      same("dinitial", int64_t(kC) * (kW - 1), s, 1, sizeof(bf16));
  }
  if (!mismatches)
    verdict.lines.push_back("  packed == each of " + std::to_string(h.seqs()) +
                            " sequences alone, bit for bit; " +
                            std::to_string(paddingRows) + " padding rows zero");

  // Invalid metadata: every gradient NaN, and the status names it.
  if (h.seqs() >= 1) {
    PrologueHost corrupt = h;
    corrupt.cu[0] = 1; // cu_seqlens[0] must be 0
    std::string status;
    const Gradients bad = runPrologue<C>(corrupt, 1, &status)[0];
    size_t finite = 0;
    for (const auto &[gradName, values] : bad.values)
      for (double v : values)
        finite += !std::isnan(v);
    if (finite)
      verdict.fail("invalid metadata left " + std::to_string(finite) +
                   " gradient elements that are not NaN");
    else
      verdict.lines.push_back("  invalid metadata: every gradient NaN (" +
                              status + ")");
  }

  std::printf("%s check %s (T = %lld, %d sequences%s)\n",
              verdict.ok ? "PASS" : "FAIL", name.c_str(),
              static_cast<long long>(h.tokens), h.seqs(),
              padded ? ", padded" : "");
  for (const std::string &line : verdict.lines)
    std::printf("%s\n", line.c_str());
  return verdict.ok;
}

//===--- The epilogue backward --------------------------------------------===//

template <class C>
std::vector<Gradients> runEpilogue(const std::vector<double> &x,
                                   const std::vector<double> &z,
                                   const std::vector<double> &w,
                                   const std::vector<double> &dy, int runs) {
  const int64_t rowsCount = static_cast<int64_t>(x.size()) / C::kHeadDimV;
  DeviceArray<bf16> dx(x.size()), dz(x.size()), xd(x.size()), zd(x.size()),
      wd(C::kHeadDimV), dyd(x.size());
  DeviceArray<typename C::WeightGrad> dw(C::kHeadDimV);
  xd.upload(x);
  zd.upload(z);
  wd.upload(w);
  dyd.upload(dy);
  DeviceArray<unsigned char> workspace(
      epilogueBackwardWorkspaceBytes<C>(rowsCount));
  EpilogueBackwardArgs<C> args = {};
  args.x = xd.data;
  args.z = zd.data;
  args.weight = wd.data;
  args.dy = dyd.data;
  args.dx = dx.data;
  args.dz = dz.data;
  args.dweight = dw.data;
  args.rows = rowsCount;
  std::vector<Gradients> results;
  for (int run = 0; run < runs; ++run) {
    dx.poison();
    dz.poison();
    dw.poison();
    workspace.poison();
    CUDA_OK(launchEpilogueBackward<C>(args, workspace.data, 0));
    CUDA_OK(cudaDeviceSynchronize());
    Gradients g;
    record(g, "dx", dx);
    record(g, "dz", dz);
    record(g, "dweight", dw);
    results.push_back(std::move(g));
  }
  return results;
}

template <class C>
bool checkEpilogue(const std::string &dir, const std::string &name) {
  Verdict verdict;
  npy::Array x, z, w, dy;
  auto in = [&](const std::string &file, npy::Array &array) {
    return loadNpy(dir + "/in/" + file + ".npy", array, verdict);
  };
  if (!(in("arg0", x) && in("arg1", z) && in("arg2", w) &&
        in("cotangent0", dy))) {
    std::printf("FAIL check %s\n", name.c_str());
    for (const std::string &line : verdict.lines)
      std::printf("%s\n", line.c_str());
    return false;
  }
  std::vector<Gradients> runs =
      runEpilogue<C>(x.values, z.values, w.values, dy.values, 5);
  const char *names[] = {"dx", "dz", "dweight"};
  for (int i = 0; i < 3; ++i) {
    npy::Array want;
    if (loadNpy(dir + "/expected/grad" + std::to_string(i) + ".npy", want,
                verdict))
      compareGradient(verdict, names[i], runs[0].values.at(names[i]),
                      want.values, 8e-3);
  }
  int differing = 0;
  for (size_t r = 1; r < runs.size(); ++r)
    for (const auto &[gradName, bytes] : runs[0].bytes)
      if (runs[r].bytes.at(gradName) != bytes) {
        ++differing;
        verdict.fail("run " + std::to_string(r + 1) +
                     " differs from run 1 in " + gradName);
      }
  if (!differing)
    verdict.lines.push_back("  5 runs byte-identical (3 gradients)");
  std::printf(
      "%s check %s (%lld rows of %d)\n", verdict.ok ? "PASS" : "FAIL",
      name.c_str(),
      static_cast<long long>(x.shape.empty() ? 0 : product(x.shape) / 128),
      C::kHeadDimV);
  for (const std::string &line : verdict.lines)
    std::printf("%s\n", line.c_str());
  return verdict.ok;
}

//===--- Check mode -------------------------------------------------------===//

using CheckFunction =
    std::function<bool(const std::string &, const std::string &)>;

/// The check of one configuration, as the table takes it.
template <class C>
bool prologueCheck(const std::string &dir, const std::string &name) {
  return checkPrologue<C>(dir, name);
}
template <class C>
bool epilogueCheck(const std::string &dir, const std::string &name) {
  return checkEpilogue<C>(dir, name);
}

const std::map<std::string,
               std::vector<std::pair<std::string, CheckFunction>>> &
checkTable() {
  static const std::map<std::string,
                        std::vector<std::pair<std::string, CheckFunction>>>
      table = {
          {"gqa16x32",
           {{"", prologueCheck<Gqa16x32>},
            {"v8r8", prologueCheck<Gqa16x32V8R8>},
            {"v16", prologueCheck<Gqa16x32V16>},
            {"v16r8", prologueCheck<Gqa16x32V16R8>},
            {"v8t128", prologueCheck<Gqa16x32V8T128>},
            {"v8t512", prologueCheck<Gqa16x32V8T512>}}},
          {"small_w4_all", {{"", prologueCheck<SmallW4All>}}},
          {"small_w4_final", {{"", prologueCheck<SmallW4Final>}}},
          {"small_w3_all", {{"", prologueCheck<SmallW3All>}}},
          {"small_w3_plain", {{"", prologueCheck<SmallW3Plain>}}},
          {"small_w2_final", {{"", prologueCheck<SmallW2Final>}}},
          {"small_w2_initial", {{"", prologueCheck<SmallW2Initial>}}},
          {"epilogue",
           {{"", epilogueCheck<EpilogueConfig>},
            {"b1056", epilogueCheck<EpilogueTile<256, 1056>>},
            {"t512", epilogueCheck<EpilogueTile<512, 2112>>}}},
      };
  return table;
}

int runChecks(const std::string &root) {
  std::ifstream list(root + "/cases");
  if (!list) {
    std::printf("FAIL no case list %s/cases\n", root.c_str());
    return 1;
  }
  int failures = 0, cases = 0;
  for (std::string name; std::getline(list, name);) {
    if (name.empty())
      continue;
    const std::string dir = root + "/" + name;
    std::ifstream configFile(dir + "/config");
    std::string config;
    configFile >> config;
    auto found = checkTable().find(config);
    if (found == checkTable().end()) {
      std::printf("FAIL check %s: unknown config '%s'\n", name.c_str(),
                  config.c_str());
      ++failures;
      continue;
    }
    for (const auto &[variant, check] : found->second) {
      ++cases;
      const std::string label = variant.empty() ? name : name + "/" + variant;
      failures += !check(dir, label);
    }
  }
  std::printf("%d of %d checks passed\n", cases - failures, cases);
  return failures ? 1 : 0;
}

//===--- Bench mode -------------------------------------------------------===//

/// Deterministic pseudo-random fill on the device (never zeros): uniform in
/// [-scale, scale) from a hash of the index.
template <typename T>
__global__ void fillKernel(T *data, int64_t count, uint32_t seed, float scale,
                           float offset) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 0x9E3779B1u ^ seed ^
                 static_cast<uint32_t>(i >> 32) * 0x85EBCA77u;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    x *= 0x297A2D39u;
    x ^= x >> 15;
    const float u = (x >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    data[i] = Element<T>::store(offset + scale * u);
  }
}

template <typename T>
void fill(DeviceArray<T> &array, uint32_t seed, float scale = 1.0f,
          float offset = 0.0f) {
  fillKernel<<<1024, 256>>>(array.data, int64_t(array.size), seed, scale,
                            offset);
  CUDA_OK(cudaGetLastError());
}

/// Median of `reps` calls of `body` timed one at a time (after 3 untimed
/// warm-up calls), in ms.
double medianMs(int reps, const std::function<void()> &body) {
  EventTimer timer;
  for (int i = 0; i < 3; ++i)
    body();
  std::vector<float> times;
  for (int i = 0; i < reps; ++i)
    times.push_back(timer.ms(body));
  return median(times);
}

/// Time of a device-to-device copy moving `bytes` (read plus written).
double copyMs(size_t bytes, int reps) {
  const size_t elements = bytes / 2 / sizeof(bf16);
  DeviceArray<bf16> from(elements), to(elements);
  fill(from, 7);
  return medianMs(reps, [&] {
    CUDA_OK(cudaMemcpyAsync(to.data, from.data, elements * sizeof(bf16),
                            cudaMemcpyDeviceToDevice));
  });
}

template <class C>
void benchPrologue(const char *variant, const char *mix,
                   const std::vector<int32_t> &lengths, int reps,
                   bool &deterministic) {
  using S = PrologueBackwardShape<C>;
  constexpr int kC = S::kChannels, kHV = C::kValueHeads, kW = C::kConvWidth;
  const std::vector<int32_t> cuHost = offsetsOf<int32_t>(lengths);
  const int64_t T = cuHost.back();
  const int32_t n = static_cast<int32_t>(lengths.size());
  DeviceArray<bf16> mixed(T * kC), weight(kC * kW), a(T * kHV), b(T * kHV),
      dq(T * S::kKeyDim), dk(T * S::kKeyDim), dv(T * (kC - 2 * S::kKeyDim)),
      dmixed(T * kC), da(T * kHV), db(T * kHV);
  DeviceArray<float> aLog(kHV), dtBias(kHV), dg(T * kHV), dbeta(T * kHV);
  DeviceArray<typename C::ConvWeightGrad> dweight(kC * kW);
  DeviceArray<typename C::GateParamGrad> daLog(kHV), ddtBias(kHV);
  fill(mixed, 1, 2.0f);
  fill(weight, 2, 0.5f);
  fill(a, 3, 2.0f);
  fill(b, 4, 2.0f);
  fill(aLog, 5, 1.0f);
  fill(dtBias, 6, 1.0f);
  fill(dq, 7);
  fill(dk, 8);
  fill(dv, 9);
  fill(dg, 10);
  fill(dbeta, 11);
  DeviceArray<int32_t> cu = uploadOffsets(cuHost);
  DeviceArray<unsigned char> metadata(PackingWorkspace::bytes());
  DeviceArray<unsigned char> workspace(prologueBackwardWorkspaceBytes<C>(T));
  PrologueBackwardArgs<C> args = {};
  args.mixed = mixed.data;
  args.weight = weight.data;
  args.a = a.data;
  args.b = b.data;
  args.aLog = aLog.data;
  args.dtBias = dtBias.data;
  args.dq = dq.data;
  args.dk = dk.data;
  args.dv = dv.data;
  args.dg = dg.data;
  args.dbeta = dbeta.data;
  args.dmixed = dmixed.data;
  args.dweight = dweight.data;
  args.da = da.data;
  args.db = db.data;
  args.daLog = daLog.data;
  args.ddtBias = ddtBias.data;
  args.packing = {cu.data, nullptr, n, static_cast<int32_t>(T)};
  args.metadata = PackingWorkspace::carve(metadata.data);

  // Determinism at full size: 5 runs, every gradient byte-identical.
  std::vector<bf16> first, firstDa;
  std::vector<typename C::ConvWeightGrad> firstW;
  std::vector<typename C::GateParamGrad> firstGates;
  for (int run = 0; run < 5; ++run) {
    dmixed.poison();
    dweight.poison();
    da.poison();
    daLog.poison();
    CUDA_OK(launchPrologueBackward<C>(args, workspace.data, 0));
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<bf16> x = dmixed.raw(), d = da.raw();
    std::vector<typename C::ConvWeightGrad> w = dweight.raw();
    std::vector<typename C::GateParamGrad> g = daLog.raw();
    if (run == 0) {
      first = std::move(x);
      firstDa = std::move(d);
      firstW = std::move(w);
      firstGates = std::move(g);
      size_t nonFinite = 0;
      for (const auto &v : firstW)
        nonFinite +=
            !std::isfinite(HostElement<typename C::ConvWeightGrad>::load(v));
      for (const bf16 &v : first)
        nonFinite += !std::isfinite(__bfloat162float(v));
      if (nonFinite) {
        std::printf("FAIL bench %s %s: %zu NaN/Inf gradients\n", variant, mix,
                    nonFinite);
        deterministic = false;
      }
    } else if (std::memcmp(x.data(), first.data(), x.size() * sizeof(bf16)) ||
               std::memcmp(d.data(), firstDa.data(), d.size() * sizeof(bf16)) ||
               std::memcmp(w.data(), firstW.data(), w.size() * sizeof(w[0])) ||
               std::memcmp(g.data(), firstGates.data(),
                           g.size() * sizeof(g[0]))) {
      std::printf("FAIL bench %s %s: run %d differs from run 1\n", variant, mix,
                  run + 1);
      deterministic = false;
    }
  }

  const double ms = medianMs(reps, [&] {
    CUDA_OK(launchPrologueBackward<C>(args, workspace.data, 0));
  });
  // Bytes that must move: conv input and q/k/v cotangents read, conv-input
  // gradient written (bf16); a, b read and da, db written (bf16); dg, dbeta
  // read (fp32). The partial sums (rows x C x W fp32, written then read)
  // are counted apart.
  const double bytes = 3.0 * T * kC * 2 + 4.0 * T * kHV * 2 + 2.0 * T * kHV * 4;
  const double partialBytes = 2.0 * S::rowBlocks(T) * kC * kW * 4 +
                              2.0 * S::gateBlocks(T) * 2 * kHV * 4;
  const double copy = copyMs(static_cast<size_t>(bytes), reps);
  int perSM = 0;
  CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &perSM, prologueBackwardKernel<C>, C::kThreads, S::kSharedBytes));
  cudaFuncAttributes attributes;
  CUDA_OK(cudaFuncGetAttributes(&attributes, prologueBackwardKernel<C>));
  std::printf(
      "BENCH prologue_backward %-8s %-12s T=%lld C=%d: %.3f ms  %.0f GB/s"
      "  (copy of the same %.2f GB: %.3f ms, %.0f GB/s; %.0f%% of copy)"
      "  grid %dx%lld, %d regs, %d blocks/SM, partials %.1f MB\n",
      variant, mix, static_cast<long long>(T), kC, ms, bytes / ms / 1e6,
      bytes / 1e9, copy, bytes / copy / 1e6, 100.0 * copy / ms,
      S::kChannelBlocks, static_cast<long long>(S::rowBlocks(T)),
      attributes.numRegs, perSM, partialBytes / 1e6);
}

template <class C>
void benchEpilogue(const char *variant, int64_t tokens, int reps,
                   bool &deterministic) {
  const int64_t rowsCount = tokens * 32;
  const size_t size = size_t(rowsCount) * C::kHeadDimV;
  DeviceArray<bf16> x(size), z(size), w(C::kHeadDimV), dy(size), dx(size),
      dz(size);
  DeviceArray<typename C::WeightGrad> dw(C::kHeadDimV);
  fill(x, 21, 2.0f);
  fill(z, 22, 4.0f);
  fill(w, 23, 0.5f, 1.0f);
  fill(dy, 24);
  DeviceArray<unsigned char> workspace(
      epilogueBackwardWorkspaceBytes<C>(rowsCount));
  EpilogueBackwardArgs<C> args = {};
  args.x = x.data;
  args.z = z.data;
  args.weight = w.data;
  args.dy = dy.data;
  args.dx = dx.data;
  args.dz = dz.data;
  args.dweight = dw.data;
  args.rows = rowsCount;
  std::vector<bf16> first;
  std::vector<typename C::WeightGrad> firstW;
  for (int run = 0; run < 5; ++run) {
    dx.poison();
    dw.poison();
    CUDA_OK(launchEpilogueBackward<C>(args, workspace.data, 0));
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<bf16> got = dx.raw();
    std::vector<typename C::WeightGrad> gotW = dw.raw();
    if (run == 0) {
      first = std::move(got);
      firstW = std::move(gotW);
    } else if (std::memcmp(got.data(), first.data(),
                           got.size() * sizeof(bf16)) ||
               std::memcmp(gotW.data(), firstW.data(),
                           gotW.size() * sizeof(gotW[0]))) {
      std::printf("FAIL bench epilogue: run %d differs from run 1\n", run + 1);
      deterministic = false;
    }
  }
  const double ms = medianMs(reps, [&] {
    CUDA_OK(launchEpilogueBackward<C>(args, workspace.data, 0));
  });
  const double bytes = 5.0 * size * 2; // x, z, dy read; dx, dz written
  const double copy = copyMs(static_cast<size_t>(bytes), reps);
  std::printf(
      "BENCH epilogue_backward %-8s T=%lld x 32 heads x 128: %.3f ms  %.0f GB/s"
      "  (copy of the same %.2f GB: %.3f ms, %.0f GB/s; %.0f%% of copy)"
      "  %lld blocks of %d\n",
      variant, static_cast<long long>(tokens), ms, bytes / ms / 1e6,
      bytes / 1e9, copy, bytes / copy / 1e6, 100.0 * copy / ms,
      static_cast<long long>(EpilogueBackwardShape<C>::blocks(rowsCount)),
      C::kThreads);
}

/// Runs the bench entries whose "kernel variant mix" label contains
/// `filter` (all of them for an empty filter).
int runBench(int reps, const std::string &filter) {
  bool deterministic = true;
  const std::vector<int32_t> mix8192x4 = {8192, 8192, 8192, 8192};
  const std::vector<int32_t> mix1x32768 = {32768};
  const std::vector<int32_t> mix8random = {1000, 7000, 2500, 4321,
                                           6000, 1,    8000, 3946};
  auto wanted = [&](const std::string &label) {
    return label.find(filter) != std::string::npos;
  };
#define GDN_BENCH_PROLOGUE(Config, variant, mix, lengths)                      \
  if (wanted(std::string("prologue ") + variant + " " + mix))                  \
    benchPrologue<Config>(variant, mix, lengths, reps, deterministic);
#define GDN_BENCH_EPILOGUE(Config, variant)                                    \
  if (wanted(std::string("epilogue ") + variant))                              \
    benchEpilogue<Config>(variant, 32768, reps, deterministic);
  GDN_BENCH_PROLOGUE(Gqa16x32, "v8", "8192x4", mix8192x4)
  GDN_BENCH_PROLOGUE(Gqa16x32V8R8, "v8r8", "8192x4", mix8192x4)
  GDN_BENCH_PROLOGUE(Gqa16x32V16, "v16", "8192x4", mix8192x4)
  GDN_BENCH_PROLOGUE(Gqa16x32V16R8, "v16r8", "8192x4", mix8192x4)
  GDN_BENCH_PROLOGUE(Gqa16x32V8T128, "v8t128", "8192x4", mix8192x4)
  GDN_BENCH_PROLOGUE(Gqa16x32V8T512, "v8t512", "8192x4", mix8192x4)
  GDN_BENCH_PROLOGUE(Gqa16x32, "v8", "1x32768", mix1x32768)
  GDN_BENCH_PROLOGUE(Gqa16x32, "v8", "8random", mix8random)
  // The first entry again: the spread between two timings of one version.
  GDN_BENCH_PROLOGUE(Gqa16x32, "v8", "8192x4 again", mix8192x4)
  GDN_BENCH_EPILOGUE(EpilogueConfig, "b528")
  GDN_BENCH_EPILOGUE(EpilogueTile<256 GDN_COMMA 1056>, "b1056")
  GDN_BENCH_EPILOGUE(EpilogueTile<512 GDN_COMMA 2112>, "t512")
  GDN_BENCH_EPILOGUE(EpilogueConfig, "b528 again")
#undef GDN_BENCH_PROLOGUE
#undef GDN_BENCH_EPILOGUE
  std::printf(
      "%s bench determinism (5 runs of every timed shape, byte comparison)\n",
      deterministic ? "PASS" : "FAIL");
  return deterministic ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 3 && std::string(argv[1]) == "check")
    return runChecks(argv[2]);
  if (argc >= 2 && std::string(argv[1]) == "bench")
    return runBench(argc >= 3 ? std::atoi(argv[2]) : 20,
                    argc >= 4 ? argv[3] : "");
  std::fprintf(stderr, "usage: %s check DIR | bench [REPS [FILTER]]\n",
               argv[0]);
  return 2;
}
