//===- Context.cpp - device, stream, cuBLASLt workspace, bound groups -----===//

#include "Internal.h"
#include "Plan.h"

#include <new>
#include <vector>

using namespace gdnrt;

namespace {
/// cuBLASLt's recommended workspace on Hopper is 32 MiB.
constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;
} // namespace

extern "C" int gdnrt_context_create(int device, cudaStream_t stream,
                                    gdnrt_context_t **context) {
  const char *call = "gdnrt_context_create";
  if (!context)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "the output pointer is null");
  *context = nullptr;
  if (device < 0)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "device " + std::to_string(device) + " is negative");
  if (cudaError_t error = cudaSetDevice(device))
    return fail(GDN_ERROR_CUDA, call,
                describeCuda(("cudaSetDevice(" + std::to_string(device) + ")")
                                 .c_str(),
                             error));
  auto *created = new (std::nothrow) gdnrt_context;
  if (!created)
    return fail(GDN_ERROR_SYSTEM, call, "out of host memory");
  created->device = device;
  created->stream = stream;
  if (cublasStatus_t status = cublasLtCreate(&created->lt)) {
    delete created;
    return fail(GDN_ERROR_CUBLAS, call, describeCublas("cublasLtCreate", status));
  }
  if (cudaError_t error =
          cudaMalloc(&created->ltWorkspace, kGemmWorkspaceBytes)) {
    cublasLtDestroy(created->lt);
    delete created;
    return fail(GDN_ERROR_CUDA, call,
                describeCuda("cudaMalloc of the 32 MiB GEMM workspace", error));
  }
  created->ltWorkspaceBytes = kGemmWorkspaceBytes;
  // The ones that turn a GEMM into a sum of rows (all_reduce, return_halo,
  // the threads backend's sums): uploaded once, 64 KiB.
  std::vector<char> ones(onesBytes());
  writeOnes(ones.data());
  cudaError_t error = cudaMalloc(&created->ones, ones.size());
  if (!error)
    error = cudaMemcpy(created->ones, ones.data(), ones.size(),
                       cudaMemcpyHostToDevice);
  if (error) {
    cudaFree(created->ones);
    cudaFree(created->ltWorkspace);
    cublasLtDestroy(created->lt);
    delete created;
    return fail(
        GDN_ERROR_CUDA, call,
        describeCuda("cudaMalloc and upload of the constant ones", error));
  }
  *context = created;
  return succeed();
}

extern "C" int gdnrt_context_destroy(gdnrt_context_t *context) {
  if (!context)
    return succeed();
  cudaError_t freed = cudaFree(context->ltWorkspace);
  if (cudaError_t onesFreed = cudaFree(context->ones))
    freed = freed ? freed : onesFreed;
  cublasStatus_t destroyed = cublasLtDestroy(context->lt);
  delete context;
  if (freed)
    return fail(GDN_ERROR_CUDA, "gdnrt_context_destroy",
                describeCuda("cudaFree", freed));
  if (destroyed)
    return fail(GDN_ERROR_CUBLAS, "gdnrt_context_destroy",
                describeCublas("cublasLtDestroy", destroyed));
  return succeed();
}

extern "C" int gdnrt_context_set_stream(gdnrt_context_t *context,
                                        cudaStream_t stream) {
  if (!context)
    return fail(GDN_ERROR_INVALID_ARGUMENT, "gdnrt_context_set_stream",
                "the context is null");
  context->stream = stream;
  return succeed();
}

extern "C" cudaStream_t gdnrt_context_stream(const gdnrt_context_t *context) {
  return context ? context->stream : nullptr;
}

extern "C" int gdnrt_context_set_timeout(gdnrt_context_t *context,
                                         int64_t timeoutMs) {
  const char *call = "gdnrt_context_set_timeout";
  if (!context)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the context is null");
  if (timeoutMs <= 0)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "the timeout must be positive, got " +
                    std::to_string(timeoutMs) + " ms");
  context->timeoutMs = timeoutMs;
  for (gdnrt_comm_t *comm : context->groups)
    if (comm)
      comm->timeoutMs = timeoutMs;
  return succeed();
}

extern "C" int gdnrt_context_bind(gdnrt_context_t *context,
                                  gdnrt_group_t group, gdnrt_comm_t *comm) {
  const char *call = "gdnrt_context_bind";
  if (!context)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the context is null");
  if (const int value = enumValue(&group);
      value < 0 || value >= GDNRT_NUM_GROUPS)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "group " + std::to_string(value) +
                    " is neither GDNRT_GROUP_SP nor GDNRT_GROUP_CP");
  context->groups[group] = comm;
  if (comm)
    comm->timeoutMs = context->timeoutMs;
  return succeed();
}

extern "C" gdnrt_comm_t *gdnrt_context_comm(const gdnrt_context_t *context,
                                           gdnrt_group_t group) {
  if (const int value = enumValue(&group);
      !context || value < 0 || value >= GDNRT_NUM_GROUPS)
    return nullptr;
  return context->groups[group];
}
