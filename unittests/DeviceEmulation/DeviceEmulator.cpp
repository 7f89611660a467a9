//===- DeviceEmulator.cpp - run device kernel bodies on host threads ------===//

#include "DeviceEmulator.h"

#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

thread_local dim3 threadIdx, blockIdx;
dim3 gridDim, blockDim;

namespace gdn::device {
/// The dynamic shared memory kernels declare as `extern __shared__ uint4
/// shared[]`; blocks run one at a time, so one array serves them all.
uint4 shared[emulation::kSharedWords];
} // namespace gdn::device

namespace gdn::device::emulation {
namespace {

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "device emulation: %s (block %u,%u thread %u)\n", what,
               blockIdx.x, blockIdx.y, threadIdx.x);
  std::abort();
}

struct Copy {
  uint4 *to;
  uint4 data;
};
/// A thread's copies: those not yet committed, then one entry per group.
struct CopyState {
  std::vector<Copy> open;
  std::deque<std::vector<Copy>> groups;
};
thread_local CopyState copies;

struct Block {
  explicit Block(unsigned threads) : barrier(threads), exchange(threads) {
    for (unsigned first = 0; first < threads; first += 32)
      warps.push_back(std::make_unique<std::barrier<>>(
          std::min<unsigned>(32, threads - first)));
  }
  std::barrier<> barrier;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<float> exchange;
};
Block *block = nullptr;
const char *sourceBegin = nullptr, *sourceEnd = nullptr;

} // namespace

void setCopySource(const void *begin, const void *end) {
  sourceBegin = static_cast<const char *>(begin);
  sourceEnd = static_cast<const char *>(end);
}

void syncThreads() { block->barrier.arrive_and_wait(); }

float shuffleXor(float value, int laneMask) {
  const unsigned self = threadIdx.x, warp = self / 32;
  const unsigned partner = warp * 32 + ((self % 32) ^ laneMask);
  if (partner >= blockDim.x)
    fail("a shuffle reads a lane the block does not have");
  block->exchange[self] = value;
  block->warps[warp]->arrive_and_wait();
  const float result = block->exchange[partner];
  block->warps[warp]->arrive_and_wait(); // nobody overwrites before all read
  return result;
}

void copyAsync16(void *to, const void *from) {
  const char *source = static_cast<const char *>(from);
  if (source < sourceBegin || source + 16 > sourceEnd)
    fail("an asynchronous copy reads outside its source buffer");
  uint4 *word = static_cast<uint4 *>(to);
  const long index = word - shared;
  if (index < 0 || index >= static_cast<long>(kSharedWords) ||
      index % blockDim.x != threadIdx.x)
    fail("an asynchronous copy lands in a word another thread owns");
  Copy copy{word, {}};
  std::memcpy(&copy.data, source, 16);
  const float nan = NAN;
  std::memcpy(&word->x, &nan, 4);
  std::memcpy(&word->y, &nan, 4);
  std::memcpy(&word->z, &nan, 4);
  std::memcpy(&word->w, &nan, 4);
  copies.open.push_back(copy);
}

void commitAsyncCopies() {
  copies.groups.push_back(std::move(copies.open));
  copies.open.clear();
}

void waitAsyncCopies(int pending) {
  while (static_cast<int>(copies.groups.size()) > pending) {
    for (const Copy &copy : copies.groups.front())
      *copy.to = copy.data;
    copies.groups.pop_front();
  }
}

void runGrid(dim3 grid, unsigned threads, const std::function<void()> &body) {
  gridDim = grid;
  blockDim = dim3{threads, 1, 1};
  for (unsigned y = 0; y < grid.y; ++y)
    for (unsigned x = 0; x < grid.x; ++x) {
      std::memset(static_cast<void *>(shared), 0xcd, sizeof(shared));
      Block state(threads);
      block = &state;
      std::vector<std::thread> workers;
      for (unsigned t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
          blockIdx = dim3{x, y, 1};
          threadIdx = dim3{t, 1, 1};
          copies = CopyState();
          body();
          if (!copies.open.empty() || !copies.groups.empty())
            fail("a thread exits with asynchronous copies in flight");
        });
      for (std::thread &worker : workers)
        worker.join();
      block = nullptr;
    }
}

} // namespace gdn::device::emulation
