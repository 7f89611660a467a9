//===- Executor.h - run a collective's plan on the GPU -----------*- C++ -*-===//

#ifndef GDN_RUNTIME_LIB_EXECUTOR_H
#define GDN_RUNTIME_LIB_EXECUTOR_H

#include "Internal.h"
#include "Plan.h"

namespace gdnrt {

/// The device pointers behind Buffer::Input, Input2, Output, Workspace,
/// Input3 and Output2 (Buffer::Ones is the context's).
struct Buffers {
  const void *input = nullptr;
  const void *input2 = nullptr;
  void *output = nullptr;
  void *workspace = nullptr;
  const void *input3 = nullptr;
  void *output2 = nullptr;
};

/// Resolves a plan's addresses to device pointers.
struct Resolver {
  const Buffers &buffers;
  const void *ones;
  char *operator()(Address address) const;
};

/// Enqueues `plan` on the context's stream: copies and memsets as CUDA
/// calls, each group as one ncclGroupStart/End on `comm` (waited for with
/// the communicator's timeout) or, on a threads communicator, as copies
/// between the ranks' streams (communicateThreads), GEMMs through
/// cuBLASLt. A failure on a threads communicator aborts its group, so that
/// the other ranks fail at once instead of waiting for this one.
int execute(const Plan &plan, gdnrt_context_t *context, gdnrt_comm_t *comm,
            const Buffers &buffers, const std::string &call);

/// One group of a plan on a threads communicator (ThreadsComm.cpp): the
/// messages through the group's mailboxes, the copies on the receivers'
/// streams, then every sum as one GEMM of the gathered pieces and the
/// context's ones.
int communicateThreads(const Group &group, gdnrt_context_t *context,
                       gdnrt_comm_t *comm, const Resolver &at,
                       const std::string &call);

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_EXECUTOR_H
