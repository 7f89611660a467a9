//===- GpuBenchmark.cpp - gdnrt_linear against cuBLASLt called directly ---===//
//
// For the projection shapes of the example layers (Qwen3-Next and Qwen3.5)
// at T = 8192 and 32768 tokens: the time of gdnrt_linear, and of the same
// GEMM through cuBLASLt directly with the best of its first 8 heuristic
// algorithms (each timed), on random bf16 inputs. Events around 20 calls,
// median of 7 repetitions, after warm-up. Prints one row per shape.
//
//===----------------------------------------------------------------------===//

#include "GpuBenchmark.h"

#include "gdn/runtime/gdnrt.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

namespace {

#define CHECK_CUDA(call)                                                       \
  if (cudaError_t e = (call)) {                                                \
    std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e));     \
    return 1;                                                                  \
  }

/// Median time of one call in ms: 7 repetitions of 20 calls between events.
double medianMs(cudaStream_t stream, const std::function<void()> &call) {
  for (int i = 0; i < 5; ++i)
    call();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int rep = 0; rep < 7; ++rep) {
    cudaEventRecord(start, stream);
    for (int i = 0; i < 20; ++i)
      call();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms / 20);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Projection {
  const char *name;
  int64_t out, in;
};

/// The best direct cuBLASLt time for y = x W^T, trying 8 heuristic algos.
double directBestMs(cudaStream_t stream, cublasLtHandle_t lt, void *workspace,
                    size_t workspaceBytes, const void *x, const void *w,
                    void *y, int64_t tokens, int64_t in, int64_t out) {
  cublasLtMatmulDesc_t op;
  cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t transpose = CUBLAS_OP_T;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                 sizeof(transpose));
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, in, out, in);
  cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, in, tokens, in);
  cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, out, tokens, out);
  cublasLtMatmulPreference_t preference;
  cublasLtMatmulPreferenceCreate(&preference);
  cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
      sizeof(workspaceBytes));
  cublasLtMatmulHeuristicResult_t results[8];
  int returned = 0;
  cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, preference, 8, results,
                                 &returned);
  const float one = 1, zero = 0;
  double best = 1e30;
  for (int i = 0; i < returned; ++i) {
    bool ok = true;
    double ms = medianMs(stream, [&] {
      ok &= cublasLtMatmul(lt, op, &one, w, a, x, b, &zero, y, c, y, c,
                           &results[i].algo, workspace, workspaceBytes,
                           stream) == CUBLAS_STATUS_SUCCESS;
    });
    if (ok)
      best = std::min(best, ms);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(c);
  cublasLtMatmulDescDestroy(op);
  return best;
}

} // namespace

int runLinearBenchmark() {
  const Projection projections[] = {
      {"qwen3-next in_proj_qkvz", 12288, 2048},
      {"qwen3-next in_proj_ba", 64, 2048},
      {"qwen3-next out_proj", 2048, 4096},
      {"qwen3.5 in_proj_qkv", 8192, 4096},
      {"qwen3.5 in_proj_z", 4096, 4096},
      {"qwen3.5 in_proj_b", 32, 4096},
      {"qwen3.5 out_proj", 4096, 4096},
  };
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  gdnrt_context_t *context = nullptr;
  if (gdnrt_context_create(0, stream, &context)) {
    std::fprintf(stderr, "%s\n", gdnrt_last_error());
    return 1;
  }
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  const size_t workspaceBytes = size_t(32) << 20;
  void *workspace;
  CHECK_CUDA(cudaMalloc(&workspace, workspaceBytes));
  std::printf("%-26s %6s %6s %6s %10s %8s %10s %8s %7s\n", "projection", "T",
              "Out", "In", "gdnrt ms", "TFLOP/s", "direct ms", "TFLOP/s",
              "ratio");
  std::mt19937 rng(42);
  for (int64_t tokens : {int64_t(8192), int64_t(32768)})
    for (const Projection &p : projections) {
      std::vector<uint16_t> xh(tokens * p.in), wh(p.out * p.in);
      std::uniform_int_distribution<int> bits(0x3c00, 0x3f80); // ~[0.008, 1)
      for (auto &v : xh)
        v = static_cast<uint16_t>(bits(rng) | (rng() & 1 ? 0x8000 : 0));
      for (auto &v : wh)
        v = static_cast<uint16_t>(bits(rng) | (rng() & 1 ? 0x8000 : 0));
      void *x, *w, *y;
      CHECK_CUDA(cudaMalloc(&x, xh.size() * 2));
      CHECK_CUDA(cudaMalloc(&w, wh.size() * 2));
      CHECK_CUDA(cudaMalloc(&y, tokens * p.out * 2));
      cudaMemcpy(x, xh.data(), xh.size() * 2, cudaMemcpyHostToDevice);
      cudaMemcpy(w, wh.data(), wh.size() * 2, cudaMemcpyHostToDevice);
      gdn_tensor_t tx{x, {tokens, p.in}, 2, GDN_BF16},
          tw{w, {p.out, p.in}, 2, GDN_BF16}, ty{y, {tokens, p.out}, 2, GDN_BF16};
      int status = 0;
      double ours = medianMs(stream, [&] {
        status |= gdnrt_linear(context, &tx, &tw, &ty);
      });
      if (status) {
        std::fprintf(stderr, "gdnrt_linear: %s\n", gdnrt_last_error());
        return 1;
      }
      double direct = directBestMs(stream, lt, workspace, workspaceBytes, x, w,
                                   y, tokens, p.in, p.out);
      CHECK_CUDA(cudaGetLastError());
      const double flops = 2.0 * tokens * p.in * p.out;
      std::printf("%-26s %6lld %6lld %6lld %10.4f %8.1f %10.4f %8.1f %6.1f%%\n",
                  p.name, static_cast<long long>(tokens),
                  static_cast<long long>(p.out), static_cast<long long>(p.in),
                  ours, flops / ours / 1e9, direct, flops / direct / 1e9,
                  100.0 * direct / ours);
      cudaFree(x);
      cudaFree(w);
      cudaFree(y);
    }
  cudaFree(workspace);
  cublasLtDestroy(lt);
  gdnrt_context_destroy(context);
  cudaStreamDestroy(stream);
  return 0;
}
