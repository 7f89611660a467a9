//===- Executor.h - run a collective's plan on the GPU -----------*- C++ -*-===//

#ifndef GDN_RUNTIME_LIB_EXECUTOR_H
#define GDN_RUNTIME_LIB_EXECUTOR_H

#include "Internal.h"
#include "Plan.h"

namespace gdnrt {

/// The device pointers behind Buffer::Input, Input2, Output, Workspace.
struct Buffers {
  const void *input = nullptr;
  const void *input2 = nullptr;
  void *output = nullptr;
  void *workspace = nullptr;
};

/// Enqueues `plan` on the context's stream: copies and memsets as CUDA
/// calls, each group as one ncclGroupStart/End on `comm` (waited for with
/// the communicator's timeout), GEMMs through cuBLASLt.
int execute(const Plan &plan, gdnrt_context_t *context, gdnrt_comm_t *comm,
            const Buffers &buffers, const std::string &call);

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_EXECUTOR_H
