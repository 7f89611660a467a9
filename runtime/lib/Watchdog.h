//===- Watchdog.h - abort a collective stuck on a peer, with no waiter ----===//
//
// gdnrt's NCCL collectives are only enqueued, and nothing waits for them
// unless the host calls gdnrt_comm_wait (or a generated gdn_<f>_check). A
// framework that never does (gdn_torch enqueues on PyTorch's stream and
// returns) would see a peer that died in a collective as a stream stuck
// for ever. So each communicator gdnrt creates has a watchdog: a thread of
// its own that looks at the communicator every tick and aborts it once the
// stream has been inside one collective group for longer than the
// timeout, or NCCL reports an error. The abort releases the stuck kernels;
// every later call on the communicator fails with the reason, which the
// watchdog also prints.
//
// Only time spent *inside* a group counts: a stream that has not reached
// its next collective is busy with other work (a long GEMM, or another
// communicator's collective, which that one's watchdog watches), and is
// never a reason to abort.
//
// Pure host code: what a look sees and what an abort does are the
// communicator's (Comm.cpp), so the clock and the thread are tested on the
// CPU.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_LIB_WATCHDOG_H
#define GDN_RUNTIME_LIB_WATCHDOG_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace gdnrt {

/// Decides, look by look, when the stream has stayed inside one collective
/// group for the timeout.
class StallClock {
public:
  using Clock = std::chrono::steady_clock;

  /// `inside`: the group (its number, from 1) the stream was inside at
  /// `now`, or 0 when it was inside none. True once one group has been
  /// seen inside for at least `timeout` (the communicator's at this look:
  /// it may change), counted from the first look that saw it.
  bool expired(uint64_t inside, Clock::time_point now,
               std::chrono::milliseconds timeout);

  /// How long the current group has been seen inside (zero when none).
  std::chrono::milliseconds stalledFor(Clock::time_point now) const;

private:
  uint64_t watched = 0;
  Clock::time_point since{};
};

/// A thread that calls `look` every `tick()` until `look` returns false or
/// the watchdog is destroyed (which wakes it at once and joins it).
class Watchdog {
public:
  Watchdog(std::function<std::chrono::milliseconds()> tick,
           std::function<bool()> look);
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  /// The tick for a communicator timeout: a tenth of it, within 1 ms to
  /// 1 s, so an abort comes within 1.1 timeouts and an idle communicator
  /// costs at most a thousand wake-ups a second.
  static std::chrono::milliseconds tickFor(int64_t timeoutMs);

private:
  void run();

  std::function<std::chrono::milliseconds()> tick;
  std::function<bool()> look;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
};

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_WATCHDOG_H
