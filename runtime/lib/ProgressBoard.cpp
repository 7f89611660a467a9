//===- ProgressBoard.cpp - the ranks' collectives entered -----------------===//

#include "ProgressBoard.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

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

ProgressBoard::~ProgressBoard() {
  munmap(slots, static_cast<size_t>(size) * sizeof(uint64_t));
}

void ProgressBoard::enter(uint64_t collective) {
  __atomic_store_n(&slots[rank], collective + 1, __ATOMIC_RELEASE);
}

std::string ProgressBoard::missing(uint64_t collective) const {
  std::string ranks;
  for (int peer = 0; peer < size; ++peer) {
    const uint64_t slot = __atomic_load_n(&slots[peer], __ATOMIC_ACQUIRE);
    if (slot > collective)
      continue;
    ranks += (ranks.empty() ? "rank " : ", rank ") + std::to_string(peer);
    if (slot == 0)
      ranks += " (posted nothing: not started yet, or without the board)";
    else if (slot == 1)
      ranks += " (had entered no collective)";
    else
      ranks += " (its last was collective " + std::to_string(slot - 1) + ")";
  }
  return ranks;
}

} // namespace gdnrt
