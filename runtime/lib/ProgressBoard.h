//===- ProgressBoard.h - the ranks' collectives entered -------------------===//
//
// NCCL does not say which peer a stuck collective waits for. The ranks of a
// job started through a file rendezvous (gdnrt-launch's default) share a
// folder, so each posts there how many collectives it has entered: one
// 8-byte slot a rank in a file every rank maps, written with a plain store
// before each collective is enqueued (no system call on the hot path).
// When a wait times out in collective n, the ranks whose slots show fewer
// than n never entered it: a rank that started late, stopped early, or
// died. Pure host code, tested on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_LIB_PROGRESSBOARD_H
#define GDN_RUNTIME_LIB_PROGRESSBOARD_H

#include <cstdint>
#include <memory>
#include <string>

namespace gdnrt {

class ProgressBoard {
public:
  /// The board of a job of `size` ranks at `path` (created by the first
  /// rank to open it, the same file for every rank), for `rank`; nullptr
  /// with `error` set when the file cannot be made or mapped.
  static std::shared_ptr<ProgressBoard> open(const std::string &path, int rank,
                                             int size, std::string &error);
  /// The board's file next to a rendezvous `file:<path>`, or "" for any
  /// other rendezvous (they share no folder).
  static std::string pathFor(const std::string &rendezvous);

  ~ProgressBoard();
  ProgressBoard(const ProgressBoard &) = delete;
  ProgressBoard &operator=(const ProgressBoard &) = delete;

  /// This rank has entered its collective number `collective` (1, 2, ...).
  void enter(uint64_t collective);

  /// The ranks that had not entered collective `collective`, as "rank 3
  /// (had entered 6), rank 5 (had entered 0)", or "" when every rank had.
  std::string missing(uint64_t collective) const;

private:
  ProgressBoard(int fd, uint64_t *slots, int rank, int size)
      : fd(fd), slots(slots), rank(rank), size(size) {}

  int fd;
  uint64_t *slots;
  int rank, size;
};

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_PROGRESSBOARD_H
