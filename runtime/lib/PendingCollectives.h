//===- PendingCollectives.h - which collective an NCCL wait is stuck in ---===//
//
// gdnrt's NCCL collectives are only enqueued: a layer's entry point returns
// before they run, and a missing or dead peer shows later, when
// gdnrt_comm_wait finds the stream still busy at its timeout. NCCL does not
// say which collective the ranks are stuck in, nor which peer is missing.
// The first it can say here: an event recorded on the stream after each
// collective group, and at the timeout the first collective whose event has
// not fired is the one the stream stopped in. (The peer it waits for comes
// from the peers themselves, outside NCCL: ProgressBoard.h.)
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_LIB_PENDINGCOLLECTIVES_H
#define GDN_RUNTIME_LIB_PENDINGCOLLECTIVES_H

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace gdnrt {

/// The collectives one communicator enqueued on a stream of `device` that
/// may not have run yet, oldest first.
class PendingCollectives {
public:
  explicit PendingCollectives(int device) : device(device) {}
  ~PendingCollectives();
  PendingCollectives(const PendingCollectives &) = delete;
  PendingCollectives &operator=(const PendingCollectives &) = delete;

  /// Notes that `call`, the communicator's collective number `number`, was
  /// just enqueued on `stream`: forgets the collectives already done, then
  /// records an event behind this one. Diagnostics only: when no event can
  /// be made (or more than kLimit are pending) the collective goes unnamed,
  /// never failed.
  void record(const std::string &call, cudaStream_t stream, uint64_t number);

  /// A collective the stream has not finished: its call and number (0:
  /// none).
  struct Unfinished {
    std::string call;
    uint64_t number = 0;
  };
  /// The oldest collective whose event has not fired.
  Unfinished firstUnfinished();

  /// Every recorded collective has run (the stream was found idle).
  void clear();

  /// The most collectives remembered at once.
  static constexpr size_t kLimit = 256;

private:
  struct Entry {
    cudaEvent_t event;
    std::string call;
    uint64_t number;
  };
  void retire(Entry &entry);

  int device;
  std::deque<Entry> entries;
  std::vector<cudaEvent_t> spare; ///< events to record again
};

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_PENDINGCOLLECTIVES_H
