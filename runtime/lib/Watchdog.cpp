//===- Watchdog.cpp - abort a collective stuck on a peer, with no waiter --===//

#include "Watchdog.h"

#include <algorithm>

namespace gdnrt {

bool StallClock::expired(uint64_t inside, Clock::time_point now,
                         std::chrono::milliseconds timeout) {
  if (inside == 0) {
    watched = 0;
    return false;
  }
  if (inside != watched) {
    watched = inside;
    since = now;
  }
  return now - since >= timeout;
}

std::chrono::milliseconds StallClock::stalledFor(Clock::time_point now) const {
  if (watched == 0)
    return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
}

std::chrono::milliseconds Watchdog::tickFor(int64_t timeoutMs) {
  return std::chrono::milliseconds(
      std::clamp<int64_t>(timeoutMs / 10, 1, 1000));
}

Watchdog::Watchdog(std::function<std::chrono::milliseconds()> tick,
                   std::function<bool()> look)
    : tick(std::move(tick)), look(std::move(look)) {
  thread = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  if (thread.joinable())
    thread.join();
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex);
  while (true) {
    if (wake.wait_for(lock, tick(), [this] { return stopping; }))
      return;
    // The look takes the communicator's lock: never under this one, which
    // the destructor needs to stop the thread.
    lock.unlock();
    const bool goOn = look();
    lock.lock();
    if (!goOn)
      return;
  }
}

} // namespace gdnrt
