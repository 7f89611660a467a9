//===- prologue_breakdown.cu - where the prologue function's time goes ----===//
//
// Times the generated gqa16x32 prologue (kernels.cu of
// test/Integration/Inputs/prologue_gqa16x32.mlir after --gdn-pipeline, or a
// tile variant) four ways in the same rounds, so that clock drift hits all
// alike: the whole entry point (what utils/gpu-integration.sh reports;
// since 2026-12 the prologue validates the packing itself, so the entry
// launches nothing else), the one-block validation kernel that functions
// without a prologue launch (buildPackingMetadata), the prologue kernel
// entry alone, and cudaMemcpyAsync of the
// same bytes (the reference of docs/performance.md), plus a plain 16-byte
// grid-stride copy kernel. Median of ITERS; random bf16 inputs. Last, an
// FNV-1a hash of every output byte: tile variants must agree bit for bit.
// With -DPB_INPUT_F32=1 the conv input and a, b are f32, as in the layers
// gdn_torch compiles with f32 projection outputs (kernels.cu of
// test/Target/CUDA/Inputs/prologue_f32_input.mlir).
// One translation unit with kernels.cu; needs no gdnrt (the entry's stream
// query is stubbed).
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \
//     -I kernels/include -I runtime/include -I DIR_WITH_KERNELS_CU \
//     test/Integration/harness/prologue_breakdown.cu -o breakdown
//   ./breakdown LENGTHS [ITERS] [LABEL]      e.g. ./breakdown
//   8192,8192,8192,8192 50
//
//===----------------------------------------------------------------------===//
#include "kernels.cu"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

// The whole-function entry asks gdnrt for its stream; this harness has none.
extern "C" cudaStream_t gdnrt_context_stream(const gdnrt_context_t *) {
  return 0;
}

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_),          \
                  __FILE__, __LINE__);                                         \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

__global__ void copyKernel(const uint4 *__restrict__ src,
                           uint4 *__restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

// A value in [-2, 2) from an element's index (the same on every run).
__device__ float hashedValue(size_t i, unsigned seed) {
  unsigned h = (unsigned)i * 2654435761u ^ seed;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return ((h & 0xffff) / 65536.0f - 0.5f) * 4.0f;
}

__global__ void fillBf16(__nv_bfloat16 *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = __float2bfloat16(hashedValue(i, seed));
}

#if PB_INPUT_F32
using Input = float;
constexpr gdn_dtype_t kInputType = GDN_F32;
__global__ void fillInput(float *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = hashedValue(i, seed);
}
#else
using Input = __nv_bfloat16;
constexpr gdn_dtype_t kInputType = GDN_BF16;
#define fillInput fillBf16
#endif

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  std::vector<int> lengths;
  {
    std::string text = argc > 1 ? argv[1] : "32768";
    size_t s = 0;
    while (s < text.size()) {
      size_t c = text.find(',', s);
      if (c == std::string::npos)
        c = text.size();
      lengths.push_back(std::atoi(text.substr(s, c - s).c_str()));
      s = c + 1;
    }
  }
  const int iters = argc > 2 ? std::atoi(argv[2]) : 50;
  const char *label = argc > 3 ? argv[3] : "variant";
  int64_t T = 0;
  std::vector<int32_t> cu{0};
  for (int l : lengths)
    cu.push_back((int32_t)(T += l));
  const int C = 8192, HV = 32;
  Input *mixed, *a, *b;
  __nv_bfloat16 *weight, *q, *k, *v;
  float *aLog, *dtBias, *g, *beta;
  int32_t *dcu;
  const size_t in = sizeof(Input);
  CK(cudaMalloc(&mixed, T * C * in));
  CK(cudaMalloc(&weight, C * 4 * 2));
  CK(cudaMalloc(&a, T * HV * in));
  CK(cudaMalloc(&b, T * HV * in));
  CK(cudaMalloc(&aLog, HV * 4));
  CK(cudaMalloc(&dtBias, HV * 4));
  CK(cudaMalloc(&q, T * 2048 * 2));
  CK(cudaMalloc(&k, T * 2048 * 2));
  CK(cudaMalloc(&v, T * 4096 * 2));
  CK(cudaMalloc(&g, T * HV * 4));
  CK(cudaMalloc(&beta, T * HV * 4));
  CK(cudaMalloc(&dcu, cu.size() * 4));
  CK(cudaMemcpy(dcu, cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
  fillInput<<<1024, 256>>>(mixed, T * C, 1);
  fillBf16<<<64, 256>>>(weight, C * 4, 2);
  fillInput<<<64, 256>>>(a, T * HV, 3);
  fillInput<<<64, 256>>>(b, T * HV, 4);
  std::vector<float> hostParams(HV);
  for (int i = 0; i < HV; ++i)
    hostParams[i] = 0.1f * i - 1.0f;
  CK(cudaMemcpy(aLog, hostParams.data(), HV * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dtBias, hostParams.data(), HV * 4, cudaMemcpyHostToDevice));

  auto tensor = [](void *data, gdn_dtype_t dt, std::vector<int64_t> shape) {
    gdn_tensor_t t = {};
    t.data = data;
    t.dtype = dt;
    t.rank = (int32_t)shape.size();
    for (size_t i = 0; i < shape.size(); ++i)
      t.shape[i] = shape[i];
    return t;
  };
  gdn_tensor_t args[7] = {tensor(mixed, kInputType, {T, C}),
                          tensor(weight, GDN_BF16, {C, 4}),
                          tensor(a, kInputType, {T, HV}),
                          tensor(b, kInputType, {T, HV}),
                          tensor(aLog, GDN_F32, {HV}),
                          tensor(dtBias, GDN_F32, {HV}),
                          tensor(dcu, GDN_I32, {(int64_t)cu.size()})};
  gdn_tensor_t results[5] = {
      tensor(q, GDN_BF16, {T, 16, 128}), tensor(k, GDN_BF16, {T, 16, 128}),
      tensor(v, GDN_BF16, {T, 32, 128}), tensor(g, GDN_F32, {T, HV}),
      tensor(beta, GDN_F32, {T, HV})};
  size_t wsBytes = gdn_prologue_gqa16x32_workspace_bytes(args);
  void *ws;
  CK(cudaMalloc(&ws, std::max<size_t>(wsBytes, 256)));
  static char dummy;
  gdnrt_context_t *ctx = reinterpret_cast<gdnrt_context_t *>(&dummy);

  gdn_packing_t p0 = {dcu, nullptr, (int32_t)lengths.size(), (int32_t)T, ws};
  const gdn_tensor_t operands[] = {args[0], args[1], args[2],
                                   args[3], args[4], args[5]};

  auto fn = [&] {
    int e = gdn_prologue_gqa16x32(args, results, ws, ctx);
    if (e) {
      std::printf("function failed %d\n", e);
      std::exit(3);
    }
  };
  auto meta = [&] {
    CK(gdn::device::buildPackingMetadata(
        {p0.cu_seqlens, p0.cu_padded, p0.num_seqs, p0.buffer_tokens},
        gdn::device::PackingWorkspace::carve(ws), 0));
  };
  auto kernel = [&] {
    int e = gdn_prologue_gqa16x32_k0_prologue(operands, results, &p0, 0);
    if (e) {
      std::printf("kernel failed %d\n", e);
      std::exit(3);
    }
  };
  const size_t moved = (size_t)T * C * in + C * 4 * 2 + (size_t)T * HV * 2 * in +
                       HV * 8 + cu.size() * 4 + (size_t)T * C * 2 +
                       (size_t)T * HV * 8;
  const size_t copyBytes = moved / 2;
  void *src, *dst;
  CK(cudaMalloc(&src, copyBytes));
  CK(cudaMalloc(&dst, copyBytes));
  fillBf16<<<1024, 256>>>((__nv_bfloat16 *)src, copyBytes / 2, 5);
  auto memcpyRef = [&] {
    CK(cudaMemcpyAsync(dst, src, copyBytes, cudaMemcpyDeviceToDevice));
  };
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  auto copyK = [&] {
    copyKernel<<<sms * 8, 256>>>((const uint4 *)src, (uint4 *)dst,
                                 copyBytes / 16);
  };
  CK(cudaDeviceSynchronize());

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto timeOnce = [&](auto &&f) {
    CK(cudaEventRecord(e0));
    f();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms;
  };
  for (int i = 0; i < 5; ++i) {
    fn();
    memcpyRef();
    copyK();
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> tf, tm, tk, tc, tck;
  for (int i = 0; i < iters; ++i) {
    tf.push_back(timeOnce(fn));
    tm.push_back(timeOnce(meta));
    tk.push_back(timeOnce(kernel));
    tc.push_back(timeOnce(memcpyRef));
    tck.push_back(timeOnce(copyK));
  }
  // Validity of the packing status after the runs.
  gdn_status_t status;
  CK(cudaMemcpy(&status, ws, sizeof(status), cudaMemcpyDeviceToHost));
  if (status.code != GDN_STATUS_OK) {
    std::printf("packing status %d\n", status.code);
    return 4;
  }
  const double f = median(tf), m = median(tm), kk = median(tk), c = median(tc),
               ck = median(tck);
  const double copyBw = 2.0 * copyBytes / (c * 1e-3) / 1e12;
  const double copyKBw = 2.0 * copyBytes / (ck * 1e-3) / 1e12;
  std::printf("PB %-28s T=%-6lld seqs=%-3zu fn %.4f ms (%.1f%%)  kernel %.4f "
              "ms (%.1f%%)  meta %.4f ms  "
              "memcpy %.4f ms %.2f TB/s  copyK %.4f ms %.2f TB/s  MB %.1f\n",
              label, (long long)T, lengths.size(), f,
              100.0 * (moved / (f * 1e-3) / 1e12) / copyBw, kk,
              100.0 * (moved / (kk * 1e-3) / 1e12) / copyBw, m, c, copyBw, ck,
              copyKBw, moved / 1e6);
  {
    // FNV-1a over every output byte: variants must agree bit for bit.
    kernel();
    CK(cudaDeviceSynchronize());
    unsigned long long hash = 1469598103934665603ull;
    auto mix = [&](void *d, size_t bytes) {
      std::vector<unsigned char> h(bytes);
      CK(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost));
      for (unsigned char c : h) {
        hash ^= c;
        hash *= 1099511628211ull;
      }
    };
    mix(q, T * 2048 * 2);
    mix(k, T * 2048 * 2);
    mix(v, T * 4096 * 2);
    mix(g, T * HV * 4);
    mix(beta, T * HV * 4);
    std::printf("HASH %s T=%lld seqs=%zu %016llx\n", label, (long long)T,
                lengths.size(), hash);
  }
  return 0;
}
