//===- Internal.h - gdnrt's objects and error reporting ----------*- C++ -*-===//
//
// The structs behind the opaque handles of gdnrt.h, and the one way errors
// are reported: `fail(code, call, message)` records "call: message" as this
// thread's last error and returns the code, so every public function ends
// in `return fail(...)` or `return GDN_SUCCESS`.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_LIB_INTERNAL_H
#define GDN_RUNTIME_LIB_INTERNAL_H

#include "gdn/runtime/gdnrt.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

namespace gdnrt {
struct ThreadsRank;
class PendingCollectives;
class ProgressBoard;
class Watchdog;
} // namespace gdnrt

struct gdnrt_comm {
  ncclComm_t nccl = nullptr;
  bool owned = true;       ///< false when wrapped around the host's comm
  int device = 0;          ///< the CUDA device of its context at creation
  int rank = 0;
  int size = 1;
  /// Atomic: gdnrt_context_set_timeout may change it while the watchdog
  /// reads it.
  std::atomic<int64_t> timeoutMs{GDNRT_DEFAULT_TIMEOUT_MS};
  /// Set once the communicator is aborted: why, for every later call.
  std::string broken;
  /// Bytes of this rank's data the collectives so far delivered to other
  /// ranks (bytesSentByGroup, Plan.h); gdnrt_comm_bytes_sent reads it.
  uint64_t bytesSent = 0;
  /// A communicator of the threads backend ("threads:<name>"): this rank's
  /// membership of the group its thread ranks share, and its scratch
  /// (ThreadsComm.cpp). Null for NCCL communicators.
  std::shared_ptr<gdnrt::ThreadsRank> threads;
  /// An NCCL communicator's collectives that may not have run yet
  /// (PendingCollectives.h): a timed-out wait names the one it is stuck in.
  /// Made by the first collective.
  std::shared_ptr<gdnrt::PendingCollectives> pending;
  /// Collective groups this communicator has entered (numbered from 1, the
  /// same numbers on every rank).
  uint64_t entered = 0;
  /// Where the ranks post `entered` (ProgressBoard.h): a communicator made
  /// through a file rendezvous has one, so a timed-out wait names the ranks
  /// that never entered the collective it is stuck in.
  std::shared_ptr<gdnrt::ProgressBoard> board;
  /// The board's file (a world's: the SP and CP groups split from it put
  /// theirs beside it, ProgressBoard::groupPath), or "". A board kept over
  /// the network has none; its groups' are keyed by groupKey.
  std::string boardPath;
  /// A key for this job, the same on every rank: the hash of the NCCL id
  /// it was made from (ProgressBoard::keyOf); 0 for a split or wrapped one.
  uint64_t jobKey = 0;
  /// Calls in gdnrt_comm_wait: while there is one, it times the stream out
  /// itself and the watchdog leaves it alone.
  std::atomic<int> waiters{0};
  /// Splits of this communicator so far (names the groups' boards).
  int splits = 0;
  /// Held by every use of an NCCL communicator's `nccl`, `broken`,
  /// `pending` and `board`: its watchdog works from a thread of its own.
  mutable std::mutex lock;
  /// Aborts the communicator when its stream stays inside a collective past
  /// the timeout with nobody waiting (Watchdog.h); gdnrt-created NCCL
  /// communicators only. Last, so that it stops before the rest goes.
  std::shared_ptr<gdnrt::Watchdog> watchdog;
};

namespace gdnrt {
/// Makes `device` current for a scope and restores the caller's.
struct DeviceGuard {
  int previous = -1;
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous) != cudaSuccess || previous == device)
      previous = -1;
    else
      cudaSetDevice(device);
  }
  ~DeviceGuard() {
    if (previous >= 0)
      cudaSetDevice(previous);
  }
};

/// A cuBLASLt algorithm chosen for one GEMM problem.
using GemmKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t>;
} // namespace gdnrt

struct gdnrt_context {
  int device = 0;
  cudaStream_t stream = nullptr;
  int64_t timeoutMs = GDNRT_DEFAULT_TIMEOUT_MS;
  cublasLtHandle_t lt = nullptr;
  void *ltWorkspace = nullptr;
  size_t ltWorkspaceBytes = 0;
  /// The constant ones plans address as Buffer::Ones (Plan.h, onesOffset).
  void *ones = nullptr;
  gdnrt_comm_t *groups[GDNRT_NUM_GROUPS] = {nullptr, nullptr};
  /// Heuristic results per (dtype and transposes, m, n, k, batch): the
  /// search runs once.
  std::map<gdnrt::GemmKey, cublasLtMatmulAlgo_t> algorithms;
};

namespace gdnrt {

/// Records "call: message" as the last error and returns `code`.
int fail(int code, const std::string &call, const std::string &message);
/// Clears the last error and returns GDN_SUCCESS.
int succeed();
/// Records `recorded` (a message gdnrt_last_error returned) as the last
/// error again and returns `code`: for a failure whose clean-up calls
/// succeed().
int failWith(int code, const std::string &recorded);

/// "cudaMemcpy2DAsync failed: invalid argument (cudaErrorInvalidValue)".
std::string describeCuda(const char *what, cudaError_t error);
std::string describeNccl(const char *what, ncclResult_t result,
                         ncclComm_t comm);
std::string describeCublas(const char *what, cublasStatus_t status);

/// "rank 1 of 4 of the cp group" for messages.
std::string describeRank(const gdnrt_comm_t *comm, gdnrt_group_t group);
const char *groupName(gdnrt_group_t group);

/// Waits until a non-blocking communicator has finished its last call
/// (ncclInProgress) or its timeout passes; aborts it on error or timeout.
/// Returns GDN_SUCCESS or fails with a message naming `call`, to which
/// `detail` (when given) adds what gdnrt knows of the peers at that moment.
int settle(gdnrt_comm_t *comm, ncclResult_t issued, const std::string &call,
           const char *what,
           const std::function<std::string()> &detail = nullptr);

/// "CALL (collective N of this communicator)": a collective group of a
/// communicator, by the numbers every rank gives its groups alike.
std::string describeCollective(const std::string &call, uint64_t number);

/// ", in " that collective and what the progress board (ProgressBoard.h)
/// says of `comm`'s peers there: ", which these ranks had not entered: ..."
/// or another clause saying what is known (nothing more for one rank).
std::string describeStuckIn(const gdnrt_comm_t *comm, const std::string &call,
                            uint64_t number);

/// Remembers `reason` as why `comm` broke (the first reason only) and
/// takes its NCCL communicator from it: the handle, which the caller must
/// abort, or null when `comm` was broken already or has none. The caller
/// holds `comm->lock` (or no other thread can see `comm` yet); once the
/// handle is taken, no other call reaches it, so it may be aborted after
/// the lock is released.
ncclComm_t markBroken(gdnrt_comm_t *comm, const std::string &reason);

/// Aborts `comm` (once) and remembers `reason`. The caller holds
/// `comm->lock` (or no other thread can see `comm` yet).
void abortComm(gdnrt_comm_t *comm, const std::string &reason);

/// Starts `comm`'s watchdog (Watchdog.h) unless GDNRT_WATCHDOG=0; fails
/// (GDN_ERROR_SYSTEM, naming `call`) when its thread cannot start.
int watchComm(gdnrt_comm_t *comm, const char *call);

/// Why `comm` can no longer be used, or "" while it can: its own abort, or
/// for a threads communicator its group's (any rank's failure).
std::string brokenReason(const gdnrt_comm_t *comm);

/// The threads backend (ThreadsComm.cpp): gdnrt_comm_bootstrap's
/// "threads:<name>", gdnrt_comm_split_grid and gdnrt_comm_wait on a threads
/// communicator, and the abort of its group after a failed call.
int bootstrapThreads(gdnrt_context_t *context, const std::string &name,
                     int rank, int size, gdnrt_comm_t **comm);
int splitThreads(gdnrt_comm_t *world, int spSize, gdnrt_comm_t **sp,
                 gdnrt_comm_t **cp);
int waitThreads(gdnrt_comm_t *comm, gdnrt_context_t *context);
void abortThreads(gdnrt_comm_t *comm, int code, const std::string &reason);

/// The int a C caller passed as `*value`, an enum of the C API (group,
/// chain, dtype). A C caller may pass any int, and loading an enum outside
/// its values is undefined in C++, so arguments are checked through this:
/// their bits read as an int, through their address.
template <typename Enum> int enumValue(const Enum *value) {
  static_assert(sizeof(Enum) == sizeof(int), "a C enum is an int");
  int bits;
  std::memcpy(&bits, value, sizeof(bits));
  return bits;
}

/// Checks a tensor argument: non-null, a valid rank and dtype, non-negative
/// sizes, and (when `requireData`) data unless empty. On failure sets
/// `error`.
bool checkTensorArgument(const gdn_tensor_t *tensor, const char *name,
                         std::string &error, bool requireData = true);

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_INTERNAL_H
