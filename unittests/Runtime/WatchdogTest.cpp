//===- WatchdogTest.cpp - the watchdog's clock and thread, on the CPU -----===//

#include "Watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace gdnrt;
using std::chrono::milliseconds;

namespace {

TEST(StallClock, ExpiresOnlyInsideOneGroupForTheTimeout) {
  StallClock clock;
  const milliseconds timeout(100);
  const auto t0 = StallClock::Clock::now();
  // Outside every group (idle, or busy before the next one): never.
  EXPECT_FALSE(clock.expired(0, t0, timeout));
  EXPECT_FALSE(clock.expired(0, t0 + milliseconds(500), timeout));
  EXPECT_EQ(clock.stalledFor(t0 + milliseconds(500)).count(), 0);
  // Inside group 3, counted from the first look that saw it.
  EXPECT_FALSE(clock.expired(3, t0 + milliseconds(1000), timeout));
  EXPECT_FALSE(clock.expired(3, t0 + milliseconds(1099), timeout));
  EXPECT_EQ(clock.stalledFor(t0 + milliseconds(1099)).count(), 99);
  EXPECT_TRUE(clock.expired(3, t0 + milliseconds(1100), timeout));
  EXPECT_EQ(clock.stalledFor(t0 + milliseconds(1100)).count(), 100);
}

TEST(StallClock, ProgressRestartsTheCount) {
  StallClock clock;
  const milliseconds timeout(100);
  const auto t0 = StallClock::Clock::now();
  // A stream that moves from group to group, each well within the timeout,
  // for much longer than it in all: never expires.
  for (int look = 0; look < 50; ++look)
    EXPECT_FALSE(
        clock.expired(1 + look / 5, t0 + milliseconds(20 * look), timeout))
        << "look " << look;
  // Leaving a group and coming back to a later one starts afresh.
  EXPECT_FALSE(clock.expired(20, t0 + milliseconds(2000), timeout));
  EXPECT_FALSE(clock.expired(0, t0 + milliseconds(2090), timeout));
  EXPECT_FALSE(clock.expired(21, t0 + milliseconds(2150), timeout));
  EXPECT_FALSE(clock.expired(21, t0 + milliseconds(2249), timeout));
  EXPECT_TRUE(clock.expired(21, t0 + milliseconds(2250), timeout));
}

TEST(Watchdog, TickIsATenthOfTheTimeoutWithinBounds) {
  EXPECT_EQ(Watchdog::tickFor(300000).count(), 1000);
  EXPECT_EQ(Watchdog::tickFor(2000).count(), 200);
  EXPECT_EQ(Watchdog::tickFor(5).count(), 1);
  EXPECT_EQ(Watchdog::tickFor(0).count(), 1);
}

TEST(Watchdog, LooksEveryTickUntilTheLookSaysStop) {
  std::atomic<int> looks{0};
  {
    Watchdog watchdog([] { return milliseconds(2); },
                      [&] { return ++looks < 5; });
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
    while (looks < 5 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(1));
    // Stopped: no look after the one that said so.
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(looks.load(), 5);
  }
  EXPECT_EQ(looks.load(), 5);
}

TEST(Watchdog, StopsAtOnceWhenDestroyed) {
  // A tick of an hour: the destructor must wake the thread, not wait it out.
  std::atomic<int> looks{0};
  const auto start = std::chrono::steady_clock::now();
  {
    Watchdog watchdog([] { return milliseconds(3600 * 1000); },
                      [&] {
                        ++looks;
                        return true;
                      });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  EXPECT_EQ(looks.load(), 0);
}

TEST(Watchdog, AbortsAStallWithinTheTimeoutAndATick) {
  // The look a communicator runs, over a fake stream that enters group 7
  // and never leaves it: the abort comes once, after the timeout and within
  // a tick of it.
  const milliseconds timeout(100);
  StallClock clock;
  std::atomic<int> aborts{0};
  std::atomic<long long> abortedAfterMs{-1};
  const auto start = StallClock::Clock::now();
  {
    Watchdog watchdog(
        [&] { return Watchdog::tickFor(timeout.count()); },
        [&] {
          const auto now = StallClock::Clock::now();
          if (!clock.expired(7, now, timeout))
            return true;
          ++aborts;
          abortedAfterMs =
              std::chrono::duration_cast<milliseconds>(now - start).count();
          return false;
        });
    const auto deadline = start + milliseconds(5000);
    while (aborts == 0 && StallClock::Clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_EQ(aborts.load(), 1);
  EXPECT_GE(abortedAfterMs.load(), timeout.count());
  // Generous for a loaded machine: the bound itself is a tick (10 ms).
  EXPECT_LT(abortedAfterMs.load(), timeout.count() + 500);
}

} // namespace
