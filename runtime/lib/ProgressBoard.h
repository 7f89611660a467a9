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
// network file system. Across hosts (a tcp: rendezvous, or a framework's
// process groups) the board is kept over the network instead: each rank
// stores its count in its own memory, its process's ProgressService
// answers for it, and a rank that timed out asks the others
// (overNetwork). Pure host code, tested on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_LIB_PROGRESSBOARD_H
#define GDN_RUNTIME_LIB_PROGRESSBOARD_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gdnrt {

class ProgressBoard {
public:
  /// The board of a job of `size` ranks at `path` (made by the first rank
  /// to open it, the same regular file for every rank), for `rank`; nullptr
  /// with `error` set when it cannot be made or mapped.
  static std::shared_ptr<ProgressBoard> open(const std::string &path, int rank,
                                             int size, std::string &error);

  /// Where a rank's process answers for its boards: its host as the other
  /// ranks reach it, and its ProgressService's port (0: it has none).
  struct Peer {
    std::string host;
    uint16_t port = 0;
  };
  /// The board `key` of a job of `size` ranks kept over the network, for
  /// `rank`: `peers[r]` is where rank r's process answers (this rank's own
  /// entry is not used). Starts this process's ProgressService; nullptr
  /// with `error` set when it cannot.
  static std::shared_ptr<ProgressBoard> overNetwork(uint64_t key, int rank,
                                                    std::vector<Peer> peers,
                                                    std::string &error);
  /// A job's board key from bytes every rank holds (NCCL's unique id).
  static uint64_t keyOf(const char *bytes, size_t count);
  /// The key of the SP or CP group of color `color` made by split number
  /// `split` of the job whose board key is `world`.
  static uint64_t groupKey(uint64_t world, const char *part, int color,
                           int split);
  /// The peers of the SP group (`spGroup`) or the CP group of world rank
  /// `worldRank` in an S x P grid of `spSize` SP ranks, SP innermost (world
  /// rank = cp_rank * spSize + sp_rank), in group-rank order, from the
  /// world's `world`.
  static std::vector<Peer> groupPeers(const std::vector<Peer> &world,
                                      int spSize, int worldRank, bool spGroup);
  /// "host:port" into a Peer; false when it is not of that form.
  static bool parsePeer(const std::string &text, Peer &peer);

  /// Kept over the network: its key and its ranks' addresses (empty for a
  /// board in a file).
  uint64_t networkKey() const { return key; }
  const std::vector<Peer> &networkPeers() const { return peers; }
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
  std::string missingOverNetwork(uint64_t collective) const;

  uint64_t *slots;
  int rank, size;
  // Over the network: only slots[rank] is this process's to post; the
  // others are asked when a wait times out.
  uint64_t key = 0;
  std::vector<Peer> peers;
};

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_PROGRESSBOARD_H
