//===- ThreadsComm.cpp - threads communicators: the device side -----------===//
//
// A threads communicator is a Member of a group of thread ranks
// (Threads.h) plus what its rank's device needs: the protocol's events and
// copies on the context's stream (cudaMemcpyDefault, so ranks may sit on
// different GPUs of the process), and scratch for the sums. A ReduceScatter
// or AllReduce gathers the pieces it adds into that scratch and sums them
// with one cuBLASLt GEMM of the context's ones (fp32 accumulation, f64 in
// f64); the GEMM writes into aligned scratch, so that every rank runs the
// same algorithm on the same bits and gets the same result.
//
// The scratch belongs to the communicator, not to the caller's workspace:
// the workspace queries do not know the backend, and sizing them for these
// gathers (P times the tensor) would cost every NCCL caller that memory.
// It grows to the largest sum the communicator has run and is freed with it.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"
#include "Gemm.h"
#include "Internal.h"
#include "Threads.h"

#include <chrono>
#include <new>
#include <thread>

namespace gdnrt {

/// A threads communicator's rank.
struct ThreadsRank {
  std::unique_ptr<threads::Member> member;
  int device = 0;
  int splits = 0; ///< gdnrt_comm_split_grid calls so far (the splits' keys)
  char *scratch = nullptr;
  size_t scratchBytes = 0;
  /// Recorded after the last work that used the scratch: a call on
  /// another stream waits for it.
  cudaEvent_t scratchIdle = nullptr;
  ~ThreadsRank();
};

namespace {

/// The protocol's device side on one rank's stream.
class CudaStream : public threads::Stream {
public:
  explicit CudaStream(cudaStream_t stream) : stream(stream) {}

  int record(std::shared_ptr<void> &event, std::string &error) override {
    cudaEvent_t created = nullptr;
    cudaError_t failed =
        cudaEventCreateWithFlags(&created, cudaEventDisableTiming);
    if (!failed)
      failed = cudaEventRecord(created, stream);
    if (failed) {
      if (created)
        cudaEventDestroy(created);
      error = describeCuda("cudaEventRecord", failed);
      return GDN_ERROR_CUDA;
    }
    // Whichever rank drops the last reference destroys it; an event
    // recorded but not yet complete is released when it completes.
    event = std::shared_ptr<void>(created, [](void *recorded) {
      cudaEventDestroy(static_cast<cudaEvent_t>(recorded));
    });
    return GDN_SUCCESS;
  }

  int wait(const std::shared_ptr<void> &event, std::string &error) override {
    if (!event)
      return GDN_SUCCESS;
    if (cudaError_t failed = cudaStreamWaitEvent(
            stream, static_cast<cudaEvent_t>(event.get()), 0)) {
      error = describeCuda("cudaStreamWaitEvent", failed);
      return GDN_ERROR_CUDA;
    }
    return GDN_SUCCESS;
  }

  int copy(void *into, const void *from, size_t bytes,
           std::string &error) override {
    if (bytes == 0 || into == from)
      return GDN_SUCCESS;
    if (cudaError_t failed =
            cudaMemcpyAsync(into, from, bytes, cudaMemcpyDefault, stream)) {
      error = describeCuda("cudaMemcpyAsync between ranks", failed);
      return GDN_ERROR_CUDA;
    }
    return GDN_SUCCESS;
  }

private:
  cudaStream_t stream;
};

gdnrt_comm_t *makeComm(std::unique_ptr<threads::Member> member, int device,
                       int64_t timeoutMs) {
  auto *created = new (std::nothrow) gdnrt_comm;
  if (!created)
    return nullptr;
  created->rank = member->rank();
  created->size = member->size();
  created->timeoutMs = timeoutMs;
  created->threads = std::make_shared<ThreadsRank>();
  created->threads->member = std::move(member);
  created->threads->device = device;
  return created;
}

} // namespace

ThreadsRank::~ThreadsRank() {
  if (member)
    member->leave();
  if (!scratch && !scratchIdle)
    return;
  DeviceGuard guard(device);
  cudaFree(scratch); // waits for the work that still reads it
  if (scratchIdle)
    cudaEventDestroy(scratchIdle);
}

std::string brokenReason(const gdnrt_comm_t *comm) {
  if (!comm->threads) {
    std::lock_guard<std::mutex> guard(comm->lock);
    return comm->broken;
  }
  if (!comm->broken.empty())
    return comm->broken;
  return comm->threads->member->aborted();
}

void abortThreads(gdnrt_comm_t *comm, int code, const std::string &reason) {
  comm->threads->member->abort(code, reason);
}

int bootstrapThreads(gdnrt_context_t *context, const std::string &name,
                     int rank, int size, gdnrt_comm_t **comm) {
  const char *call = "gdnrt_comm_bootstrap";
  std::unique_ptr<threads::Member> member;
  std::string error;
  if (int code =
          threads::join(name, rank, size, context->timeoutMs, member, error))
    return fail(code, call, error);
  *comm = makeComm(std::move(member), context->device, context->timeoutMs);
  if (!*comm)
    return fail(GDN_ERROR_SYSTEM, call, "out of host memory");
  return succeed();
}

int splitThreads(gdnrt_comm_t *world, int spSize, gdnrt_comm_t **sp,
                 gdnrt_comm_t **cp) {
  const char *call = "gdnrt_comm_split_grid";
  ThreadsRank &parent = *world->threads;
  const int index = parent.splits++;
  const int cpSize = world->size / spSize;
  const int spRank = world->rank % spSize, cpRank = world->rank / spSize;
  // SP innermost, as the NCCL split: the SP group of a rank is its row of
  // the grid (world ranks cpRank * S + k), the CP group its column (world
  // ranks k * S + spRank).
  struct Part {
    gdnrt_comm_t **out;
    int color, key;
    const char *name;
    std::vector<int> members;
  } parts[2] = {{sp, cpRank, spRank, "sp", {}}, {cp, spRank, cpRank, "cp", {}}};
  for (int k = 0; k < spSize; ++k)
    parts[0].members.push_back(cpRank * spSize + k);
  for (int k = 0; k < cpSize; ++k)
    parts[1].members.push_back(k * spSize + spRank);
  gdnrt_comm_t *made[2] = {nullptr, nullptr};
  for (int p = 0; p < 2; ++p) {
    Part &part = parts[p];
    const std::string suffix = part.name + std::to_string(part.color);
    std::unique_ptr<threads::Member> child;
    std::string error;
    // Every rank takes part in both splits, as NCCL requires.
    if (int code = parent.member->split(
            std::to_string(index) + "." + suffix,
            parent.member->name() + "/" + suffix +
                (index > 0 ? "." + std::to_string(index) : ""),
            part.members, part.key, world->timeoutMs, child, error)) {
      gdnrt_comm_destroy(made[0]);
      return fail(code, call, error);
    }
    made[p] = makeComm(std::move(child), parent.device, world->timeoutMs);
    if (!made[p]) {
      gdnrt_comm_destroy(made[0]);
      return fail(GDN_ERROR_SYSTEM, call, "out of host memory");
    }
  }
  for (int p = 0; p < 2; ++p) {
    if (parts[p].out)
      *parts[p].out = made[p];
    else
      gdnrt_comm_destroy(made[p]);
  }
  return succeed();
}

int waitThreads(gdnrt_comm_t *comm, gdnrt_context_t *context) {
  const char *call = "gdnrt_comm_wait";
  threads::Member &member = *comm->threads->member;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(comm->timeoutMs);
  const std::string who = "rank " + std::to_string(comm->rank) + " of " +
                          std::to_string(comm->size);
  // The stream never waits for a peer's future work (only for events
  // already recorded), so it finishes; the group is watched for another
  // rank's failure meanwhile.
  while (true) {
    const std::string aborted = member.aborted();
    if (!aborted.empty())
      return fail(GDN_ERROR_NCCL, call,
                  who + ": the threads group \"" + member.name() +
                      "\" was aborted: " + aborted);
    cudaError_t state = cudaStreamQuery(context->stream);
    if (state == cudaSuccess)
      return succeed();
    if (state != cudaErrorNotReady)
      return fail(GDN_ERROR_CUDA, call, describeCuda("cudaStreamQuery", state));
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string reason = who + ": the stream did not finish within " +
                           std::to_string(comm->timeoutMs) +
                           " ms; the threads group \"" + member.name() +
                           "\" was aborted";
      member.abort(GDN_ERROR_TIMEOUT, reason);
      return fail(GDN_ERROR_TIMEOUT, call, reason);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

int communicateThreads(const Group &group, gdnrt_context_t *context,
                       gdnrt_comm_t *comm, const Resolver &at,
                       const std::string &call) {
  ThreadsRank &rank = *comm->threads;
  DeviceGuard guard(context->device);
  cudaStream_t stream = context->stream;
  const size_t need = threads::scratchBytes(group, comm->size);
  if (need > rank.scratchBytes) {
    // Grown once per larger sum: the old scratch is freed after the work
    // that used it.
    if (rank.scratchIdle)
      cudaEventSynchronize(rank.scratchIdle);
    cudaFree(rank.scratch);
    rank.scratch = nullptr;
    rank.scratchBytes = 0;
    if (cudaError_t error = cudaMalloc(&rank.scratch, need))
      return fail(GDN_ERROR_CUDA, call,
                  describeCuda(("cudaMalloc of " + std::to_string(need) +
                                " bytes for the threads backend's sums")
                                   .c_str(),
                               error));
    rank.scratchBytes = need;
  }
  if (need > 0) {
    cudaError_t error = cudaSuccess;
    if (!rank.scratchIdle)
      error =
          cudaEventCreateWithFlags(&rank.scratchIdle, cudaEventDisableTiming);
    else
      error = cudaStreamWaitEvent(stream, rank.scratchIdle, 0);
    if (error)
      return fail(GDN_ERROR_CUDA, call,
                  describeCuda("cudaStreamWaitEvent (the scratch)", error));
  }
  const threads::Lowered lowered = threads::lower(
      group, comm->size, [&](Address address) { return at(address); },
      rank.scratch);
  CudaStream device(stream);
  std::string error;
  if (int code = rank.member->exchange(lowered.gives, lowered.takes, device,
                                       comm->timeoutMs, error))
    return fail(code, call, error);
  for (const threads::Sum &sum : lowered.sums) {
    // staging (elements x 1) = pieces (elements x P, one piece a column)
    // times P ones: every element's P terms in one GEMM, fp32 accumulation.
    const size_t e = elementBytes(sum.dtype);
    ColumnMajorGemm gemm{};
    gemm.dtype = sum.dtype;
    gemm.m = static_cast<int64_t>(sum.bytes / e);
    gemm.n = 1;
    gemm.k = sum.count;
    gemm.batch = 1;
    gemm.a = sum.pieces;
    gemm.lda = static_cast<int64_t>(sum.pitch / e);
    gemm.b = static_cast<const char *>(context->ones) + onesOffset(sum.dtype);
    gemm.ldb = sum.count;
    gemm.c = sum.staging;
    gemm.ldc = gemm.m;
    gemm.d = sum.staging;
    gemm.ldd = gemm.m;
    gemm.beta = 0.0;
    if (int failed = runGemm(context, gemm, call))
      return failed;
    if (sum.bytes > 0)
      if (cudaError_t failed =
              cudaMemcpyAsync(sum.result, sum.staging, sum.bytes,
                              cudaMemcpyDeviceToDevice, stream))
        return fail(GDN_ERROR_CUDA, call,
                    describeCuda("cudaMemcpyAsync of a sum", failed));
  }
  if (need > 0)
    if (cudaError_t failed = cudaEventRecord(rank.scratchIdle, stream))
      return fail(GDN_ERROR_CUDA, call,
                  describeCuda("cudaEventRecord (the scratch)", failed));
  return GDN_SUCCESS;
}

} // namespace gdnrt
