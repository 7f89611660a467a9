//===- PendingCollectives.h - which collective an NCCL wait is stuck in ---===//
//
// gdnrt's NCCL collectives are only enqueued: a layer's entry point returns
// before they run, and a missing or dead peer shows later, when
// gdnrt_comm_wait finds the stream still busy at its timeout. NCCL does not
// say which collective the ranks are stuck in, nor which peer is missing.
// The first it can say here: events on the stream before and after each
// collective group. At the timeout the oldest group whose end has not
// fired is where the stream stopped: in it, if its beginning has fired,
// else before it (in other work on the same stream, such as another
// communicator's collective). The peer comes from the peers themselves,
// outside NCCL (ProgressBoard.h).
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

/// The collective groups one communicator enqueued on a stream of `device`
/// that may not have run yet, oldest first. Diagnostics only: an event that
/// cannot be made, a stream being captured into a CUDA graph (where events
/// must not be queried), or more than kLimit groups pending leave groups
/// unnamed, never failed; after such a gap nothing is named until the
/// stream is found idle (clear).
class PendingCollectives {
public:
  explicit PendingCollectives(int device) : device(device) {}
  ~PendingCollectives();
  PendingCollectives(const PendingCollectives &) = delete;
  PendingCollectives &operator=(const PendingCollectives &) = delete;

  /// Before a group is enqueued on `stream`: forgets the groups already
  /// done, then records the event that fires when the stream reaches it.
  void begin(cudaStream_t stream);
  /// After the group `call`, the communicator's collective number
  /// `number`, was enqueued on `stream`: records the event behind it.
  void end(const std::string &call, cudaStream_t stream, uint64_t number);

  /// Where the stream stopped among the recorded groups.
  struct Unfinished {
    std::string call;
    uint64_t number = 0;  ///< 0: every recorded group ran, or unknown
    bool reached = false; ///< the stream had begun the group
  };
  Unfinished firstUnfinished();

  /// The oldest recorded group the stream is inside (begun, not ended),
  /// or number 0: what the watchdog asks. Unlike firstUnfinished it holds
  /// through a gap, which nobody may ever clear when nobody waits: a
  /// recorded group whose beginning fired and whose end did not is where
  /// the stream is, whatever went unrecorded after it.
  Unfinished inside();

  /// Every recorded group has run (the stream was found idle).
  void clear();

  /// The most groups remembered at once.
  static constexpr size_t kLimit = 256;

private:
  struct Entry {
    cudaEvent_t begun, ended;
    std::string call;
    uint64_t number;
  };
  cudaEvent_t takeEvent();
  void giveBack(cudaEvent_t event);
  /// Whether `event` has fired; an error (a captured event) counts as
  /// unknown and is cleared.
  enum class Fired { Yes, No, Unknown };
  static Fired query(cudaEvent_t event);

  int device;
  cudaEvent_t staged = nullptr; ///< begin's event, until end
  bool gap = false;             ///< a group went unrecorded since clear
  std::deque<Entry> entries;
  std::vector<cudaEvent_t> spare; ///< events to record again
};

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_PENDINGCOLLECTIVES_H
