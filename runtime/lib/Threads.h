//===- Threads.h - thread ranks of one process: the host side ---*- C++ -*-===//
//
// The threads backend runs P ranks as threads of one process, each with its
// own context and stream. The ranks meet by name in a process-wide registry
// and pass messages through mailboxes, one queue per (sender, receiver,
// channel). This file is the host side, with no CUDA: joining, splitting,
// matching every receive to its send, timeouts and aborts. What a message
// does on the device is a `Stream`'s business (CUDA events and copies in
// ThreadsComm.cpp, host memory in the unit tests), so the protocol is
// tested on the CPU.
//
// One group of messages on rank r (Member::exchange):
//  1. post every send (source, bytes, an event after r's prior work) to its
//     receiver's queue, without blocking;
//  2. for each receive, wait on the host for the matching post, make r's
//     stream wait for the sender's event, and copy;
//  3. record one event after those copies and hand it to every sender r
//     received from;
//  4. for every receiver of r's sends, wait on the host for that event and
//     make r's stream wait for it: r's later work cannot overwrite a source
//     that is still being read.
// Only host threads wait for peers, each for at most the timeout; a stream
// only waits for events already recorded, so no stream can hang on a dead
// peer. A failure anywhere aborts the whole group: every rank's pending and
// later calls fail at once with its reason.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_LIB_THREADS_H
#define GDN_RUNTIME_LIB_THREADS_H

#include "Plan.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gdnrt::threads {

/// The most ranks a threads group has (gdnrt-launch's limit; the sums'
/// ones cover as many).
constexpr int kMaxRanks = 4096;
static_assert(kMaxRanks <= kOnes, "a sum of every rank's piece is one GEMM");

/// What a group asks of a rank's stream. Each returns a gdn_error_t and
/// sets `error` on failure.
class Stream {
public:
  virtual ~Stream() = default;
  /// An event that completes with the stream's work enqueued so far.
  virtual int record(std::shared_ptr<void> &event, std::string &error) = 0;
  /// Makes the stream's later work wait for `event` (null: nothing).
  virtual int wait(const std::shared_ptr<void> &event, std::string &error) = 0;
  /// Enqueues a copy of `bytes` from `from` (any rank's memory) to `into`.
  virtual int copy(void *into, const void *from, size_t bytes,
                   std::string &error) = 0;
};

/// Sends are matched with receives and collectives with collectives, each
/// in order, as NCCL matches them; two queues keep the kinds apart.
enum class Channel { PointToPoint = 0, Collective = 1 };

/// What rank r sends to rank `to` in a group. `what` names the message for
/// errors ("send", "all_gather", ...) and must match the receiver's.
struct Give {
  int to;
  Channel channel;
  const char *what;
  const void *data;
  size_t bytes;
};

/// What rank r receives from rank `from` in a group.
struct Take {
  int from;
  Channel channel;
  const char *what;
  void *into;
  size_t bytes;
};

class World;

/// One rank's membership of a threads group: what a threads communicator
/// holds. Destroying it leaves the group.
class Member {
public:
  Member(std::shared_ptr<World> world, int rank);
  ~Member();
  Member(const Member &) = delete;
  Member &operator=(const Member &) = delete;

  int rank() const { return rank_; }
  int size() const;
  const std::string &name() const;

  /// Runs one group: this rank's sends and receives (steps 1-4 above),
  /// every host wait bounded by `timeoutMs`. Every rank must call it once
  /// per group of a plan, empty groups included. Returns a gdn_error_t:
  /// GDN_ERROR_TIMEOUT for a peer that did not come, GDN_ERROR_NCCL for a
  /// peer whose communicator was destroyed, GDN_ERROR_INVALID_ARGUMENT for
  /// messages that do not match, the stream's code for a device failure,
  /// or, for a call that was waiting when another rank aborted the group,
  /// that rank's code; `error` says which peer and why.
  int exchange(const std::vector<Give> &gives, const std::vector<Take> &takes,
               Stream &stream, int64_t timeoutMs, std::string &error);

  /// Why the group was aborted, or "" while it is not; `code` (if given)
  /// receives the aborting failure's gdn_error_t.
  std::string aborted(int *code = nullptr) const;
  /// Aborts the group (once): every rank's pending and later exchanges fail
  /// with `code` and `reason`.
  void abort(int code, const std::string &reason);

  /// Joins the sub-group `key` (the same on all its ranks, unique per
  /// split) named `name`, of the ranks `members` of this group (their ranks
  /// here, in sub-group order), as sub-group rank `rank`. Waits for all of
  /// them for at most `timeoutMs`; on a timeout this group is aborted.
  int split(const std::string &key, const std::string &name,
            const std::vector<int> &members, int rank, int64_t timeoutMs,
            std::unique_ptr<Member> &child, std::string &error);

  /// Leaves the group: later receives from this rank fail at once. The last
  /// member to leave frees the group's name for a later job.
  void leave();

private:
  std::shared_ptr<World> world;
  int rank_;
  uint64_t groups = 0; ///< exchanges so far; peers must be at the same one
  bool left = false;
};

/// Joins the process-wide group `name` of `size` ranks as `rank`, waiting
/// for all of them for at most `timeoutMs`. A size other than the group's
/// or a rank already taken is refused (GDN_ERROR_INVALID_ARGUMENT) and the
/// others keep waiting; when the first joined rank's timeout passes, every
/// joined rank fails with GDN_ERROR_TIMEOUT naming the ranks that never
/// came. A name is in use until every member of its group has left.
int join(const std::string &name, int rank, int size, int64_t timeoutMs,
         std::unique_ptr<Member> &member, std::string &error);

/// A sum a group leaves to do once its messages have arrived: `count`
/// pieces of `bytes`, `pitch` bytes apart from `pieces`, added in order
/// into `staging` (aligned scratch, so every rank's sum runs the same GEMM
/// algorithm), then copied to `result`.
struct Sum {
  const char *pieces;
  size_t pitch;
  int count;
  size_t bytes;
  gdn_dtype_t dtype;
  char *staging;
  char *result;
};

/// A plan group as threads messages: what this rank gives and takes, and
/// the sums of ReduceScatter and AllReduce, whose pieces are gathered into
/// scratch first (every rank adds all pieces in rank order itself).
struct Lowered {
  std::vector<Give> gives;
  std::vector<Take> takes;
  std::vector<Sum> sums;
};

/// Scratch bytes a group's sums need on a group of `size` ranks.
size_t scratchBytes(const Group &group, int size);

/// Lowers `group` for a group of `size` ranks; `at` resolves this rank's
/// addresses and `scratch` holds at least scratchBytes (256-byte aligned).
Lowered lower(const Group &group, int size,
              const std::function<char *(Address)> &at, char *scratch);

} // namespace gdnrt::threads

#endif // GDN_RUNTIME_LIB_THREADS_H
