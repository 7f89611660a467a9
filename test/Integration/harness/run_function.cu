//===- run_function.cu - run one generated function on the GPU -------------===//
//
// A generic driver for the whole-function entry points that gdn-translate
// emits. Compiled together with a generated .cu (GDN_FN names the function's
// prefix, GDN_HEADER its header) and linked with gdnrt, which runs the
// function's projections and owns the context (device 0, the legacy default
// stream) every entry point takes. Modes:
//
//   check IN EXPECTED OUT RTOL  run on IN/argN.npy, write OUT/resultN.npy,
//                               compare with EXPECTED/resultN.npy (gdn-run's
//                               float64 results) by relative RMS error, then
//                               check packed == each sequence alone (bit for
//                               bit) and that 5 runs are bit-identical
//                               (a parameter's gradient sums over the
//                               sequences: it is checked against gdn-run
//                               only)
//   corrupt IN [FREE]           break cu_seqlens and expect a packing error
//                               and NaN results, never numbers; FREE lists
//                               (comma-separated) the results computed
//                               wholly or partly without the offsets (a
//                               backward's gated RMSNorm and output
//                               projection gradients), which may hold them
//   bench LENGTHS ITERS         time the function on random inputs with the
//                               given sequence lengths (GDN_ARG<i>_SHAPE:
//                               argument i's shape, as 8192x4, with T the
//                               tokens and N the sequences)
//
// Exits non-zero on any failure; prints one line per check.
//
//===----------------------------------------------------------------------===//

#include GDN_HEADER
#include "bench_shapes.h"
#include "check_lines.h"
#include "cuda_check.h"
#include "generated_entry.h"
#include "host_tensors.h"
#include "lengths.h"
#include "npy.h"
#include "reference_check.h"
#include "timing.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace harness;

gdnrt_context_t *context = nullptr;

/// Device buffers of one call: arguments, results, workspace.
struct Run {
  std::vector<gdn_tensor_t> args, results;
  std::vector<std::vector<char>> resultBytes;
  int status = GDN_SUCCESS;
  std::string message;
};

/// Runs the function once on `inputs`; results are poisoned first with
/// `poison` bytes (0xFF: NaN for floats, so an element the kernels forget to
/// write shows up as a mismatch; 0x00: finite zeros, so that NaN results must
/// have been written by the kernels).
Run runOnce(const std::vector<HostTensor> &inputs, int poison = 0xFF) {
  Run run;
  for (const HostTensor &t : inputs)
    run.args.push_back(upload(t));
  run.results.resize(FN_SIGNATURE.num_results);
  if (int error = FN_SHAPES(run.args.data(), run.results.data())) {
    run.status = error;
    run.message = "result_shapes rejected the arguments";
    return run;
  }
  for (gdn_tensor_t &r : run.results) {
    CUDA_OK(cudaMalloc(&r.data, std::max<size_t>(bytesOf(r), 16)));
    CUDA_OK(cudaMemset(r.data, poison, bytesOf(r)));
  }
  size_t workspaceBytes = FN_WORKSPACE(run.args.data());
  void *workspace = nullptr;
  CUDA_OK(cudaMalloc(&workspace, std::max<size_t>(workspaceBytes, 256)));
  run.status = FN(run.args.data(), run.results.data(), workspace, context);
  char message[512] = "";
  if (run.status == GDN_SUCCESS)
    run.status =
        FN_CHECK(run.args.data(), workspace, context, message, sizeof(message));
  else // a gdnrt call failed (its message), or a generated check did
    std::snprintf(message, sizeof(message), "%s", gdnrt_last_error());
  run.message = message;
  CUDA_OK(cudaDeviceSynchronize());
  for (gdn_tensor_t &r : run.results) {
    std::vector<char> bytes(bytesOf(r));
    CUDA_OK(cudaMemcpy(bytes.data(), r.data, bytes.size(), cudaMemcpyDeviceToHost));
    run.resultBytes.push_back(std::move(bytes));
    CUDA_OK(cudaFree(r.data));
  }
  for (gdn_tensor_t &a : run.args)
    CUDA_OK(cudaFree(a.data));
  CUDA_OK(cudaFree(workspace));
  return run;
}

std::vector<HostTensor> loadInputs(const std::string &dir) {
  std::vector<HostTensor> inputs;
  for (int i = 0; i < FN_SIGNATURE.num_args; ++i) {
    npy::Array array;
    std::string error;
    if (!npy::read(dir + "/arg" + std::to_string(i) + ".npy", array, error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      std::exit(2);
    }
    inputs.push_back({FN_SIGNATURE.arg_dtypes[i], array.shape, array.values});
  }
  return inputs;
}

int findRole(gdn_role_t role) {
  for (int i = 0; i < FN_SIGNATURE.num_args; ++i)
    if (FN_SIGNATURE.arg_roles[i] == role)
      return i;
  return -1;
}

int check(const std::string &in, const std::string &expectedDir,
          const std::string &out, double rtol) {
  std::vector<HostTensor> inputs = loadInputs(in);
  Run packed = runOnce(inputs);
  expect(packed.status == GDN_SUCCESS,
         "the function runs (status " + std::to_string(packed.status) + ": " +
             packed.message + ")");
  if (packed.status != GDN_SUCCESS)
    return 1;
  for (int r = 0; r < FN_SIGNATURE.num_results; ++r) {
    const std::string file = "/result" + std::to_string(r) + ".npy";
    compareWithReference("result #" + std::to_string(r), packed.results[r],
                         packed.resultBytes[r], expectedDir + file, out + file,
                         rtol, expect);
  }

  // Determinism: four more runs (five in all, fresh buffers each time)
  // give the same bytes.
  constexpr int kRuns = 5;
  bool same = true;
  for (int run = 1; same && run < kRuns; ++run) {
    Run again = runOnce(inputs);
    same = again.status == GDN_SUCCESS;
    for (int r = 0; same && r < FN_SIGNATURE.num_results; ++r)
      same = again.resultBytes[r] == packed.resultBytes[r];
  }
  expect(same, std::to_string(kRuns) + " runs are bit-identical");

  // Packed == each sequence alone, bit for bit.
  int cuIndex = findRole(GDN_ROLE_CU_SEQLENS);
  int paddedIndex = findRole(GDN_ROLE_CU_PADDED);
  if (cuIndex < 0)
    return failures ? 1 : 0;
  const std::vector<double> &cu = inputs[cuIndex].values;
  std::vector<double> slotOffsets =
      paddedIndex >= 0 ? inputs[paddedIndex].values : cu;
  const int seqs = static_cast<int>(cu.size()) - 1;
  bool allSame = true;
  for (int s = 0; s < seqs; ++s) {
    const int64_t begin = static_cast<int64_t>(slotOffsets[s]);
    const int64_t length = static_cast<int64_t>(cu[s + 1] - cu[s]);
    std::vector<HostTensor> alone = inputs;
    for (int i = 0; i < FN_SIGNATURE.num_args; ++i) {
      HostTensor &t = alone[i];
      switch (FN_SIGNATURE.arg_roles[i]) {
      case GDN_ROLE_TOKENS:
        t.values.assign(inputs[i].values.begin() + begin * t.rowSize(),
                        inputs[i].values.begin() + (begin + length) * t.rowSize());
        t.shape[0] = length;
        break;
      case GDN_ROLE_PER_SEQUENCE:
        t.values.assign(inputs[i].values.begin() + s * t.rowSize(),
                        inputs[i].values.begin() + (s + 1) * t.rowSize());
        t.shape[0] = 1;
        break;
      case GDN_ROLE_CU_SEQLENS:
      case GDN_ROLE_CU_PADDED:
        t.values = {0.0, static_cast<double>(length)};
        t.shape[0] = 2;
        break;
      default:
        break;
      }
    }
    Run single = runOnce(alone);
    if (single.status != GDN_SUCCESS) {
      allSame = false;
      std::printf("  sequence %d alone failed: %s\n", s, single.message.c_str());
      continue;
    }
    for (int r = 0; r < FN_SIGNATURE.num_results; ++r) {
      if (FN_SIGNATURE.result_roles[r] == GDN_ROLE_PARAMETER)
        continue; // a sum over every sequence
      const gdn_tensor_t &t = packed.results[r];
      size_t rowBytes = bytesOf(t) / std::max<int64_t>(t.shape[0], 1);
      size_t first = FN_SIGNATURE.result_roles[r] == GDN_ROLE_PER_SEQUENCE
                         ? s * rowBytes
                         : begin * rowBytes;
      size_t count = FN_SIGNATURE.result_roles[r] == GDN_ROLE_PER_SEQUENCE
                         ? rowBytes
                         : length * rowBytes;
      if (single.resultBytes[r].size() != count ||
          std::memcmp(single.resultBytes[r].data(),
                      packed.resultBytes[r].data() + first, count) != 0) {
        allSame = false;
        std::printf("  sequence %d (length %lld): result #%d differs\n", s,
                    static_cast<long long>(length), r);
      }
    }
  }
  expect(allSame, "packed results equal each of the " + std::to_string(seqs) +
                      " sequences run alone, bit for bit");
  return failures ? 1 : 0;
}

int corrupt(const std::string &in, const std::string &freeList) {
  std::vector<bool> free(FN_SIGNATURE.num_results, false);
  for (size_t start = 0; start < freeList.size();) {
    size_t comma = freeList.find(',', start);
    if (comma == std::string::npos)
      comma = freeList.size();
    const std::string item = freeList.substr(start, comma - start);
    char *end = nullptr;
    const long r = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || r < 0 || r >= FN_SIGNATURE.num_results) {
      expect(false, "FREE names results by index, comma-separated; '" +
                        item + "' is not a result of " + FN_SIGNATURE.name);
      return 1;
    }
    free[r] = true;
    start = comma + 1;
  }
  std::vector<HostTensor> inputs = loadInputs(in);
  int cuIndex = findRole(GDN_ROLE_CU_SEQLENS);
  std::vector<double> &cu = inputs[cuIndex].values;
  if (cu.size() < 3) {
    expect(false, "corrupt needs at least two sequences");
    return 1;
  }
  // cu[1] beyond cu[2]: decreasing at index 2.
  cu[1] = cu[2] + 1;
  // Results start as finite zeros: every NaN below was written by a kernel.
  Run run = runOnce(inputs, /*poison=*/0x00);
  expect(run.status == GDN_ERROR_INVALID_PACKING,
         "decreasing cu_seqlens is reported: " + run.message);
  bool noNumbers = true;
  for (int r = 0; r < FN_SIGNATURE.num_results; ++r)
    if (!free[r])
      for (double v : decodeAll(run.resultBytes[r], run.results[r].dtype))
        noNumbers &= std::isnan(v);
  expect(noNumbers,
         "no result element holds a number after invalid metadata" +
             (freeList.empty()
                  ? std::string()
                  : " (results " + freeList +
                        ", computed without the offsets, are not checked)"));
  return failures ? 1 : 0;
}

int bench(const std::string &lengthsText, int iterations) {
  const std::vector<int64_t> lengths = parseLengths(lengthsText);
  const std::vector<double> cu = offsetsOf<double>(lengths);
  const int64_t tokens = static_cast<int64_t>(cu.back());
  // Random device inputs, shaped from the signature (static sizes come from
  // result_shapes' checks; dynamic token dims are `tokens`).
  std::vector<gdn_tensor_t> args(FN_SIGNATURE.num_args);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  size_t argBytes = 0;
  for (int i = 0; i < FN_SIGNATURE.num_args; ++i) {
    HostTensor t{FN_SIGNATURE.arg_dtypes[i], {}, {}};
    const char *dims = benchShapeText(i);
    if (FN_SIGNATURE.arg_roles[i] == GDN_ROLE_CU_SEQLENS) {
      t.shape = {static_cast<int64_t>(cu.size())};
      t.values = cu;
    } else {
      t.shape = parseBenchShape(dims ? dims : "", tokens,
                                static_cast<int64_t>(lengths.size()));
      int64_t n = 1;
      for (int64_t size : t.shape)
        n *= size;
      t.values.resize(n);
      for (double &v : t.values)
        v = normal(rng);
    }
    args[i] = upload(t);
    argBytes += bytesOf(args[i]);
  }
  std::vector<gdn_tensor_t> results(FN_SIGNATURE.num_results);
  if (FN_SHAPES(args.data(), results.data()) != GDN_SUCCESS) {
    expect(false, "result_shapes accepts the bench shapes (set GDN_ARG<i>_SHAPE)");
    return 1;
  }
  size_t resultBytes = 0;
  for (gdn_tensor_t &r : results) {
    CUDA_OK(cudaMalloc(&r.data, bytesOf(r)));
    resultBytes += bytesOf(r);
  }
  void *workspace;
  CUDA_OK(cudaMalloc(&workspace, std::max<size_t>(FN_WORKSPACE(args.data()), 256)));
  EventTimer timer;
  for (int i = 0; i < 5; ++i)
    if (int error = FN(args.data(), results.data(), workspace, context)) {
      expect(false, "the function runs on the bench inputs (status " +
                        std::to_string(error) + ": " + gdnrt_last_error() +
                        ")");
      return 1;
    }
  std::vector<float> times;
  for (int i = 0; i < iterations; ++i)
    times.push_back(
        timer.ms([&] { FN(args.data(), results.data(), workspace, context); }));
  char message[256] = {};
  expect(FN_CHECK(args.data(), workspace, context, message, sizeof(message)) ==
             GDN_SUCCESS,
         std::string("bench inputs are valid: ") + message);
  const double medianMs = median(times);
  // Device copy bandwidth on a buffer of the same size, as the reference.
  size_t copyBytes = (argBytes + resultBytes) / 2;
  void *src, *dst;
  CUDA_OK(cudaMalloc(&src, copyBytes));
  CUDA_OK(cudaMalloc(&dst, copyBytes));
  // 5 warm-up copies, timed like the rest but not counted.
  std::vector<float> copyTimes;
  for (int i = 0; i < iterations + 5; ++i) {
    const float ms = timer.ms([&] {
      CUDA_OK(cudaMemcpyAsync(dst, src, copyBytes, cudaMemcpyDeviceToDevice));
    });
    if (i >= 5)
      copyTimes.push_back(ms);
  }
  double copyMedian = median(copyTimes);
  double bandwidth = (argBytes + resultBytes) / (medianMs * 1e-3) / 1e12;
  double copyBandwidth = 2.0 * copyBytes / (copyMedian * 1e-3) / 1e12;
  std::printf("BENCH %s tokens=%lld seqs=%zu: median %.4f ms, %.1f MB moved, "
              "%.2f TB/s = %.1f%% of the device copy (%.2f TB/s)\n",
              FN_SIGNATURE.name, static_cast<long long>(tokens), lengths.size(),
              medianMs, (argBytes + resultBytes) / 1e6, bandwidth,
              100.0 * bandwidth / copyBandwidth, copyBandwidth);
  return failures ? 1 : 0;
}

int runMode(const std::string &mode, char **argv) {
  if (mode == "check")
    return check(argv[2], argv[3], argv[4], std::atof(argv[5]));
  if (mode == "corrupt")
    return corrupt(argv[2], argv[3] ? argv[3] : "");
  return bench(argv[2], std::atoi(argv[3]));
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (!(mode == "check" && argc == 6) &&
      !(mode == "corrupt" && (argc == 3 || argc == 4)) &&
      !(mode == "bench" && argc == 4)) {
    std::fprintf(stderr, "usage: %s check IN EXPECTED OUT RTOL | corrupt IN [FREE] | "
                         "bench LENGTHS ITERS\n", argv[0]);
    return 2;
  }
  if (gdnrt_context_create(0, /*stream=*/0, &context) != GDN_SUCCESS) {
    std::fprintf(stderr, "gdnrt_context_create: %s\n", gdnrt_last_error());
    return 2;
  }
  const int status = runMode(mode, argv);
  if (gdnrt_context_destroy(context) != GDN_SUCCESS) {
    std::fprintf(stderr, "gdnrt_context_destroy: %s\n", gdnrt_last_error());
    return 1;
  }
  return status;
}
