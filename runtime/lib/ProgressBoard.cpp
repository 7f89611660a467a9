//===- ProgressBoard.cpp - the ranks' collectives entered -----------------===//

#include "ProgressBoard.h"

#include "ProgressService.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <thread>

namespace gdnrt {

// The slots are shared between processes: their atomics must not take a
// lock of the process's own.
static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0),
              "the board's slots need lock-free 8-byte atomics");

std::string ProgressBoard::pathFor(const std::string &rendezvous) {
  if (rendezvous.rfind("file:", 0) != 0 || rendezvous.size() == 5)
    return "";
  return rendezvous.substr(5) + ".progress";
}

std::string ProgressBoard::groupPath(const std::string &worldPath,
                                     const char *part, int color, int split) {
  return worldPath + "." + std::to_string(split) + "." + part +
         std::to_string(color);
}

int ProgressBoard::removeGroupBoards(const std::string &worldPath) {
  const size_t slash = worldPath.rfind('/');
  const std::string folder =
      slash == std::string::npos ? "." : worldPath.substr(0, slash + 1);
  const std::string name =
      slash == std::string::npos ? worldPath : worldPath.substr(slash + 1);
  DIR *dir = ::opendir(folder.c_str());
  if (!dir)
    return 0;
  int removed = 0;
  // Exactly NAME.<digits>.sp<digits> and NAME.<digits>.cp<digits>.
  auto digits = [](const std::string &text, size_t from, size_t to) {
    return to > from && text.find_first_not_of("0123456789", from) >= to;
  };
  while (const dirent *entry = ::readdir(dir)) {
    const std::string file = entry->d_name;
    if (file.size() <= name.size() + 1 || file.compare(0, name.size(), name) != 0 ||
        file[name.size()] != '.')
      continue;
    const std::string rest = file.substr(name.size() + 1);
    const size_t dot = rest.find('.');
    if (dot == std::string::npos || !digits(rest, 0, dot) ||
        (rest.compare(dot, 3, ".sp") != 0 && rest.compare(dot, 3, ".cp") != 0) ||
        !digits(rest, dot + 3, rest.size()))
      continue;
    const std::string path =
        (slash == std::string::npos ? std::string() : folder) + file;
    removed += ::unlink(path.c_str()) == 0;
  }
  ::closedir(dir);
  return removed;
}

std::shared_ptr<ProgressBoard> ProgressBoard::open(const std::string &path,
                                                   int rank, int size,
                                                   std::string &error) {
  if (rank < 0 || size < 1 || rank >= size) {
    error = "rank " + std::to_string(rank) + " of " + std::to_string(size) +
            " is not a rank of the job";
    return nullptr;
  }
  const int fd =
      ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  const off_t bytes = static_cast<off_t>(size) * sizeof(uint64_t);
  struct stat status {};
  void *mapped = MAP_FAILED;
  if (fstat(fd, &status) != 0) {
    error = "cannot read " + path + ": " + std::strerror(errno);
  } else if (!S_ISREG(status.st_mode) ||
             (status.st_size != 0 && status.st_size != bytes)) {
    error = path + " is not the board of a job of " + std::to_string(size) +
            " ranks";
  } else if (int failed = posix_fallocate(fd, 0, bytes)) {
    // Allocated, not sparse: a store to the mapping cannot fault for want
    // of disk. Every rank allocates the same length, keeping what a faster
    // rank wrote.
    error = "cannot allocate " + path + ": " + std::strerror(failed);
  } else {
    mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapped == MAP_FAILED)
      error = "cannot map " + path + ": " + std::strerror(errno);
  }
  ::close(fd); // the mapping keeps the file
  if (mapped == MAP_FAILED)
    return nullptr;
  auto *board = new (std::nothrow)
      ProgressBoard(static_cast<uint64_t *>(mapped), rank, size);
  if (!board) {
    munmap(mapped, bytes);
    error = "out of host memory";
    return nullptr;
  }
  board->enter(0); // joined, no collective entered yet
  return std::shared_ptr<ProgressBoard>(board);
}

std::shared_ptr<ProgressBoard>
ProgressBoard::overNetwork(uint64_t key, int rank, std::vector<Peer> peers,
                           std::string &error) {
  const int size = static_cast<int>(peers.size());
  if (rank < 0 || rank >= size) {
    error = "rank " + std::to_string(rank) + " of " + std::to_string(size) +
            " is not a rank of the job";
    return nullptr;
  }
  // Names resolve now, at set-up: a wait that timed out asks by address,
  // with no DNS on its path.
  for (int peer = 0; peer < size; ++peer) {
    in_addr numeric{};
    if (peers[peer].port == 0 ||
        inet_pton(AF_INET, peers[peer].host.c_str(), &numeric) == 1)
      continue;
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo *resolved = nullptr;
    if (getaddrinfo(peers[peer].host.c_str(), nullptr, &hints, &resolved) !=
            0 ||
        !resolved) {
      error = "cannot resolve the host \"" + peers[peer].host + "\" of rank " +
              std::to_string(peer) + "; pass its IPv4 address";
      return nullptr;
    }
    char text[INET_ADDRSTRLEN] = {0};
    inet_ntop(
        AF_INET,
        &reinterpret_cast<const sockaddr_in *>(resolved->ai_addr)->sin_addr,
        text, sizeof(text));
    freeaddrinfo(resolved);
    peers[peer].host = text;
  }
  ProgressService *service = ProgressService::get(error);
  if (!service)
    return nullptr;
  auto *slots = new (std::nothrow) uint64_t[size]();
  auto *board =
      slots ? new (std::nothrow) ProgressBoard(slots, rank, size) : nullptr;
  if (!board) {
    delete[] slots;
    error = "out of host memory";
    return nullptr;
  }
  board->key = key;
  board->peers = std::move(peers);
  board->enter(0); // joined, no collective entered yet
  service->publish(key, rank, &slots[rank]);
  return std::shared_ptr<ProgressBoard>(board);
}

uint64_t ProgressBoard::keyOf(const char *bytes, size_t count) {
  // FNV-1a: the same on every rank and host, and never 0 in practice.
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < count; ++i)
    hash = (hash ^ static_cast<unsigned char>(bytes[i])) * 1099511628211ull;
  return hash;
}

uint64_t ProgressBoard::groupKey(uint64_t world, const char *part, int color,
                                 int split) {
  const std::string name = std::to_string(world) + "." + std::to_string(split) +
                           "." + part + std::to_string(color);
  return keyOf(name.data(), name.size());
}

std::vector<ProgressBoard::Peer>
ProgressBoard::groupPeers(const std::vector<Peer> &world, int spSize,
                          int worldRank, bool spGroup) {
  const int spRank = worldRank % spSize, cpRank = worldRank / spSize;
  const int members =
      spGroup ? spSize : static_cast<int>(world.size()) / spSize;
  std::vector<Peer> group(members);
  for (int member = 0; member < members; ++member)
    group[member] =
        world[spGroup ? cpRank * spSize + member : member * spSize + spRank];
  return group;
}

bool ProgressBoard::parsePeer(const std::string &text, Peer &peer) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() ||
      text.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
      text.size() - colon - 1 > 5)
    return false;
  const unsigned long port = std::stoul(text.substr(colon + 1));
  if (port > 65535)
    return false;
  peer.host = text.substr(0, colon);
  peer.port = static_cast<uint16_t>(port);
  return true;
}

ProgressBoard::~ProgressBoard() {
  if (!peers.empty()) {
    std::string ignored;
    // The service was started by overNetwork and lives with the process.
    if (ProgressService *service = ProgressService::get(ignored))
      service->withdraw(key, rank);
    delete[] slots;
    return;
  }
  munmap(slots, static_cast<size_t>(size) * sizeof(uint64_t));
}

void ProgressBoard::enter(uint64_t collective) {
  __atomic_store_n(&slots[rank], collective + 1, __ATOMIC_RELEASE);
}

namespace {

/// "rank 3 (its last was collective 6)" for a rank whose slot holds
/// `slot`, or "" when it had entered `collective`.
std::string describeRank(int peer, uint64_t slot, uint64_t collective) {
  if (slot > collective)
    return "";
  std::string text = "rank " + std::to_string(peer);
  if (slot == 0)
    return text + " (posted nothing: not started yet, or without the board)";
  if (slot == 1)
    return text + " (had entered no collective)";
  return text + " (its last was collective " + std::to_string(slot - 1) + ")";
}

void append(std::string &list, const std::string &item) {
  if (!item.empty())
    list += (list.empty() ? "" : ", ") + item;
}

/// How long a rank that timed out waits for each peer's answer.
constexpr int kAskMs = 1000;
/// How many peers it asks at once (a thread each): 1024 ranks that are all
/// gone take four rounds of kAskMs.
constexpr int kAsksInFlight = 256;

} // namespace

std::string ProgressBoard::missing(uint64_t collective) const {
  if (!peers.empty())
    return missingOverNetwork(collective);
  std::string ranks;
  for (int peer = 0; peer < size; ++peer)
    append(ranks,
           describeRank(peer, __atomic_load_n(&slots[peer], __ATOMIC_ACQUIRE),
                        collective));
  return ranks;
}

std::string ProgressBoard::missingOverNetwork(uint64_t collective) const {
  // 0: posted nothing; kNoAnswer: did not answer.
  constexpr uint64_t kNoAnswer = ~0ull;
  std::vector<uint64_t> answers(size, kNoAnswer);
  answers[rank] = __atomic_load_n(&slots[rank], __ATOMIC_ACQUIRE);
  for (int first = 0; first < size; first += kAsksInFlight) {
    std::vector<std::thread> asking;
    for (int peer = first; peer < std::min(size, first + kAsksInFlight);
         ++peer) {
      if (peer == rank)
        continue;
      try {
        asking.emplace_back([this, peer, &answers] {
          uint64_t value = 0;
          if (ProgressService::ask(peers[peer].host, peers[peer].port, key,
                                   peer, kAskMs, value))
            answers[peer] = value;
        });
      } catch (const std::exception &) {
        // No thread to ask with: that peer shows as not answering.
      }
    }
    for (std::thread &thread : asking)
      thread.join();
  }
  std::string ranks;
  for (int peer = 0; peer < size; ++peer) {
    if (answers[peer] == 0) {
      // Its process answered but holds no such board.
      append(ranks, "rank " + std::to_string(peer) +
                        " (its process holds no such board: not started "
                        "yet, or it has left the job)");
    } else if (answers[peer] != kNoAnswer) {
      append(ranks, describeRank(peer, answers[peer], collective));
    } else if (peers[peer].port == 0) {
      append(ranks, "rank " + std::to_string(peer) +
                        " (has no progress service: it could not start one)");
    } else {
      append(ranks, "rank " + std::to_string(peer) + " (did not answer at " +
                        peers[peer].host + ":" +
                        std::to_string(peers[peer].port) +
                        ": its process is gone, or its host is unreachable)");
    }
  }
  return ranks;
}

} // namespace gdnrt
