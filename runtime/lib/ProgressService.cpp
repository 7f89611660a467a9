//===- ProgressService.cpp - a process's collective counts, asked over TCP ===//

#include "ProgressService.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

namespace gdnrt {
namespace {

using Clock = std::chrono::steady_clock;

/// How long the service gives a client to send its question, and waits to
/// send the answer: 12 bytes each way on an open connection.
constexpr int kServeMs = 200;
/// A question: the board's key and the rank, in network byte order.
constexpr size_t kQuestionBytes = 12;

/// `value`'s low `count` bytes, most significant first (network order).
void encode(uint64_t value, unsigned char *bytes, int count) {
  for (int i = count - 1; i >= 0; --i, value >>= 8)
    bytes[i] = static_cast<unsigned char>(value & 0xff);
}

uint64_t decode(const unsigned char *bytes, int count) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i)
    value = value << 8 | bytes[i];
  return value;
}

/// Moves `bytes` over `fd` (non-blocking or not) before `deadline`.
bool transfer(int fd, unsigned char *data, size_t bytes, bool sending,
              Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - Clock::now())
                          .count();
    if (left <= 0)
      return false;
    pollfd waiting{fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    if (poll(&waiting, 1, static_cast<int>(left)) <= 0)
      continue;
    const ssize_t n = sending
                          ? send(fd, data + done, bytes - done, MSG_NOSIGNAL)
                          : recv(fd, data + done, bytes - done, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
      return false;
    if (n > 0)
      done += static_cast<size_t>(n);
  }
  return true;
}

/// How many ports from GDNRT_PROGRESS_PORT on a process tries: one for
/// each of a host's ranks.
constexpr int kPortsToTry = 64;

/// A socket listening on `port` of every interface (0: one the system
/// picks), or -1 with errno set.
int listenOn(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  // A job restarted at once finds the port in TIME_WAIT otherwise.
  int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    const int failure = errno;
    close(fd);
    errno = failure;
    return -1;
  }
  return fd;
}

} // namespace

ProgressService *ProgressService::get(std::string &error) {
  static std::mutex starting;
  static ProgressService *service = nullptr;
  std::lock_guard<std::mutex> guard(starting);
  // A forked child has the parent's socket but not its thread: it starts
  // a service of its own.
  if (service && service->owner == getpid())
    return service;
  if (service) {
    close(service->listener);
    service = nullptr; // the parent's object, left to the parent
  }
  uint16_t wanted = 0;
  if (const char *setting = std::getenv("GDNRT_PROGRESS_PORT")) {
    char *end = nullptr;
    const long port = std::strtol(setting, &end, 10);
    if (!*setting || *end || port < 0 || port > 65535) {
      error = std::string("GDNRT_PROGRESS_PORT=\"") + setting +
              "\" is not a TCP port (0 to 65535; 0 lets the system pick)";
      return nullptr;
    }
    wanted = static_cast<uint16_t>(port);
  }
  // A fixed port is the first of a range: the ranks sharing a host each
  // take the next free one.
  int fd = -1;
  for (int offset = 0; fd < 0 && offset < (wanted ? kPortsToTry : 1) &&
                       wanted + offset <= 65535;
       ++offset)
    fd = listenOn(static_cast<uint16_t>(wanted + offset));
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  if (fd < 0 ||
      getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0) {
    error = "the progress service cannot listen on TCP port " +
            (wanted ? std::to_string(wanted) + " or the " +
                          std::to_string(kPortsToTry - 1) +
                          " after it (GDNRT_PROGRESS_PORT)"
                    : std::string("0 (any)")) +
            ": " + std::strerror(errno);
    if (fd >= 0)
      close(fd);
    return nullptr;
  }
  auto *created =
      new (std::nothrow) ProgressService(fd, ntohs(address.sin_port));
  if (!created) {
    close(fd);
    error = "out of host memory";
    return nullptr;
  }
  created->owner = getpid();
  try {
    // It lives as long as the process: communicators destroyed during
    // static destruction may still withdraw their keys.
    std::thread([created] { created->serve(); }).detach();
  } catch (const std::exception &failure) {
    close(fd);
    delete created;
    error = std::string("cannot start the progress service's thread: ") +
            failure.what();
    return nullptr;
  }
  service = created;
  return service;
}

void ProgressService::publish(uint64_t key, int rank, const uint64_t *slot) {
  std::lock_guard<std::mutex> guard(lock);
  slots[{key, rank}] = slot;
}

void ProgressService::withdraw(uint64_t key, int rank) {
  std::lock_guard<std::mutex> guard(lock);
  slots.erase({key, rank});
}

uint64_t ProgressService::valueOf(uint64_t key, int rank) {
  std::lock_guard<std::mutex> guard(lock);
  auto found = slots.find({key, rank});
  return found == slots.end()
             ? 0
             : __atomic_load_n(found->second, __ATOMIC_ACQUIRE);
}

void ProgressService::serve() {
  while (true) {
    const int client = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      // Only a socket that is no longer a listener ends the service; the
      // rest (a connection's own network error, no descriptors or memory
      // for a moment) pass.
      if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(kServeMs);
    unsigned char bytes[kQuestionBytes];
    if (transfer(client, bytes, kQuestionBytes, /*sending=*/false, deadline)) {
      const uint64_t key = decode(bytes, 8);
      const int rank = static_cast<int>(decode(bytes + 8, 4));
      encode(valueOf(key, rank), bytes, 8);
      transfer(client, bytes, 8, /*sending=*/true, deadline);
    }
    close(client);
  }
}

bool ProgressService::ask(const std::string &host, uint16_t port, uint64_t key,
                          int rank, int timeoutMs, uint64_t &value) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  // No name lookups here: a failing network must not hold the asker in
  // DNS (ProgressBoard::overNetwork resolved the names at set-up).
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo *resolved = nullptr;
  if (port == 0 || getaddrinfo(host.c_str(), std::to_string(port).c_str(),
                               &hints, &resolved) != 0)
    return false;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  bool answered = false;
  if (fd >= 0) {
    // A non-blocking connect: a host that is down must not hold the asker
    // past its timeout.
    int connected = connect(fd, resolved->ai_addr, resolved->ai_addrlen);
    if (connected != 0 && errno == EINPROGRESS) {
      pollfd waiting{fd, POLLOUT, 0};
      int error = 0;
      socklen_t length = sizeof(error);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - Clock::now())
                            .count();
      connected =
          left > 0 && poll(&waiting, 1, static_cast<int>(left)) == 1 &&
                  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 &&
                  error == 0
              ? 0
              : -1;
    }
    unsigned char bytes[kQuestionBytes];
    encode(key, bytes, 8);
    encode(static_cast<uint32_t>(rank), bytes + 8, 4);
    if (connected == 0 &&
        transfer(fd, bytes, kQuestionBytes, /*sending=*/true, deadline) &&
        transfer(fd, bytes, 8, /*sending=*/false, deadline)) {
      value = decode(bytes, 8);
      answered = true;
    }
    close(fd);
  }
  freeaddrinfo(resolved);
  return answered;
}

} // namespace gdnrt
