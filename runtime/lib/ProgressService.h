//===- ProgressService.h - a process's collective counts, asked over TCP -===//
//
// Ranks on several hosts share no folder for a progress board file
// (ProgressBoard.h), and posting every collective over the network would
// put a system call on the hot path. Instead each process answers
// questions: one thread per process listens on a TCP port and, asked for a
// board's key and a rank, answers the count that rank posted there (a
// plain store in memory, as in the file). Only a rank whose wait has timed out
// asks, so the hot path stays a store. A process that does not answer is gone,
// or its host is unreachable; one that answers 0 never opened that board. Pure
// host code, tested on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_LIB_PROGRESSSERVICE_H
#define GDN_RUNTIME_LIB_PROGRESSSERVICE_H

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace gdnrt {

class ProgressService {
public:
  /// The process's service, started on first use (on the first free port
  /// of the 64 from GDNRT_PROGRESS_PORT when set, one for each of a host's
  /// ranks, else on a port the system picks); nullptr with `error` set when
  /// it cannot listen. It lives until the process ends; a forked child
  /// starts its own.
  static ProgressService *get(std::string &error);

  /// The TCP port it answers on.
  uint16_t port() const { return listeningPort; }

  /// Answers questions about `rank` of board `key` with the value at
  /// `slot` (read atomically) until withdraw(key, rank).
  void publish(uint64_t key, int rank, const uint64_t *slot);
  void withdraw(uint64_t key, int rank);

  /// Asks the service at `host`:`port` for `rank` of board `key`: its value
  /// (0 when it holds no such board and rank) into `value`, or false when
  /// it did not answer within `timeoutMs`.
  static bool ask(const std::string &host, uint16_t port, uint64_t key,
                  int rank, int timeoutMs, uint64_t &value);

  ProgressService(const ProgressService &) = delete;
  ProgressService &operator=(const ProgressService &) = delete;

private:
  ProgressService(int listener, uint16_t port)
      : listener(listener), listeningPort(port) {}
  void serve();
  uint64_t valueOf(uint64_t key, int rank);

  int listener;
  uint16_t listeningPort;
  int owner = 0;   // the process whose thread serves it
  std::mutex lock; // guards slots, and the reads through them
  // A process may hold several ranks of one job (one a GPU).
  std::map<std::pair<uint64_t, int>, const uint64_t *> slots;
};

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_PROGRESSSERVICE_H
