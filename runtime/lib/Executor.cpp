//===- Executor.cpp - plans as CUDA copies, NCCL groups and GEMMs ---------===//

#include "Executor.h"

#include "Gemm.h"

namespace gdnrt {
namespace {

ncclDataType_t ncclType(gdn_dtype_t dtype) {
  switch (dtype) {
  case GDN_BF16:
    return ncclBfloat16;
  case GDN_F16:
    return ncclFloat16;
  case GDN_F32:
    return ncclFloat32;
  case GDN_F64:
    return ncclFloat64;
  case GDN_I32:
    return ncclInt32;
  case GDN_I64:
    return ncclInt64;
  }
  return ncclUint8;
}

struct Resolver {
  const Buffers &buffers;
  char *operator()(Address address) const {
    char *base = nullptr;
    switch (address.buffer) {
    case Buffer::Input:
      base = static_cast<char *>(const_cast<void *>(buffers.input));
      break;
    case Buffer::Input2:
      base = static_cast<char *>(const_cast<void *>(buffers.input2));
      break;
    case Buffer::Output:
      base = static_cast<char *>(buffers.output);
      break;
    case Buffer::Workspace:
      base = static_cast<char *>(buffers.workspace);
      break;
    }
    return base + address.offset;
  }
};

int communicate(const Group &group, gdnrt_context_t *context,
                gdnrt_comm_t *comm, const Resolver &at,
                const std::string &call) {
  if (group.messages.empty())
    return GDN_SUCCESS;
  cudaStream_t stream = context->stream;
  ncclResult_t result = ncclGroupStart();
  std::string failed; // the call that failed, for the message
  for (const Message &message : group.messages) {
    if (result != ncclSuccess && result != ncclInProgress)
      break;
    switch (message.kind) {
    case Message::Send:
      result = ncclSend(at(message.buffer), message.bytes, ncclUint8,
                        message.peer, comm->nccl, stream);
      failed = "ncclSend to rank " + std::to_string(message.peer);
      break;
    case Message::Recv:
      result = ncclRecv(at(message.buffer), message.bytes, ncclUint8,
                        message.peer, comm->nccl, stream);
      failed = "ncclRecv from rank " + std::to_string(message.peer);
      break;
    case Message::AllGather:
      result = ncclAllGather(at(message.buffer), at(message.result),
                             message.bytes, ncclUint8, comm->nccl, stream);
      failed = "ncclAllGather";
      break;
    case Message::ReduceScatter:
      result = ncclReduceScatter(
          at(message.buffer), at(message.result),
          message.bytes / elementBytes(message.dtype), ncclType(message.dtype),
          ncclSum, comm->nccl, stream);
      failed = "ncclReduceScatter";
      break;
    }
  }
  ncclResult_t ended = ncclGroupEnd();
  if (result == ncclSuccess || result == ncclInProgress) {
    result = ended;
    failed = "ncclGroupEnd";
  }
  return settle(comm, result, call, failed.c_str());
}

} // namespace

int execute(const Plan &plan, gdnrt_context_t *context, gdnrt_comm_t *comm,
            const Buffers &buffers, const std::string &call) {
  const Resolver at{buffers};
  cudaStream_t stream = context->stream;
  for (const Step &step : plan.steps) {
    switch (step.kind) {
    case Step::Copy: {
      const Copy2D &copy = step.copy;
      cudaError_t error =
          copy.height == 1
              ? cudaMemcpyAsync(at(copy.dst), at(copy.src), copy.width,
                                cudaMemcpyDeviceToDevice, stream)
              : cudaMemcpy2DAsync(at(copy.dst), copy.dstPitch, at(copy.src),
                                  copy.srcPitch, copy.width, copy.height,
                                  cudaMemcpyDeviceToDevice, stream);
      if (error)
        return fail(GDN_ERROR_CUDA, call,
                    describeCuda("cudaMemcpy2DAsync", error));
      break;
    }
    case Step::Zero:
      if (cudaError_t error = cudaMemsetAsync(at(step.zero.dst), 0,
                                              step.zero.bytes, stream))
        return fail(GDN_ERROR_CUDA, call,
                    describeCuda("cudaMemsetAsync", error));
      break;
    case Step::Communicate:
      if (int error = communicate(step.group, context, comm, at, call))
        return error;
      break;
    case Step::Gemm: {
      // Row-major D = A * B (+ C) is column-major D^T = B^T * A^T: swap the
      // operands and read every matrix with its row length as leading dim.
      const BatchedGemm &g = step.gemm;
      ColumnMajorGemm gemm{g.dtype,      false,     g.n,       g.m,
                           g.k,          g.batch,   at(g.b),   g.n,
                           static_cast<int64_t>(g.strideB),    at(g.a),
                           g.k,          static_cast<int64_t>(g.strideA),
                           at(g.c),      g.n,       static_cast<int64_t>(g.strideC),
                           at(g.d),      g.n,       static_cast<int64_t>(g.strideD),
                           g.accumulate ? 1.0 : 0.0};
      if (int error = runGemm(context, gemm, call))
        return error;
      break;
    }
    }
  }
  return GDN_SUCCESS;
}

} // namespace gdnrt
