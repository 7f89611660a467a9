//===- Errors.cpp - last-error messages and the tensor argument check -----===//

#include "Internal.h"
#include "Plan.h"

#include <string>

namespace {
thread_local std::string lastError;
} // namespace

extern "C" const char *gdnrt_last_error(void) { return lastError.c_str(); }

extern "C" const char *gdnrt_error_name(int code) {
  switch (code) {
  case GDN_SUCCESS:
    return "GDN_SUCCESS";
  case GDN_ERROR_INVALID_ARGUMENT:
    return "GDN_ERROR_INVALID_ARGUMENT";
  case GDN_ERROR_INVALID_PACKING:
    return "GDN_ERROR_INVALID_PACKING";
  case GDN_ERROR_CUDA:
    return "GDN_ERROR_CUDA";
  case GDN_ERROR_NCCL:
    return "GDN_ERROR_NCCL";
  case GDN_ERROR_TIMEOUT:
    return "GDN_ERROR_TIMEOUT";
  case GDN_ERROR_CUBLAS:
    return "GDN_ERROR_CUBLAS";
  case GDN_ERROR_SYSTEM:
    return "GDN_ERROR_SYSTEM";
  }
  return "unknown gdn error code";
}

namespace gdnrt {

int fail(int code, const std::string &call, const std::string &message) {
  lastError = call + ": " + message;
  return code;
}

int failWith(int code, const std::string &recorded) {
  lastError = recorded;
  return code;
}

int succeed() {
  lastError.clear();
  return GDN_SUCCESS;
}

std::string describeCuda(const char *what, cudaError_t error) {
  return std::string(what) + " failed: " + cudaGetErrorString(error) + " (" +
         cudaGetErrorName(error) + ")";
}

std::string describeNccl(const char *what, ncclResult_t result,
                         ncclComm_t comm) {
  std::string text =
      std::string(what) + " failed: " + ncclGetErrorString(result);
  // NCCL keeps a more precise reason for the last failure.
  const char *detail = ncclGetLastError(comm);
  if (detail && *detail)
    text += std::string(" (") + detail + ")";
  return text;
}

std::string describeCublas(const char *what, cublasStatus_t status) {
  return std::string(what) + " failed with cuBLAS status " +
         std::to_string(static_cast<int>(status));
}

const char *groupName(gdnrt_group_t group) {
  switch (group) {
  case GDNRT_GROUP_SP:
    return "sp";
  case GDNRT_GROUP_CP:
    return "cp";
  default:
    return "unknown";
  }
}

std::string describeRank(const gdnrt_comm_t *comm, gdnrt_group_t group) {
  return "rank " + std::to_string(comm->rank) + " of " +
         std::to_string(comm->size) + " of the " + groupName(group) + " group";
}

bool checkTensorArgument(const gdn_tensor_t *tensor, const char *name,
                         std::string &error, bool requireData) {
  if (!tensor) {
    error = std::string("the ") + name + " is a null pointer";
    return false;
  }
  if (tensor->rank < 1 || tensor->rank > GDN_MAX_RANK) {
    error = std::string("the ") + name + " has rank " +
            std::to_string(tensor->rank) + "; ranks 1 to " +
            std::to_string(GDN_MAX_RANK) + " are supported";
    return false;
  }
  if (const int dtype = enumValue(&tensor->dtype);
      dtype < GDN_BF16 || dtype > GDN_I64) {
    error = std::string("the ") + name + " has an unknown dtype " +
            std::to_string(dtype);
    return false;
  }
  int64_t elements = 1;
  for (int32_t d = 0; d < tensor->rank; ++d) {
    if (tensor->shape[d] < 0) {
      error = std::string("the ") + name + " has size " +
              std::to_string(tensor->shape[d]) + " in dim " +
              std::to_string(d);
      return false;
    }
    elements *= tensor->shape[d];
  }
  if (requireData && elements > 0 && !tensor->data) {
    error = std::string("the ") + name + " has " + std::to_string(elements) +
            " elements but a null data pointer";
    return false;
  }
  return true;
}

} // namespace gdnrt
