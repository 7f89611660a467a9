//===- ProgressBoard.cpp - the ranks' collectives entered -----------------===//

#include "ProgressBoard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gdnrt {

std::string ProgressBoard::pathFor(const std::string &rendezvous) {
  if (rendezvous.rfind("file:", 0) != 0 || rendezvous.size() == 5)
    return "";
  return rendezvous.substr(5) + ".progress";
}

std::shared_ptr<ProgressBoard> ProgressBoard::open(const std::string &path,
                                                   int rank, int size,
                                                   std::string &error) {
  if (rank < 0 || size < 1 || rank >= size) {
    error = "rank " + std::to_string(rank) + " of " + std::to_string(size) +
            " is not a rank of the job";
    return nullptr;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  // Every rank sizes the file alike; growing it to a length it has already
  // keeps what a faster rank wrote.
  const off_t bytes = static_cast<off_t>(size) * sizeof(uint64_t);
  void *mapped = MAP_FAILED;
  if (ftruncate(fd, bytes) == 0)
    mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) {
    error = "cannot map " + path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  return std::shared_ptr<ProgressBoard>(
      new ProgressBoard(fd, static_cast<uint64_t *>(mapped), rank, size));
}

ProgressBoard::~ProgressBoard() {
  munmap(slots, static_cast<size_t>(size) * sizeof(uint64_t));
  ::close(fd);
}

void ProgressBoard::enter(uint64_t collective) {
  __atomic_store_n(&slots[rank], collective, __ATOMIC_RELEASE);
}

std::string ProgressBoard::missing(uint64_t collective) const {
  std::string ranks;
  for (int peer = 0; peer < size; ++peer) {
    const uint64_t entered = __atomic_load_n(&slots[peer], __ATOMIC_ACQUIRE);
    if (entered >= collective)
      continue;
    ranks += (ranks.empty() ? "" : ", ") + std::string("rank ") +
             std::to_string(peer) + " (had entered " + std::to_string(entered) +
             ")";
  }
  return ranks;
}

} // namespace gdnrt
