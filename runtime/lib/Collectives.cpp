//===- Collectives.cpp - the gdn_comm ops as gdnrt calls ------------------===//
//
// Each entry point checks, in this order and before enqueueing anything:
// the context, the group binding (a communicator of the size the IR was
// compiled for), every tensor argument, and the shapes (the planner), then
// runs the plan. Messages name the call, the rank and the offending value.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"
#include "Internal.h"
#include "Plan.h"

#include <functional>
#include <initializer_list>

using namespace gdnrt;

namespace {

/// The communicator bound to `group`, checked against the IR's group size.
int boundComm(gdnrt_context_t *context, gdnrt_group_t group, int ranks,
              const char *call, gdnrt_comm_t **comm) {
  if (!context)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the context is null");
  if (const int value = enumValue(&group);
      value < 0 || value >= GDNRT_NUM_GROUPS)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "group " + std::to_string(value) +
                    " is neither GDNRT_GROUP_SP nor GDNRT_GROUP_CP");
  *comm = context->groups[group];
  if (!*comm)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                std::string("no communicator is bound to the ") +
                    groupName(group) +
                    " group; call gdnrt_context_bind first");
  if ((*comm)->size != ranks)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                std::string("the program was compiled for a ") +
                    groupName(group) + " group of " + std::to_string(ranks) +
                    " ranks but the communicator bound to it has " +
                    std::to_string((*comm)->size));
  if (std::string broken = brokenReason(*comm); !broken.empty())
    return fail(GDN_ERROR_NCCL, call,
                "the " + std::string(groupName(group)) +
                    " communicator was aborted: " + broken);
  return GDN_SUCCESS;
}

/// Checks the workspace against the plan, then runs it.
int run(const Plan &plan, gdnrt_context_t *context, gdnrt_comm_t *comm,
        gdnrt_group_t group, const Buffers &buffers, const char *call) {
  if (plan.workspaceBytes > 0 && !buffers.workspace)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "the workspace is null but this call needs " +
                    std::to_string(plan.workspaceBytes) +
                    " bytes (see the matching _workspace_bytes query)");
  if (int error = execute(plan, context, comm, buffers,
                          std::string(call) + " (" +
                              describeRank(comm, group) + ")"))
    return error;
  return succeed();
}

int planFailed(const char *call, gdnrt_comm_t *comm, gdnrt_group_t group,
               const std::string &error) {
  return fail(GDN_ERROR_INVALID_ARGUMENT,
              std::string(call) + " (" + describeRank(comm, group) + ")",
              error);
}

/// One tensor of a collective: its name for messages and the plan's buffer
/// it binds.
struct Operand {
  const gdn_tensor_t *tensor;
  const char *name;
  Buffer buffer;
};

using Planner = std::function<bool(int rank, Plan &, std::string &)>;

/// The body every collective shares: the group binding, the tensors (in
/// the order given), the plan for this rank, then the run.
int collective(const char *call, gdnrt_context_t *context, gdnrt_group_t group,
               int ranks, std::initializer_list<Operand> operands,
               void *workspace, const Planner &planner) {
  gdnrt_comm_t *comm = nullptr;
  if (int error = boundComm(context, group, ranks, call, &comm))
    return error;
  std::string error;
  Buffers buffers;
  buffers.workspace = workspace;
  for (const Operand &operand : operands) {
    if (!checkTensorArgument(operand.tensor, operand.name, error))
      return fail(GDN_ERROR_INVALID_ARGUMENT, call, error);
    void *data = operand.tensor->data;
    switch (operand.buffer) {
    case Buffer::Input:
      buffers.input = data;
      break;
    case Buffer::Input2:
      buffers.input2 = data;
      break;
    case Buffer::Input3:
      buffers.input3 = data;
      break;
    case Buffer::Output:
      buffers.output = data;
      break;
    case Buffer::Output2:
      buffers.output2 = data;
      break;
    case Buffer::Workspace:
    case Buffer::Ones:
      break;
    }
  }
  Plan plan;
  if (!planner(comm->rank, plan, error))
    return planFailed(call, comm, group, error);
  return run(plan, context, comm, group, buffers, call);
}

/// Sums run in the tensor's floating-point type.
bool isFloat(gdn_dtype_t dtype) {
  return dtype == GDN_BF16 || dtype == GDN_F16 || dtype == GDN_F32 ||
         dtype == GDN_F64;
}

/// Workspace queries plan for rank 0 with the output the op would produce.
size_t workspaceOf(const std::function<bool(Plan &, std::string &)> &planner) {
  Plan plan;
  std::string error;
  return planner(plan, error) ? plan.workspaceBytes : 0;
}

/// Workspace queries size the staging before the tensors have memory.
bool valid(const gdn_tensor_t *tensor) {
  std::string ignored;
  return checkTensorArgument(tensor, "tensor", ignored, /*requireData=*/false);
}

} // namespace

extern "C" size_t gdnrt_all_gather_workspace_bytes(const gdn_tensor_t *input,
                                                   int ranks, int dim) {
  if (!valid(input) || dim < 0 || dim >= input->rank || ranks < 1)
    return 0;
  Shape in = Shape::of(*input), out = in;
  out.dims[dim] *= ranks;
  return workspaceOf([&](Plan &plan, std::string &error) {
    return planAllGather(in, out, ranks, 0, dim, plan, error);
  });
}

extern "C" int gdnrt_all_gather(gdnrt_context_t *context, gdnrt_group_t group,
                                int ranks, const gdn_tensor_t *input,
                                const gdn_tensor_t *output, int dim,
                                void *workspace) {
  return collective("gdnrt_all_gather", context, group, ranks,
                    {{input, "input", Buffer::Input},
                     {output, "output", Buffer::Output}},
                    workspace, [&](int rank, Plan &plan, std::string &error) {
                      return planAllGather(Shape::of(*input), Shape::of(*output), ranks,
                                           rank, dim, plan, error);
                    });
}

extern "C" size_t gdnrt_reduce_scatter_workspace_bytes(
    const gdn_tensor_t *input, int ranks, int dim) {
  if (!valid(input) || dim < 0 || dim >= input->rank || ranks < 1)
    return 0;
  Shape in = Shape::of(*input), out = in;
  out.dims[dim] /= ranks;
  return workspaceOf([&](Plan &plan, std::string &error) {
    return planReduceScatter(in, out, ranks, 0, dim, input->dtype, plan, error);
  });
}

extern "C" int gdnrt_reduce_scatter(gdnrt_context_t *context,
                                    gdnrt_group_t group, int ranks,
                                    const gdn_tensor_t *input,
                                    const gdn_tensor_t *output, int dim,
                                    void *workspace) {
  return collective(
      "gdnrt_reduce_scatter", context, group, ranks,
      {{input, "input", Buffer::Input}, {output, "output", Buffer::Output}},
      workspace, [&](int rank, Plan &plan, std::string &error) {
        if (!isFloat(input->dtype)) {
          error = "reduce_scatter sums floating-point tensors only";
          return false;
        }
        return planReduceScatter(Shape::of(*input), Shape::of(*output), ranks,
                                 rank, dim, input->dtype, plan, error);
      });
}

extern "C" size_t gdnrt_all_to_all_workspace_bytes(const gdn_tensor_t *input,
                                                   int ranks, int splitDim,
                                                   int concatDim) {
  if (!valid(input) || splitDim < 0 || splitDim >= input->rank ||
      concatDim < 0 || concatDim >= input->rank || ranks < 1)
    return 0;
  Shape in = Shape::of(*input), out = in;
  out.dims[splitDim] /= ranks;
  out.dims[concatDim] *= ranks;
  return workspaceOf([&](Plan &plan, std::string &error) {
    return planAllToAll(in, out, ranks, 0, splitDim, concatDim, plan, error);
  });
}

extern "C" int gdnrt_all_to_all(gdnrt_context_t *context, gdnrt_group_t group,
                                int ranks, const gdn_tensor_t *input,
                                const gdn_tensor_t *output, int splitDim,
                                int concatDim, void *workspace) {
  return collective("gdnrt_all_to_all", context, group, ranks,
                    {{input, "input", Buffer::Input},
                     {output, "output", Buffer::Output}},
                    workspace, [&](int rank, Plan &plan, std::string &error) {
                      return planAllToAll(Shape::of(*input), Shape::of(*output),
                                          ranks, rank, splitDim, concatDim,
                                          plan, error);
                    });
}

extern "C" int gdnrt_halo_exchange(gdnrt_context_t *context,
                                   gdnrt_group_t group, int ranks,
                                   const gdn_tensor_t *input,
                                   const gdn_tensor_t *output) {
  return collective("gdnrt_halo_exchange", context, group, ranks,
                    {{input, "input", Buffer::Input},
                     {output, "halo", Buffer::Output}},
                    nullptr, [&](int rank, Plan &plan, std::string &error) {
                      return planHaloExchange(Shape::of(*input),
                                              Shape::of(*output), ranks, rank,
                                              plan, error);
                    });
}

extern "C" size_t gdnrt_state_exchange_workspace_bytes(
    const gdn_tensor_t *partial, int ranks, gdnrt_chain_t chain) {
  if (!valid(partial) || partial->rank != 3 || ranks < 1)
    return 0;
  Shape s = Shape::of(*partial), m = s;
  m.dims[2] = m.dims[1];
  return workspaceOf([&](Plan &plan, std::string &error) {
    return planStateExchange(m, s, s, ranks, 0, chain == GDNRT_CHAIN_SCAN,
                             partial->dtype, plan, error);
  });
}

/// Why `*chain` is not a state chain, or "" when it is (read as enumValue
/// reads C enums).
static std::string checkChain(const gdnrt_chain_t *chain) {
  const int value = enumValue(chain);
  if (value == GDNRT_CHAIN_ALL_GATHER || value == GDNRT_CHAIN_SCAN)
    return "";
  return "chain " + std::to_string(value) +
         " is neither GDNRT_CHAIN_ALL_GATHER nor GDNRT_CHAIN_SCAN";
}

extern "C" int gdnrt_state_exchange(gdnrt_context_t *context,
                                    gdnrt_group_t group, int ranks,
                                    const gdn_tensor_t *transition,
                                    const gdn_tensor_t *partial,
                                    const gdn_tensor_t *incoming,
                                    gdnrt_chain_t chain, void *workspace) {
  const char *call = "gdnrt_state_exchange";
  if (std::string bad = checkChain(&chain); !bad.empty())
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, bad);
  return collective(
      call, context, group, ranks,
      {{transition, "transition", Buffer::Input},
       {partial, "partial state", Buffer::Input2},
       {incoming, "incoming state", Buffer::Output}},
      workspace, [&](int rank, Plan &plan, std::string &error) {
        if (transition->dtype != partial->dtype ||
            incoming->dtype != partial->dtype) {
          error = "the transition, partial and incoming states must share "
                  "one element type";
          return false;
        }
        return planStateExchange(Shape::of(*transition), Shape::of(*partial),
                                 Shape::of(*incoming), ranks, rank,
                                 chain == GDNRT_CHAIN_SCAN, partial->dtype,
                                 plan, error);
      });
}

extern "C" int gdnrt_local_shard(gdnrt_context_t *context, gdnrt_group_t group,
                                 int ranks, const gdn_tensor_t *input,
                                 const gdn_tensor_t *output, int dim) {
  return collective("gdnrt_local_shard", context, group, ranks,
                    {{input, "input", Buffer::Input},
                     {output, "output", Buffer::Output}},
                    nullptr, [&](int rank, Plan &plan, std::string &error) {
                      return planLocalShard(Shape::of(*input),
                                            Shape::of(*output), ranks, rank,
                                            dim, plan, error);
                    });
}

extern "C" int gdnrt_group_rank(const gdnrt_context_t *context,
                                gdnrt_group_t group, int ranks, int *rank) {
  const char *call = "gdnrt_group_rank";
  if (!rank)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the output pointer is null");
  gdnrt_comm_t *comm = nullptr;
  if (int error = boundComm(const_cast<gdnrt_context_t *>(context), group,
                            ranks, call, &comm))
    return error;
  *rank = comm->rank;
  return succeed();
}

extern "C" size_t gdnrt_all_reduce_workspace_bytes(const gdn_tensor_t *input,
                                                   int ranks) {
  if (!valid(input) || ranks < 1)
    return 0;
  Shape in = Shape::of(*input);
  return workspaceOf([&](Plan &plan, std::string &error) {
    return planAllReduce(in, in, ranks, 0, input->dtype, plan, error);
  });
}

extern "C" int gdnrt_all_reduce(gdnrt_context_t *context, gdnrt_group_t group,
                                int ranks, const gdn_tensor_t *input,
                                const gdn_tensor_t *output, void *workspace) {
  return collective(
      "gdnrt_all_reduce", context, group, ranks,
      {{input, "input", Buffer::Input}, {output, "output", Buffer::Output}},
      workspace, [&](int rank, Plan &plan, std::string &error) {
        if (!isFloat(input->dtype) || output->dtype != input->dtype) {
          error = "all_reduce sums floating-point tensors only, and the "
                  "output has the input's dtype";
          return false;
        }
        return planAllReduce(Shape::of(*input), Shape::of(*output), ranks, rank,
                             input->dtype, plan, error);
      });
}

extern "C" int gdnrt_local_unshard(gdnrt_context_t *context,
                                   gdnrt_group_t group, int ranks,
                                   const gdn_tensor_t *input,
                                   const gdn_tensor_t *output, int dim) {
  return collective(
      "gdnrt_local_unshard", context, group, ranks,
      {{input, "input", Buffer::Input}, {output, "output", Buffer::Output}},
      nullptr, [&](int rank, Plan &plan, std::string &error) {
        return planLocalUnshard(Shape::of(*input), Shape::of(*output), ranks,
                                rank, dim, plan, error);
      });
}

extern "C" int gdnrt_replicated_to_partial(gdnrt_context_t *context,
                                           gdnrt_group_t group, int ranks,
                                           const gdn_tensor_t *input,
                                           const gdn_tensor_t *output) {
  return collective(
      "gdnrt_replicated_to_partial", context, group, ranks,
      {{input, "input", Buffer::Input}, {output, "output", Buffer::Output}},
      nullptr, [&](int rank, Plan &plan, std::string &error) {
        return planReplicatedToPartial(Shape::of(*input), Shape::of(*output),
                                       ranks, rank, plan, error);
      });
}

extern "C" size_t
gdnrt_return_halo_workspace_bytes(const gdn_tensor_t *haloGrad,
                                  const gdn_tensor_t *dest, int ranks) {
  if (!valid(haloGrad) || !valid(dest) || ranks < 1)
    return 0;
  // Rank 0 gets rows back from the most ranks: its workspace is the largest.
  Shape halo = Shape::of(*haloGrad), shard = Shape::of(*dest);
  return workspaceOf([&](Plan &plan, std::string &error) {
    return planReturnHalo(halo, shard, shard, ranks, 0, dest->dtype, plan,
                          error);
  });
}

extern "C" int gdnrt_return_halo(gdnrt_context_t *context, gdnrt_group_t group,
                                 int ranks, const gdn_tensor_t *haloGrad,
                                 const gdn_tensor_t *dest,
                                 const gdn_tensor_t *output, void *workspace) {
  return collective(
      "gdnrt_return_halo", context, group, ranks,
      {{haloGrad, "halo gradient", Buffer::Input},
       {dest, "shard gradient dest", Buffer::Input2},
       {output, "output", Buffer::Output}},
      workspace, [&](int rank, Plan &plan, std::string &error) {
        if (!isFloat(dest->dtype) || haloGrad->dtype != dest->dtype ||
            output->dtype != dest->dtype) {
          error = "the halo gradient, dest and the output must share one "
                  "floating-point dtype (the halo's rows are added to dest)";
          return false;
        }
        return planReturnHalo(Shape::of(*haloGrad), Shape::of(*dest),
                              Shape::of(*output), ranks, rank, dest->dtype,
                              plan, error);
      });
}

extern "C" size_t
gdnrt_reverse_state_exchange_workspace_bytes(const gdn_tensor_t *partial,
                                             int ranks, gdnrt_chain_t chain) {
  if (!valid(partial) || partial->rank != 3 || ranks < 1)
    return 0;
  Shape s = Shape::of(*partial), m = s;
  m.dims[2] = m.dims[1];
  return workspaceOf([&](Plan &plan, std::string &error) {
    return planReverseStateExchange(s, m, s, m, s, ranks, 0,
                                    chain == GDNRT_CHAIN_SCAN, partial->dtype,
                                    plan, error);
  });
}

extern "C" int gdnrt_reverse_state_exchange(
    gdnrt_context_t *context, gdnrt_group_t group, int ranks,
    const gdn_tensor_t *incomingGrad, const gdn_tensor_t *transition,
    const gdn_tensor_t *partial, const gdn_tensor_t *transitionGrad,
    const gdn_tensor_t *partialGrad, gdnrt_chain_t chain, void *workspace) {
  const char *call = "gdnrt_reverse_state_exchange";
  if (std::string bad = checkChain(&chain); !bad.empty())
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, bad);
  return collective(
      call, context, group, ranks,
      {{incomingGrad, "incoming state gradient", Buffer::Input3},
       {transition, "transition", Buffer::Input},
       {partial, "partial state", Buffer::Input2},
       {transitionGrad, "transition gradient", Buffer::Output},
       {partialGrad, "partial state gradient", Buffer::Output2}},
      workspace, [&](int rank, Plan &plan, std::string &error) {
        const gdn_dtype_t dtype = partial->dtype;
        if (incomingGrad->dtype != dtype || transition->dtype != dtype ||
            transitionGrad->dtype != dtype || partialGrad->dtype != dtype) {
          error = "the incoming state gradient, transition, partial state "
                  "and both gradients must share one element type";
          return false;
        }
        return planReverseStateExchange(
            Shape::of(*incomingGrad), Shape::of(*transition),
            Shape::of(*partial), Shape::of(*transitionGrad),
            Shape::of(*partialGrad), ranks, rank, chain == GDNRT_CHAIN_SCAN,
            dtype, plan, error);
      });
}
