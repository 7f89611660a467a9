//===- ProgressBoard.h - the ranks' collectives entered -------------------===//
//
// NCCL does not say which peer a stuck collective waits for. The ranks of a
// job started through a file rendezvous (gdnrt-launch's default) share a
// folder on one host, so each posts there how many collectives it has
// entered: one 8-byte slot a rank in a file every rank maps, written with a
// plain store before each collective group is enqueued (no system call on
// the hot path). When a wait stops in collective n, the ranks whose slots
// show fewer than n never entered it: a rank that started late, stopped
// early, or died. A slot holds the count plus one, so that a rank that
// never opened the board (not started yet, or without it) shows as such.
// One host only: a mapped file is not coherent between the clients of a
// network file system. Pure host code, tested on the CPU.
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
  /// The board of a job of `size` ranks at `path` (made by the first rank
  /// to open it, the same regular file for every rank), for `rank`; nullptr
  /// with `error` set when it cannot be made or mapped.
  static std::shared_ptr<ProgressBoard> open(const std::string &path, int rank,
                                             int size, std::string &error);
  /// The board's file next to a rendezvous `file:<path>`, or "" for any
  /// other rendezvous (they share no folder).
  static std::string pathFor(const std::string &rendezvous);

  /// The board of the SP or CP group (`part` "sp" or "cp") of color
  /// `color` made by split number `split` (0, 1, ...) of the job whose
  /// board is `worldPath`: a file beside it, so that those groups'
  /// timeouts name their missing ranks too.
  static std::string groupPath(const std::string &worldPath, const char *part,
                               int color, int split);
  /// Removes the group boards an earlier job left beside `worldPath`
  /// (rank 0 does, before it publishes the job's id, as for the job's own
  /// board). Returns how many it removed.
  static int removeGroupBoards(const std::string &worldPath);

  ~ProgressBoard();
  ProgressBoard(const ProgressBoard &) = delete;
  ProgressBoard &operator=(const ProgressBoard &) = delete;

  /// This rank has entered its collective number `collective` (1, 2, ...).
  void enter(uint64_t collective);

  /// The ranks that had not entered collective `collective`, as "rank 3
  /// (its last was collective 6), rank 5 (posted nothing: ...)", or "" when
  /// every rank had.
  std::string missing(uint64_t collective) const;

private:
  ProgressBoard(uint64_t *slots, int rank, int size)
      : slots(slots), rank(rank), size(size) {}

  uint64_t *slots;
  int rank, size;
};

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_PROGRESSBOARD_H
