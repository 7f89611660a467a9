//===- Executor.cpp - plans as CUDA copies, NCCL groups and GEMMs ---------===//

#include "Executor.h"

#include "Gemm.h"
#include "PendingCollectives.h"
#include "ProgressBoard.h"

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

int communicate(const Group &group, gdnrt_context_t *context,
                gdnrt_comm_t *comm, const Resolver &at,
                const std::string &call) {
  // Every rank runs the same groups, some of them empty on some ranks:
  // each is numbered, empty or not, so that the numbers agree across ranks.
  const uint64_t number = ++comm->entered;
  if (comm->board)
    comm->board->enter(number);
  if (group.messages.empty())
    return GDN_SUCCESS;
  // The watchdog (Watchdog.h) may abort the communicator between calls.
  std::lock_guard<std::mutex> guard(comm->lock);
  if (!comm->broken.empty())
    return fail(GDN_ERROR_NCCL, call,
                "the communicator was aborted: " + comm->broken);
  cudaStream_t stream = context->stream;
  if (!comm->pending)
    comm->pending = std::make_shared<PendingCollectives>(context->device);
  comm->pending->begin(stream);
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
    case Message::AllReduce:
      // NCCL's all-reduce hands every rank the same result (each chunk is
      // reduced once, then copied), which the op promises.
      result =
          ncclAllReduce(at(message.buffer), at(message.result),
                        message.bytes / elementBytes(message.dtype),
                        ncclType(message.dtype), ncclSum, comm->nccl, stream);
      failed = "ncclAllReduce";
      break;
    }
  }
  ncclResult_t ended = ncclGroupEnd();
  if (result == ncclSuccess || result == ncclInProgress) {
    result = ended;
    failed = "ncclGroupEnd";
  }
  // A peer missing at the communicator's first use shows here: NCCL
  // connects the ranks inside ncclGroupEnd.
  if (int error = settle(comm, result, call, failed.c_str(),
                         [&] { return describeStuckIn(comm, call, number); }))
    return error;
  comm->pending->end(call, stream, number);
  return GDN_SUCCESS;
}

/// Row-major D = op(A) op(B) (+ C) is column-major D^T = op(B)^T op(A)^T:
/// swap the operands; a row-major matrix is its column-major transpose with
/// its row length as leading dimension, so an operand transposed in
/// row-major terms is one transposed in column-major terms too.
ColumnMajorGemm columnMajor(const BatchedGemm &g, const Resolver &at) {
  ColumnMajorGemm gemm{};
  gemm.dtype = g.dtype;
  gemm.m = g.n;
  gemm.n = g.m;
  gemm.k = g.k;
  gemm.batch = g.batch;
  gemm.transposeA = g.transposeB; // B^T stored n x k is column-major k x n
  gemm.a = at(g.b);
  gemm.lda = g.transposeB ? g.k : g.n;
  gemm.strideA = static_cast<int64_t>(g.strideB);
  gemm.transposeB = g.transposeA; // A^T stored k x m is column-major m x k
  gemm.b = at(g.a);
  gemm.ldb = g.transposeA ? g.m : g.k;
  gemm.strideB = static_cast<int64_t>(g.strideA);
  gemm.c = at(g.c);
  gemm.ldc = g.n;
  gemm.strideC = static_cast<int64_t>(g.strideC);
  gemm.d = at(g.d);
  gemm.ldd = g.n;
  gemm.strideD = static_cast<int64_t>(g.strideD);
  gemm.beta = g.accumulate ? 1.0 : 0.0;
  return gemm;
}

int runSteps(const Plan &plan, gdnrt_context_t *context, gdnrt_comm_t *comm,
             const Resolver &at, const std::string &call) {
  cudaStream_t stream = context->stream;
  for (const Step &step : plan.steps) {
    switch (step.kind) {
    case Step::Copy: {
      const Copy2D &copy = step.copy;
      // An output that is its input (in place) needs no copy; cudaMemcpy
      // does not take overlapping buffers.
      if (at(copy.dst) == at(copy.src) && copy.dstPitch == copy.srcPitch)
        break;
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
      if (int error =
              comm->threads
                  ? communicateThreads(step.group, context, comm, at, call)
                  : communicate(step.group, context, comm, at, call))
        return error;
      comm->bytesSent += bytesSentByGroup(step.group, comm->rank, comm->size);
      break;
    case Step::Gemm:
      if (int error = runGemm(context, columnMajor(step.gemm, at), call))
        return error;
      break;
    }
  }
  return GDN_SUCCESS;
}

} // namespace

char *Resolver::operator()(Address address) const {
  const void *base = nullptr;
  switch (address.buffer) {
  case Buffer::Input:
    base = buffers.input;
    break;
  case Buffer::Input2:
    base = buffers.input2;
    break;
  case Buffer::Input3:
    base = buffers.input3;
    break;
  case Buffer::Output:
    base = buffers.output;
    break;
  case Buffer::Output2:
    base = buffers.output2;
    break;
  case Buffer::Workspace:
    base = buffers.workspace;
    break;
  case Buffer::Ones:
    base = ones;
    break;
  }
  return static_cast<char *>(const_cast<void *>(base)) + address.offset;
}

int execute(const Plan &plan, gdnrt_context_t *context, gdnrt_comm_t *comm,
            const Buffers &buffers, const std::string &call) {
  const Resolver at{buffers, context->ones};
  const int error = runSteps(plan, context, comm, at, call);
  if (error && comm && comm->threads)
    abortThreads(comm, error, gdnrt_last_error());
  return error;
}

} // namespace gdnrt
