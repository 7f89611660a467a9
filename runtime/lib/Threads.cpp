//===- Threads.cpp - the registry, mailboxes and aborts of thread ranks ---===//
//
// One mutex and condition variable per group guard its queues; every post,
// reply, departure and abort wakes all its waiters, who recheck what they
// wait for. Host waits are the only waits on peers, each bounded by the
// deadline of its exchange.
//
//===----------------------------------------------------------------------===//

#include "Threads.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>

namespace gdnrt::threads {
namespace {

using Clock = std::chrono::steady_clock;

std::string quoted(const std::string &name) { return "\"" + name + "\""; }

/// A send waiting in its receiver's queue.
struct Post {
  uint64_t group;
  const char *what;
  const void *data;
  size_t bytes;
  std::shared_ptr<void> ready; ///< the sender's stream reached the send
};

/// A receiver's word that it has read its sender's sources.
struct Reply {
  uint64_t group;
  std::shared_ptr<void> done; ///< the receiver's copies are done
};

/// Ranks meeting to form a group: a name of the registry, or a split.
struct Meeting {
  std::shared_ptr<World> world;
  std::vector<bool> arrived;
  int count = 0;
  /// Once set, every rank that arrived fails with it.
  std::string failure;
  int failureCode = GDN_SUCCESS;
};

} // namespace

/// The state the ranks of one group share.
class World {
public:
  World(std::string name, int size)
      : name(std::move(name)), size(size), posts(2 * size * size),
        replies(size * size), departed(size, false) {}

  const std::string name;
  const int size;
  mutable std::mutex mutex;
  std::condition_variable changed;
  /// [(from * size + to) * 2 + channel]
  std::vector<std::deque<Post>> posts;
  /// [from * size + to]: from the receiver `from` to the sender `to`.
  std::vector<std::deque<Reply>> replies;
  std::vector<bool> departed;
  int alive = 0; ///< members that have not left
  int abortCode = GDN_SUCCESS;
  std::string abortReason;
  /// Splits in progress, by key.
  std::map<std::string, std::shared_ptr<Meeting>> splits;
  /// In the registry under `name` until its last member leaves.
  bool registered = false;

  std::deque<Post> &postsOf(int from, int to, Channel channel) {
    return posts[(from * size + to) * 2 + static_cast<int>(channel)];
  }
  std::deque<Reply> &repliesOf(int from, int to) {
    return replies[from * size + to];
  }
  void abort(int code, const std::string &reason) {
    if (abortCode)
      return;
    abortCode = code;
    abortReason = reason;
    changed.notify_all();
  }
};

namespace {

/// The process-wide names of groups being joined or in use.
struct Registry {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::shared_ptr<Meeting>> names;
};

Registry &registry() {
  // Never destroyed: rank threads may outlive static destructors at exit.
  static Registry *instance = new Registry;
  return *instance;
}

std::string listRanks(const std::vector<int> &ranks) {
  std::string text;
  for (int rank : ranks)
    text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

/// Arrives at `meeting` as `rank` of `size` and waits, under `lock`, until
/// every rank has or the first arrived rank's timeout passes. `forget`
/// removes the meeting from where later ranks would find it; `parent`, for
/// splits, is the group whose abort ends the wait (and which a timeout
/// aborts); `names` gives the ranks' numbers in messages, and `who` this
/// rank ("rank 1 of 4", of the parent for splits).
int meet(std::unique_lock<std::mutex> &lock, std::condition_variable &changed,
         const std::shared_ptr<Meeting> &meeting,
         const std::function<void()> &forget, World *parent, int rank, int size,
         int64_t timeoutMs, const std::string &what,
         const std::vector<int> &names, const std::string &who,
         std::unique_ptr<Member> &member, std::string &error) {
  World &world = *meeting->world;
  if (world.size != size) {
    error = who + ": asked for " + std::to_string(size) +
            " ranks but the threads group " + quoted(world.name) + " has " +
            std::to_string(world.size) +
            " (every rank must pass the same size)";
    return GDN_ERROR_INVALID_ARGUMENT;
  }
  if (meeting->arrived[rank]) {
    error = who + ": two threads claim rank " + std::to_string(rank) +
            " of the threads group " + quoted(world.name);
    return GDN_ERROR_INVALID_ARGUMENT;
  }
  meeting->arrived[rank] = true;
  if (++meeting->count == size) {
    // The last to arrive makes the group; no member exists before this.
    std::lock_guard<std::mutex> members(world.mutex);
    world.alive = size;
  }
  changed.notify_all();
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  while (true) {
    if (meeting->count == size) {
      member = std::make_unique<Member>(meeting->world, rank);
      return GDN_SUCCESS;
    }
    if (meeting->failure.empty() && parent && parent->abortCode) {
      meeting->failure = "the threads group " + quoted(parent->name) +
                         " was aborted: " + parent->abortReason;
      meeting->failureCode = parent->abortCode;
      forget();
      changed.notify_all();
    }
    if (meeting->failure.empty() && Clock::now() >= deadline) {
      std::vector<int> missing;
      for (int r = 0; r < size; ++r)
        if (!meeting->arrived[r])
          missing.push_back(names.empty() ? r : names[r]);
      meeting->failure = "only " + std::to_string(meeting->count) + " of " +
                         std::to_string(size) + " ranks " + what + " within " +
                         std::to_string(timeoutMs) + " ms (missing ranks" +
                         (names.empty() ? "" : " of " + quoted(parent->name)) +
                         ": " + listRanks(missing) + ")";
      meeting->failureCode = GDN_ERROR_TIMEOUT;
      forget();
      if (parent)
        parent->abort(GDN_ERROR_TIMEOUT, who + ": " + meeting->failure);
      changed.notify_all();
    }
    if (!meeting->failure.empty()) {
      error = who + ": " + meeting->failure;
      return meeting->failureCode;
    }
    changed.wait_until(lock, deadline);
  }
}

void unregister(World *world) {
  Registry &names = registry();
  std::lock_guard<std::mutex> lock(names.mutex);
  auto found = names.names.find(world->name);
  if (found != names.names.end() && found->second->world.get() == world)
    names.names.erase(found);
}

/// "all_gather data", or "send" for point-to-point messages.
std::string dataOf(const char *what) {
  const std::string kind = what;
  return kind == "send" ? kind : kind + " data";
}

size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

} // namespace

Member::Member(std::shared_ptr<World> world, int rank)
    : world(std::move(world)), rank_(rank) {}

Member::~Member() { leave(); }

int Member::size() const { return world->size; }

const std::string &Member::name() const { return world->name; }

std::string Member::aborted(int *code) const {
  std::lock_guard<std::mutex> lock(world->mutex);
  if (code)
    *code = world->abortCode;
  return world->abortReason;
}

void Member::abort(int code, const std::string &reason) {
  std::lock_guard<std::mutex> lock(world->mutex);
  world->abort(code, reason);
}

void Member::leave() {
  if (left)
    return;
  left = true;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(world->mutex);
    world->departed[rank_] = true;
    --world->alive;
    last = world->alive == 0 && world->registered;
    world->changed.notify_all();
  }
  if (last)
    unregister(world.get());
}

int Member::exchange(const std::vector<Give> &gives,
                     const std::vector<Take> &takes, Stream &stream,
                     int64_t timeoutMs, std::string &error) {
  World &w = *world;
  const uint64_t group = ++groups;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  const std::string group_ = "the threads group " + quoted(w.name);
  // The ranks this one sends to and receives from, and the receivers that
  // have answered.
  std::set<int> receivers, senders, answered;
  bool replied = false;
  int code = GDN_SUCCESS;
  std::unique_lock<std::mutex> lock(w.mutex);
  // A failure aborts the group first, so that peers blocked on this rank
  // wake up; then this rank still answers the senders it read from and
  // waits for the receivers that read its sources (they answer promptly
  // once aborted), so that no copy is left reading a source its owner's
  // stream has moved past.
  auto failed = [&](int failure, const std::string &message) {
    code = failure;
    error = message;
    w.abort(failure, message);
    if (!replied && !senders.empty()) {
      std::shared_ptr<void> done;
      std::string ignored;
      lock.unlock();
      stream.record(done, ignored);
      lock.lock();
      for (int sender : senders)
        w.repliesOf(rank_, sender).push_back({group, done});
      w.changed.notify_all();
    }
    std::vector<int> readers;
    for (int receiver : receivers) {
      if (answered.count(receiver))
        continue;
      size_t mine = 0, untaken = 0;
      for (const Give &give : gives)
        mine += give.to == receiver;
      for (Channel channel : {Channel::PointToPoint, Channel::Collective}) {
        auto &queue = w.postsOf(rank_, receiver, channel);
        auto stale =
            std::remove_if(queue.begin(), queue.end(), [&](const Post &post) {
              return post.group == group;
            });
        untaken += queue.end() - stale;
        queue.erase(stale, queue.end());
      }
      if (untaken < mine)
        readers.push_back(receiver);
    }
    const auto grace = Clock::now() + std::chrono::milliseconds(timeoutMs);
    for (int reader : readers) {
      auto &queue = w.repliesOf(reader, rank_);
      w.changed.wait_until(lock, grace, [&] { return !queue.empty(); });
      if (queue.empty())
        continue;
      std::shared_ptr<void> done = queue.front().done;
      queue.pop_front();
      std::string ignored;
      lock.unlock();
      stream.wait(done, ignored);
      lock.lock();
    }
    return code;
  };

  if (w.abortCode) {
    error = group_ + " was aborted earlier: " + w.abortReason;
    return w.abortCode;
  }
  // 1. Post the sends, after this stream's prior work.
  std::shared_ptr<void> ready;
  if (!gives.empty()) {
    lock.unlock();
    const int recorded = stream.record(ready, error);
    lock.lock();
    if (recorded)
      return failed(recorded, error);
  }
  for (const Give &give : gives) {
    w.postsOf(rank_, give.to, give.channel)
        .push_back({group, give.what, give.data, give.bytes, ready});
    receivers.insert(give.to);
  }
  if (!gives.empty())
    w.changed.notify_all();
  // 2. Receive in order, each after its sender's event.
  for (const Take &take : takes) {
    auto &queue = w.postsOf(take.from, rank_, take.channel);
    const std::string from = "rank " + std::to_string(take.from);
    const std::string message = from + "'s " + dataOf(take.what);
    w.changed.wait_until(lock, deadline, [&] {
      return w.abortCode || !queue.empty() || w.departed[take.from];
    });
    if (w.abortCode)
      return failed(w.abortCode, "while this rank waited for " + message +
                                     ", " + group_ +
                                     " was aborted: " + w.abortReason);
    if (queue.empty() && w.departed[take.from])
      return failed(GDN_ERROR_NCCL,
                    from +
                        " destroyed its communicator while this rank waited "
                        "for its " +
                        dataOf(take.what) + "; " + group_ + " was aborted");
    if (queue.empty())
      return failed(GDN_ERROR_TIMEOUT,
                    "waited " + std::to_string(timeoutMs) + " ms for " +
                        message + " (" + from +
                        " is missing or stuck, or called another "
                        "collective); " +
                        group_ + " was aborted");
    Post post = queue.front();
    if (post.group != group || std::string(post.what) != take.what ||
        post.bytes != take.bytes)
      return failed(GDN_ERROR_INVALID_ARGUMENT,
                    from + "'s next message is " + dataOf(post.what) + " of " +
                        std::to_string(post.bytes) + " bytes from its group " +
                        std::to_string(post.group) +
                        " of messages, but this rank expects " +
                        dataOf(take.what) + " of " +
                        std::to_string(take.bytes) + " bytes in its group " +
                        std::to_string(group) +
                        ": the ranks did not call the same collectives in "
                        "the same order; " +
                        group_ + " was aborted");
    queue.pop_front();
    senders.insert(take.from);
    lock.unlock();
    int copied = stream.wait(post.ready, error);
    if (!copied)
      copied = stream.copy(take.into, post.data, take.bytes, error);
    lock.lock();
    if (copied)
      return failed(copied, error);
  }
  // 3. Tell the senders their sources have been read, once the copies are.
  if (!senders.empty()) {
    std::shared_ptr<void> done;
    lock.unlock();
    const int recorded = stream.record(done, error);
    lock.lock();
    if (recorded)
      return failed(recorded, error);
    for (int sender : senders)
      w.repliesOf(rank_, sender).push_back({group, done});
    replied = true;
    w.changed.notify_all();
  }
  // 4. Wait until every receiver has read this rank's sources.
  for (int receiver : receivers) {
    auto &queue = w.repliesOf(receiver, rank_);
    const std::string message =
        "rank " + std::to_string(receiver) + " to receive this rank's data";
    w.changed.wait_until(lock, deadline, [&] {
      return !queue.empty() || w.abortCode || w.departed[receiver];
    });
    if (queue.empty() && w.abortCode)
      return failed(w.abortCode, "while this rank waited for " + message +
                                     ", " + group_ +
                                     " was aborted: " + w.abortReason);
    if (queue.empty() && w.departed[receiver])
      return failed(GDN_ERROR_NCCL,
                    "rank " + std::to_string(receiver) +
                        " destroyed its communicator before it received this "
                        "rank's data; " +
                        group_ + " was aborted");
    if (queue.empty())
      return failed(GDN_ERROR_TIMEOUT,
                    "waited " + std::to_string(timeoutMs) + " ms for " +
                        message + " (rank " + std::to_string(receiver) +
                        " is missing or stuck, or called another "
                        "collective); " +
                        group_ + " was aborted");
    Reply reply = queue.front();
    queue.pop_front();
    answered.insert(receiver);
    if (reply.group != group)
      return failed(GDN_ERROR_INVALID_ARGUMENT,
                    "rank " + std::to_string(receiver) + " answered group " +
                        std::to_string(reply.group) +
                        " of messages while this rank is at group " +
                        std::to_string(group) +
                        ": the ranks did not call the same collectives in "
                        "the same order; " +
                        group_ + " was aborted");
    lock.unlock();
    const int waited = stream.wait(reply.done, error);
    lock.lock();
    if (waited)
      return failed(waited, error);
  }
  return GDN_SUCCESS;
}

int Member::split(const std::string &key, const std::string &name,
                  const std::vector<int> &members, int rank, int64_t timeoutMs,
                  std::unique_ptr<Member> &child, std::string &error) {
  World &w = *world;
  const int size = static_cast<int>(members.size());
  std::unique_lock<std::mutex> lock(w.mutex);
  if (w.abortCode) {
    error = "the threads group " + quoted(w.name) +
            " was aborted earlier: " + w.abortReason;
    return w.abortCode;
  }
  std::shared_ptr<Meeting> &slot = w.splits[key];
  if (!slot) {
    slot = std::make_shared<Meeting>();
    slot->world = std::make_shared<World>(name, size);
    slot->arrived.assign(size, false);
  }
  const std::shared_ptr<Meeting> meeting = slot;
  auto forget = [&] {
    auto found = w.splits.find(key);
    if (found != w.splits.end() && found->second == meeting)
      w.splits.erase(found);
  };
  const int result = meet(
      lock, w.changed, meeting, forget, &w, rank, size, timeoutMs,
      "reached gdnrt_comm_split_grid for the threads group " + quoted(name),
      members,
      "rank " + std::to_string(rank_) + " of " + std::to_string(w.size), child,
      error);
  if (result == GDN_SUCCESS)
    forget(); // complete: a later split cannot join it
  return result;
}

int join(const std::string &name, int rank, int size, int64_t timeoutMs,
         std::unique_ptr<Member> &member, std::string &error) {
  if (name.empty()) {
    error = "the rendezvous \"threads:\" names no group; write threads:<name>";
    return GDN_ERROR_INVALID_ARGUMENT;
  }
  if (size < 1 || size > kMaxRanks || rank < 0 || rank >= size) {
    error = "rank " + std::to_string(rank) + " of " + std::to_string(size) +
            " is not a rank of a threads group of 1 to " +
            std::to_string(kMaxRanks) + " ranks";
    return GDN_ERROR_INVALID_ARGUMENT;
  }
  if (timeoutMs <= 0) {
    error = "the timeout must be positive";
    return GDN_ERROR_INVALID_ARGUMENT;
  }
  Registry &names = registry();
  std::unique_lock<std::mutex> lock(names.mutex);
  std::shared_ptr<Meeting> &slot = names.names[name];
  if (slot && slot->count == slot->world->size) {
    error = "rank " + std::to_string(rank) + " of " + std::to_string(size) +
            ": the threads group " + quoted(name) + " is in use by a job of " +
            std::to_string(slot->world->size) +
            " ranks; a later job can use the name once every rank of that "
            "one has destroyed its communicator";
    return GDN_ERROR_INVALID_ARGUMENT;
  }
  if (!slot) {
    slot = std::make_shared<Meeting>();
    slot->world = std::make_shared<World>(name, size);
    slot->world->registered = true;
    slot->arrived.assign(size, false);
  }
  const std::shared_ptr<Meeting> meeting = slot;
  auto forget = [&] {
    auto found = names.names.find(name);
    if (found != names.names.end() && found->second == meeting)
      names.names.erase(found);
  };
  return meet(lock, names.changed, meeting, forget, nullptr, rank, size,
              timeoutMs, "joined the threads group " + quoted(name), {},
              "rank " + std::to_string(rank) + " of " + std::to_string(size),
              member, error);
}

size_t scratchBytes(const Group &group, int size) {
  size_t bytes = 0;
  for (const Message &message : group.messages)
    if (message.kind == Message::ReduceScatter ||
        message.kind == Message::AllReduce)
      bytes += (size + 1) * align256(message.bytes);
  return bytes;
}

Lowered lower(const Group &group, int size,
              const std::function<char *(Address)> &at, char *scratch) {
  Lowered lowered;
  size_t used = 0;
  for (const Message &message : group.messages) {
    switch (message.kind) {
    case Message::Send:
      lowered.gives.push_back({message.peer, Channel::PointToPoint, "send",
                               at(message.buffer), message.bytes});
      break;
    case Message::Recv:
      lowered.takes.push_back({message.peer, Channel::PointToPoint, "send",
                               at(message.buffer), message.bytes});
      break;
    case Message::AllGather:
      for (int q = 0; q < size; ++q) {
        lowered.gives.push_back({q, Channel::Collective, "all_gather",
                                 at(message.buffer), message.bytes});
        lowered.takes.push_back({q, Channel::Collective, "all_gather",
                                 at(message.result) + q * message.bytes,
                                 message.bytes});
      }
      break;
    case Message::ReduceScatter:
    case Message::AllReduce: {
      // Every rank gathers the pieces it sums (slice r of every rank's
      // input, or every rank's whole input) and adds them itself, in rank
      // order: the same bits on every rank for an all-reduce.
      const bool all = message.kind == Message::AllReduce;
      const char *what = all ? "all_reduce" : "reduce_scatter";
      const size_t pitch = align256(message.bytes);
      char *pieces = scratch + used;
      char *staging = pieces + size * pitch;
      used += (size + 1) * pitch;
      for (int q = 0; q < size; ++q) {
        lowered.gives.push_back(
            {q, Channel::Collective, what,
             at(message.buffer) + (all ? 0 : q * message.bytes),
             message.bytes});
        lowered.takes.push_back(
            {q, Channel::Collective, what, pieces + q * pitch, message.bytes});
      }
      lowered.sums.push_back({pieces, pitch, size, message.bytes, message.dtype,
                              staging, at(message.result)});
      break;
    }
    }
  }
  return lowered;
}

} // namespace gdnrt::threads
