//===- Comm.cpp - NCCL communicators that fail instead of hanging ---------===//
//
// Communicators gdnrt creates are non-blocking (ncclConfig_t::blocking = 0):
// NCCL calls return ncclInProgress at once and `settle` polls
// ncclCommGetAsyncError until the call completes, fails, or the timeout
// passes, in which case the communicator is aborted. An unreachable peer
// thus becomes an error with a message, never a hang. A "threads:<name>"
// rendezvous makes a communicator of the threads backend instead
// (ThreadsComm.cpp), whose ranks gdnrt_run_ranks can start.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "PendingCollectives.h"
#include "ProgressBoard.h"
#include "ProgressService.h"
#include "Rendezvous.h"
#include "Watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

using namespace gdnrt;

namespace {
/// "rank 1 of 4", how messages about a communicator begin.
std::string whoIs(const gdnrt_comm_t *comm) {
  return "rank " + std::to_string(comm->rank) + " of " +
         std::to_string(comm->size);
}
} // namespace

namespace gdnrt {

ncclComm_t markBroken(gdnrt_comm_t *comm, const std::string &reason) {
  if (!comm->broken.empty())
    return nullptr;
  comm->broken = reason;
  ncclComm_t nccl = comm->nccl;
  comm->nccl = nullptr;
  return nccl;
}

void abortComm(gdnrt_comm_t *comm, const std::string &reason) {
  // A wrapped communicator belongs to the framework; aborting it is still
  // the only way to release kernels stuck waiting for a peer.
  if (ncclComm_t nccl = markBroken(comm, reason))
    ncclCommAbort(nccl);
}

std::string describeCollective(const std::string &call, uint64_t number) {
  return call + " (collective " + std::to_string(number) +
         " of this communicator)";
}

std::string describeStuckIn(const gdnrt_comm_t *comm, const std::string &call,
                            uint64_t number) {
  const std::string in = ", in " + describeCollective(call, number);
  if (comm->size == 1)
    return in;
  if (!comm->board)
    return in + " (NCCL does not say which peer is missing)";
  const std::string missing = comm->board->missing(number);
  return in + (missing.empty()
                   ? ", which every rank had entered (a peer may be stuck in "
                     "it, or have died in it)"
                   : ", which these ranks had not entered: " + missing);
}

int settle(gdnrt_comm_t *comm, ncclResult_t issued, const std::string &call,
           const char *what, const std::function<std::string()> &detail) {
  const std::string who = whoIs(comm);
  auto peers = [&] { return detail ? detail() : std::string(); };
  if (issued != ncclSuccess && issued != ncclInProgress) {
    std::string reason =
        who + ": " + describeNccl(what, issued, comm->nccl) + peers();
    abortComm(comm, reason);
    return fail(GDN_ERROR_NCCL, call, reason);
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(comm->timeoutMs);
  ncclResult_t state = issued;
  while (state == ncclInProgress) {
    if (ncclResult_t queried = ncclCommGetAsyncError(comm->nccl, &state))
      state = queried;
    if (state == ncclInProgress) {
      if (std::chrono::steady_clock::now() >= deadline) {
        const std::string known = peers();
        std::string reason =
            who + ": " + what + " did not complete within " +
            std::to_string(comm->timeoutMs) + " ms" +
            (known.empty() ? " (a peer is missing or stuck)" : known) +
            "; the communicator was aborted";
        abortComm(comm, reason);
        return fail(GDN_ERROR_TIMEOUT, call, reason);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  if (state != ncclSuccess) {
    std::string reason =
        who + ": " + describeNccl(what, state, comm->nccl) + peers();
    abortComm(comm, reason);
    return fail(GDN_ERROR_NCCL, call, reason);
  }
  return GDN_SUCCESS;
}

} // namespace gdnrt

namespace {

/// Where `comm`'s stream stopped, as far as gdnrt can tell (", in CALL
/// (collective N of this communicator)" and the ranks that had not entered
/// it, from PendingCollectives and ProgressBoard), or "" when it cannot
/// tell. The caller holds `comm->lock`.
std::string describeStall(gdnrt_comm_t *comm) {
  const PendingCollectives::Unfinished stuck =
      comm->pending ? comm->pending->firstUnfinished()
                    : PendingCollectives::Unfinished{};
  if (stuck.number == 0)
    return "";
  if (!stuck.reached)
    return ", before " + describeCollective(stuck.call, stuck.number) +
           " (the stream had not reached it: other work on the stream is "
           "stuck)";
  return describeStuckIn(comm, stuck.call, stuck.number);
}

/// One look of `comm`'s watchdog: aborts it, and says why on stderr, once
/// NCCL reports an error or `clock` finds the stream inside one collective
/// group past the timeout. False when there is nothing more to watch.
bool watchOnce(gdnrt_comm_t *comm, StallClock &clock) {
  // Its event queries must not invalidate a CUDA graph another thread is
  // capturing in the global mode (PyTorch's NCCL watchdog had this bug).
  static thread_local const bool relaxed = [] {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    return cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  }();
  (void)relaxed;
  // A call holding the lock is settling an NCCL call against its own
  // timeout: look again at the next tick.
  std::unique_lock<std::mutex> guard(comm->lock, std::try_to_lock);
  if (!guard.owns_lock())
    return true;
  if (!comm->broken.empty() || !comm->nccl)
    return false;
  // Its events and NCCL calls on the communicator's device.
  DeviceGuard device(comm->device);
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm->nccl, &async);
  std::string reason;
  if (async != ncclSuccess && async != ncclInProgress) {
    reason = whoIs(comm) + ": " +
             describeNccl("an NCCL operation", async, comm->nccl) +
             describeStall(comm) +
             " (found by gdnrt's watchdog); the communicator was aborted";
  } else {
    const PendingCollectives::Unfinished stuck =
        comm->pending ? comm->pending->inside() : PendingCollectives::Unfinished{};
    const auto now = StallClock::Clock::now();
    const std::chrono::milliseconds timeout(comm->timeoutMs.load());
    // A waiter times the stream out itself, from when it began to wait.
    const bool waited = comm->waiters.load() > 0;
    if (!clock.expired(waited ? 0 : stuck.number, now, timeout))
      return true;
    reason = whoIs(comm) + ": the stream stayed " +
             std::to_string(clock.stalledFor(now).count()) + " ms" +
             describeStuckIn(comm, stuck.call, stuck.number) +
             ", past the timeout of " + std::to_string(timeout.count()) +
             " ms, with no call waiting for it (found by gdnrt's watchdog); "
             "the communicator was aborted";
  }
  // NCCL's abort frees device memory, which waits for the device: it runs
  // outside the lock, so that a call on this communicator meanwhile fails
  // at once with the reason instead of waiting for the abort.
  ncclComm_t nccl = markBroken(comm, reason);
  guard.unlock();
  // The framework's stream goes on once the abort releases the kernels:
  // say so now, not only at the next call on this communicator.
  std::fprintf(stderr, "gdnrt: %s\n", reason.c_str());
  if (nccl)
    ncclCommAbort(nccl);
  return false;
}

} // namespace

namespace gdnrt {

int watchComm(gdnrt_comm_t *comm, const char *call) {
  if (const char *setting = std::getenv("GDNRT_WATCHDOG"))
    if (std::strcmp(setting, "0") == 0)
      return GDN_SUCCESS;
  try {
    auto clock = std::make_shared<StallClock>();
    comm->watchdog = std::make_shared<Watchdog>(
        [comm] { return Watchdog::tickFor(comm->timeoutMs); },
        [comm, clock] { return watchOnce(comm, *clock); });
  } catch (const std::exception &error) {
    return fail(GDN_ERROR_SYSTEM, call,
                std::string("cannot start the communicator's watchdog thread: ") +
                    error.what() + " (GDNRT_WATCHDOG=0 runs without it)");
  }
  return GDN_SUCCESS;
}

} // namespace gdnrt

namespace {

/// The rank of the thread gdnrt_run_ranks started (-1 on other threads).
thread_local int runRanksRank = -1;

ncclConfig_t nonBlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

int checkRankAndSize(const char *call, int rank, int size) {
  if (size < 1)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "the world size is " + std::to_string(size) +
                    "; it must be at least 1");
  if (rank < 0 || rank >= size)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "rank " + std::to_string(rank) + " is not in 0.." +
                    std::to_string(size - 1));
  return GDN_SUCCESS;
}

} // namespace

extern "C" int gdnrt_unique_id(gdnrt_unique_id_t *id) {
  static_assert(sizeof(ncclUniqueId) == GDNRT_UNIQUE_ID_BYTES,
                "GDNRT_UNIQUE_ID_BYTES must match NCCL_UNIQUE_ID_BYTES");
  if (!id)
    return fail(GDN_ERROR_INVALID_ARGUMENT, "gdnrt_unique_id",
                "the output pointer is null");
  ncclUniqueId nccl;
  if (ncclResult_t result = ncclGetUniqueId(&nccl))
    return fail(GDN_ERROR_NCCL, "gdnrt_unique_id",
                describeNccl("ncclGetUniqueId", result, nullptr));
  std::memcpy(id->bytes, nccl.internal, GDNRT_UNIQUE_ID_BYTES);
  return succeed();
}

extern "C" int gdnrt_comm_init(gdnrt_context_t *context,
                               const gdnrt_unique_id_t *id, int rank, int size,
                               gdnrt_comm_t **comm) {
  const char *call = "gdnrt_comm_init";
  if (!comm)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the output pointer is null");
  *comm = nullptr;
  if (!context || !id)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                !context ? "the context is null" : "the unique id is null");
  if (int error = checkRankAndSize(call, rank, size))
    return error;
  if (cudaError_t error = cudaSetDevice(context->device))
    return fail(GDN_ERROR_CUDA, call, describeCuda("cudaSetDevice", error));
  auto *created = new (std::nothrow) gdnrt_comm;
  if (!created)
    return fail(GDN_ERROR_SYSTEM, call, "out of host memory");
  created->device = context->device;
  created->rank = rank;
  created->size = size;
  created->timeoutMs = context->timeoutMs;
  created->jobKey = ProgressBoard::keyOf(id->bytes, GDNRT_UNIQUE_ID_BYTES);
  ncclUniqueId nccl;
  std::memcpy(nccl.internal, id->bytes, GDNRT_UNIQUE_ID_BYTES);
  ncclConfig_t config = nonBlockingConfig();
  ncclResult_t issued =
      ncclCommInitRankConfig(&created->nccl, size, nccl, rank, &config);
  if (issued != ncclSuccess && issued != ncclInProgress) {
    int error = fail(GDN_ERROR_NCCL, call,
                     "rank " + std::to_string(rank) + " of " +
                         std::to_string(size) + ": " +
                         describeNccl("ncclCommInitRankConfig", issued,
                                      created->nccl));
    if (created->nccl)
      ncclCommAbort(created->nccl);
    delete created;
    return error;
  }
  if (int error = settle(created, issued, call,
                         "ncclCommInitRankConfig (joining the other ranks)")) {
    delete created;
    return error;
  }
  if (int error = watchComm(created, call)) {
    const std::string why = gdnrt_last_error();
    gdnrt_comm_destroy(created);
    return failWith(error, why);
  }
  *comm = created;
  return succeed();
}

extern "C" int gdnrt_comm_wrap(gdnrt_context_t *context, void *ncclComm,
                               gdnrt_comm_t **comm) {
  const char *call = "gdnrt_comm_wrap";
  if (!comm)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the output pointer is null");
  *comm = nullptr;
  if (!context || !ncclComm)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                !context ? "the context is null" : "the ncclComm_t is null");
  auto nccl = static_cast<ncclComm_t>(ncclComm);
  int rank = 0, size = 0;
  if (ncclResult_t result = ncclCommUserRank(nccl, &rank))
    return fail(GDN_ERROR_NCCL, call,
                describeNccl("ncclCommUserRank", result, nccl));
  if (ncclResult_t result = ncclCommCount(nccl, &size))
    return fail(GDN_ERROR_NCCL, call, describeNccl("ncclCommCount", result, nccl));
  auto *created = new (std::nothrow) gdnrt_comm;
  if (!created)
    return fail(GDN_ERROR_SYSTEM, call, "out of host memory");
  created->nccl = nccl;
  created->owned = false;
  created->device = context->device;
  created->rank = rank;
  created->size = size;
  created->timeoutMs = context->timeoutMs;
  *comm = created;
  return succeed();
}

extern "C" int gdnrt_comm_bootstrap(gdnrt_context_t *context,
                                    const char *rendezvous, int rank, int size,
                                    gdnrt_comm_t **comm) {
  const char *call = "gdnrt_comm_bootstrap";
  if (!comm)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the output pointer is null");
  *comm = nullptr;
  if (!context || !rendezvous)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                !context ? "the context is null" : "the rendezvous is null");
  if (int error = checkRankAndSize(call, rank, size))
    return error;
  // Ranks as threads of this process meet in memory; no NCCL id to share.
  if (std::strncmp(rendezvous, "threads:", 8) == 0)
    return bootstrapThreads(context, rendezvous + 8, rank, size, comm);
  gdnrt_unique_id_t id{};
  if (rank == 0)
    if (int error = gdnrt_unique_id(&id))
      return error;
  // A board left by an earlier job at this path would show its counts:
  // rank 0 removes it before it publishes the id, which the others wait
  // for before they open theirs.
  const std::string board = ProgressBoard::pathFor(rendezvous);
  if (rank == 0 && size > 1 && !board.empty()) {
    std::remove(board.c_str());
    ProgressBoard::removeGroupBoards(board);
  }
  // Over tcp the ranks may be on several hosts: each tells rank 0 where its
  // progress service answers (port 0 when it cannot run one).
  std::string message;
  uint16_t progressPort = 0;
  if (size > 1 && std::strncmp(rendezvous, "tcp:", 4) == 0)
    if (ProgressService *service = ProgressService::get(message))
      progressPort = service->port();
  std::vector<ProgressBoard::Peer> peers;
  if (int error = exchangeUniqueId(rendezvous, rank, size, context->timeoutMs,
                                   id.bytes, message, progressPort, &peers))
    return fail(error, call, message);
  if (int error = gdnrt_comm_init(context, &id, rank, size, comm))
    return error;
  // Diagnostics only: without a board a timed-out wait names no peer.
  std::shared_ptr<ProgressBoard> opened;
  if (size > 1 && !board.empty())
    opened = ProgressBoard::open(board, rank, size, message);
  else if (!peers.empty())
    opened = ProgressBoard::overNetwork((*comm)->jobKey, rank, peers, message);
  std::lock_guard<std::mutex> guard((*comm)->lock); // its watchdog runs
  (*comm)->board = std::move(opened);
  if ((*comm)->board && !board.empty())
    (*comm)->boardPath = board;
  return succeed();
}

extern "C" int gdnrt_progress_port(int *port) {
  const char *call = "gdnrt_progress_port";
  if (!port)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the output pointer is null");
  std::string error;
  ProgressService *service = ProgressService::get(error);
  if (!service)
    return fail(GDN_ERROR_SYSTEM, call, error);
  *port = service->port();
  return succeed();
}

extern "C" int gdnrt_comm_set_progress_peers(gdnrt_comm_t *comm,
                                             const char *const *peers,
                                             int count) {
  const char *call = "gdnrt_comm_set_progress_peers";
  if (!comm || (!peers && count > 0))
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                !comm ? "the communicator is null" : "the peers are null");
  if (count != comm->size)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "got " + std::to_string(count) +
                    " peers for a communicator of " +
                    std::to_string(comm->size) +
                    " ranks; pass one \"host:port\" "
                    "a rank, in rank order");
  std::vector<ProgressBoard::Peer> parsed(count);
  for (int rank = 0; rank < count; ++rank)
    if (!peers[rank] || !ProgressBoard::parsePeer(peers[rank], parsed[rank]))
      return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                  "peer " + std::to_string(rank) + " is \"" +
                      (peers[rank] ? peers[rank] : "(null)") +
                      "\", not host:port (what that rank's "
                      "gdnrt_progress_port answers on)");
  if (comm->threads || !comm->jobKey)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                comm->threads ? "a threads communicator needs no board: its "
                                "ranks share the process"
                              : "only a communicator made by gdnrt_comm_init "
                                "takes progress peers (a split one gets its "
                                "world's)");
  if (comm->size == 1)
    return succeed();
  std::lock_guard<std::mutex> guard(comm->lock); // its watchdog runs
  if (comm->board)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "the communicator has a progress board already");
  if (comm->entered > 0)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "the communicator has entered " +
                    std::to_string(comm->entered) +
                    " collectives already; set its peers before the first, so "
                    "that every rank counts from the same start");
  std::string error;
  comm->board = ProgressBoard::overNetwork(comm->jobKey, comm->rank,
                                           std::move(parsed), error);
  if (!comm->board)
    return fail(GDN_ERROR_SYSTEM, call, error);
  return succeed();
}

extern "C" int gdnrt_comm_from_environment(gdnrt_context_t *context,
                                           gdnrt_comm_t **comm) {
  const char *call = "gdnrt_comm_from_environment";
  const char *rank = std::getenv("GDNRT_RANK");
  const char *size = std::getenv("GDNRT_WORLD_SIZE");
  const char *rendezvous = std::getenv("GDNRT_RENDEZVOUS");
  // Under gdnrt-launch --threads the process has no rank; the thread that
  // gdnrt_run_ranks started has.
  const std::string threadRank =
      runRanksRank >= 0 ? std::to_string(runRanksRank) : "";
  if (!rank && !threadRank.empty())
    rank = threadRank.c_str();
  if (!rank && rendezvous && std::strncmp(rendezvous, "threads:", 8) == 0)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "GDNRT_RANK is not set and this thread is not a rank that "
                "gdnrt_run_ranks started: under gdnrt-launch --threads the "
                "ranks are threads of one process; call "
                "gdnrt_comm_from_environment from the rank_main that "
                "gdnrt_run_ranks runs");
  if (!rank || !size || !rendezvous)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                std::string(!rank ? "GDNRT_RANK" : !size ? "GDNRT_WORLD_SIZE"
                                                         : "GDNRT_RENDEZVOUS") +
                    " is not set; start the ranks with gdnrt-launch, or set "
                    "GDNRT_RANK, GDNRT_WORLD_SIZE and GDNRT_RENDEZVOUS");
  char *end = nullptr;
  long parsedRank = std::strtol(rank, &end, 10);
  bool rankOk = *rank && !*end;
  long parsedSize = std::strtol(size, &end, 10);
  if (!rankOk || !*size || *end)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                std::string("GDNRT_RANK=\"") + rank + "\" or GDNRT_WORLD_SIZE=\"" +
                    size + "\" is not an integer");
  if (const char *timeout = std::getenv("GDNRT_TIMEOUT_MS"))
    if (int error = gdnrt_context_set_timeout(context, std::atoll(timeout)))
      return error;
  return gdnrt_comm_bootstrap(context, rendezvous, static_cast<int>(parsedRank),
                              static_cast<int>(parsedSize), comm);
}

extern "C" int gdnrt_comm_split_grid(gdnrt_comm_t *world, int spSize,
                                     gdnrt_comm_t **sp, gdnrt_comm_t **cp) {
  const char *call = "gdnrt_comm_split_grid";
  if (sp)
    *sp = nullptr;
  if (cp)
    *cp = nullptr;
  if (!world)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the world communicator is null");
  if (std::string broken = brokenReason(world); !broken.empty())
    return fail(GDN_ERROR_NCCL, call,
                "the world communicator was aborted: " + broken);
  if (spSize < 1 || world->size % spSize != 0)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "an SP group of " + std::to_string(spSize) +
                    " ranks does not divide the world of " +
                    std::to_string(world->size) +
                    "; the grid is S x P with S * P = world size");
  if (world->threads)
    return splitThreads(world, spSize, sp, cp);
  // The world's watchdog looks at it from its own thread.
  std::lock_guard<std::mutex> worldGuard(world->lock);
  if (!world->broken.empty())
    return fail(GDN_ERROR_NCCL, call,
                "the world communicator was aborted: " + world->broken);
  const int spRank = world->rank % spSize, cpRank = world->rank / spSize;
  // SP innermost: the SP group of a rank is its row of the grid (same CP
  // position), the CP group its column (same SP position).
  struct Part {
    gdnrt_comm_t **out;
    int color, key, size;
    const char *name, *board;
  } parts[2] = {{sp, cpRank, spRank, spSize, "SP", "sp"},
                {cp, spRank, cpRank, world->size / spSize, "CP", "cp"}};
  // This split's number names its groups' boards: a second split of the
  // world must not find the first one's counts.
  const int split = world->splits++;
  // A failure leaves the caller no half of the grid.
  auto failed = [&](int error) {
    const std::string why = gdnrt_last_error();
    for (gdnrt_comm_t **out : {sp, cp})
      if (out && *out) {
        gdnrt_comm_destroy(*out);
        *out = nullptr;
      }
    return failWith(error, why);
  };
  for (Part &part : parts) {
    // Every rank takes part in both splits (NCCL requires it), even when
    // the caller does not want one of the results.
    auto *created = new (std::nothrow) gdnrt_comm;
    if (!created)
      return failed(fail(GDN_ERROR_SYSTEM, call, "out of host memory"));
    ncclConfig_t config = nonBlockingConfig();
    ncclResult_t issued = ncclCommSplit(world->nccl, part.color, part.key,
                                        &created->nccl, &config);
    created->device = world->device;
    created->rank = part.key;
    created->size = part.size;
    created->timeoutMs = world->timeoutMs.load();
    // The split completes through the world communicator.
    if (int error = settle(world, issued, call,
                           (std::string("ncclCommSplit (") + part.name +
                            " group)").c_str())) {
      delete created;
      return failed(error);
    }
    // The child is non-blocking too and may still be joining even when the
    // split returned ncclSuccess; NCCL refuses the next split on the parent
    // until it has.
    if (created->nccl)
      if (int error = settle(created, ncclInProgress, call,
                             (std::string("ncclCommSplit (") + part.name +
                              " group, joining)").c_str())) {
        delete created;
        return failed(error);
      }
    if (int error = settle(world, ncclInProgress, call,
                           "ncclCommSplit (the parent, after the split)")) {
      const std::string why = gdnrt_last_error();
      gdnrt_comm_destroy(created);
      return failed(failWith(error, why));
    }
    if (!part.out) {
      gdnrt_comm_destroy(created);
      continue;
    }
    // Diagnostics only, as the world's: a group of one needs none.
    std::string ignored;
    if (!world->boardPath.empty() && part.size > 1) {
      created->board = ProgressBoard::open(
          ProgressBoard::groupPath(world->boardPath, part.board, part.color, split),
          part.key, part.size, ignored);
    } else if (world->board && !world->board->networkPeers().empty() &&
               part.size > 1) {
      // The group's ranks' services are their world ranks'.
      created->board = ProgressBoard::overNetwork(
          ProgressBoard::groupKey(world->board->networkKey(), part.board,
                                  part.color, split),
          part.key,
          ProgressBoard::groupPeers(world->board->networkPeers(), spSize,
                                    world->rank, &part == &parts[0]),
          ignored);
    }
    if (int error = watchComm(created, call)) {
      const std::string why = gdnrt_last_error();
      gdnrt_comm_destroy(created);
      return failed(failWith(error, why));
    }
    *part.out = created;
  }
  return succeed();
}

extern "C" int gdnrt_comm_rank(const gdnrt_comm_t *comm) {
  return comm ? comm->rank : -1;
}

extern "C" int gdnrt_comm_size(const gdnrt_comm_t *comm) {
  return comm ? comm->size : -1;
}

extern "C" uint64_t gdnrt_comm_bytes_sent(const gdnrt_comm_t *comm) {
  return comm ? comm->bytesSent : 0;
}

extern "C" void *gdnrt_comm_nccl(const gdnrt_comm_t *comm) {
  if (!comm)
    return nullptr;
  std::lock_guard<std::mutex> guard(comm->lock);
  return comm->nccl;
}

extern "C" int gdnrt_comm_wait(gdnrt_comm_t *comm, gdnrt_context_t *context) {
  const char *call = "gdnrt_comm_wait";
  if (!comm || !context)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                !comm ? "the communicator is null" : "the context is null");
  if (comm->threads) {
    if (!comm->broken.empty())
      return fail(GDN_ERROR_NCCL, call,
                  "the communicator was aborted: " + comm->broken);
    return waitThreads(comm, context);
  }
  // While this call waits, the watchdog leaves the timing to it.
  struct Waiting {
    std::atomic<int> &count;
    explicit Waiting(std::atomic<int> &count) : count(count) { ++count; }
    ~Waiting() { --count; }
  } waiting(comm->waiters);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(comm->timeoutMs);
  const std::string who = whoIs(comm);
  while (true) {
    // Locked one look at a time: the watchdog may abort the communicator
    // between two.
    std::unique_lock<std::mutex> guard(comm->lock);
    if (!comm->broken.empty())
      return fail(GDN_ERROR_NCCL, call,
                  "the communicator was aborted: " + comm->broken);
    cudaError_t state = cudaStreamQuery(context->stream);
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm->nccl, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      std::string reason =
          who + ": " + describeNccl("an NCCL operation", async, comm->nccl) +
          describeStall(comm);
      abortComm(comm, reason);
      return fail(GDN_ERROR_NCCL, call, reason);
    }
    if (state == cudaSuccess) {
      if (comm->pending)
        comm->pending->clear();
      return succeed();
    }
    if (state != cudaErrorNotReady)
      return fail(GDN_ERROR_CUDA, call, describeCuda("cudaStreamQuery", state));
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string stall = describeStall(comm);
      std::string reason =
          who + ": the stream did not finish within " +
          std::to_string(comm->timeoutMs) + " ms" +
          (stall.empty() ? " (a peer is missing or stuck; NCCL does not say "
                           "which)"
                         : stall) +
          "; the communicator was aborted";
      abortComm(comm, reason);
      return fail(GDN_ERROR_TIMEOUT, call, reason);
    }
    guard.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

extern "C" int gdnrt_comm_destroy(gdnrt_comm_t *comm) {
  if (!comm)
    return succeed();
  if (comm->threads) {
    // Leaves the group (a peer still waiting for this rank fails at once)
    // and frees the scratch.
    delete comm;
    return succeed();
  }
  // Stops the watchdog first: it must not look at what goes next.
  comm->watchdog.reset();
  ncclResult_t result = ncclSuccess;
  if (comm->owned && comm->nccl) {
    // ncclCommDestroy may wait for peers; a broken one was aborted already.
    result = ncclCommFinalize(comm->nccl);
    if (result == ncclSuccess || result == ncclInProgress)
      result = settle(comm, result, "gdnrt_comm_destroy", "ncclCommFinalize")
                   ? ncclInternalError
                   : ncclSuccess;
    if (comm->nccl)
      ncclCommDestroy(comm->nccl);
  }
  delete comm;
  if (result != ncclSuccess)
    return GDN_ERROR_NCCL; // settle recorded the message
  return succeed();
}

extern "C" int gdnrt_run_ranks(int (*rankMain)(int rank, void *user),
                               void *user) {
  const char *call = "gdnrt_run_ranks";
  if (!rankMain)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "rank_main is null");
  if (runRanksRank >= 0)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "rank " + std::to_string(runRanksRank) +
                    " called it again from inside its rank_main");
  const char *rank = std::getenv("GDNRT_RANK");
  const char *size = std::getenv("GDNRT_WORLD_SIZE");
  const char *rendezvous = std::getenv("GDNRT_RENDEZVOUS");
  char *end = nullptr;
  if (rank) {
    // One of gdnrt-launch's processes: this process is the rank.
    const long parsed = std::strtol(rank, &end, 10);
    if (!*rank || *end || parsed < 0)
      return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                  std::string("GDNRT_RANK=\"") + rank + "\" is not a rank");
    return rankMain(static_cast<int>(parsed), user);
  }
  if (!size || !rendezvous || std::strncmp(rendezvous, "threads:", 8) != 0)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "neither GDNRT_RANK nor GDNRT_WORLD_SIZE with a threads: "
                "GDNRT_RENDEZVOUS is set; start the program with gdnrt-launch "
                "-n P (P processes) or gdnrt-launch -n P --threads (P threads "
                "of one process)");
  const long ranks = std::strtol(size, &end, 10);
  if (!*size || *end || ranks < 1 || ranks > 4096)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                std::string("GDNRT_WORLD_SIZE=\"") + size +
                    "\" is not a rank count in 1..4096");
  // Under gdnrt-launch --threads: one thread per rank. The first rank to
  // return nonzero (in time) is the result, once every rank has returned.
  std::mutex mutex;
  int result = 0, failedRank = -1;
  std::string failedError;
  auto runRank = [&](int r) {
    runRanksRank = r;
    int returned = 0;
    try {
      returned = rankMain(r, user);
    } catch (...) {
      returned = GDN_ERROR_SYSTEM;
    }
    runRanksRank = -1;
    if (returned == 0)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    if (failedRank < 0) {
      result = returned;
      failedRank = r;
      failedError = gdnrt_last_error();
    }
  };
  std::vector<std::thread> threads;
  try {
    for (long r = 0; r < ranks; ++r)
      threads.emplace_back(runRank, static_cast<int>(r));
  } catch (const std::system_error &error) {
    // The ranks already started wait for the missing ones and time out.
    for (std::thread &thread : threads)
      thread.join();
    return fail(GDN_ERROR_SYSTEM, call,
                "could not start thread " + std::to_string(threads.size()) +
                    " of " + std::to_string(ranks) + ": " + error.what());
  }
  for (std::thread &thread : threads)
    thread.join();
  if (failedRank < 0)
    return succeed();
  return fail(
      result, call,
      "rank " + std::to_string(failedRank) + " of " + std::to_string(ranks) +
          " returned " + std::to_string(result) + " first" +
          (failedError.empty() ? " (its last gdnrt call succeeded)"
                               : "; its last gdnrt error: " + failedError));
}
