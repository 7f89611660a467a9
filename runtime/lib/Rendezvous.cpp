//===- Rendezvous.cpp - the file and loopback-TCP rendezvous --------------===//

#include "Rendezvous.h"

#include "gdn/runtime/gdnrt.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace gdnrt {
namespace {

using Clock = std::chrono::steady_clock;

int64_t millisecondsLeft(Clock::time_point deadline) {
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                               Clock::now())
             .count());
}

std::string systemError(const std::string &what) {
  return what + ": " + std::strerror(errno);
}

std::string header(int size) {
  return "GDNRT-ID v1 size=" + std::to_string(size) + "\n";
}

//===--- file:<path> ------------------------------------------------------===//

int publishFile(const std::string &path, int size, const char *id,
                std::string &error) {
  struct stat existing;
  if (stat(path.c_str(), &existing) == 0) {
    error = "the rendezvous file " + path +
            " already exists; a file left by an earlier job would hand out a "
            "stale id. Use a fresh path for each job (gdnrt-launch makes one)";
    return GDN_ERROR_SYSTEM;
  }
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary);
    out << header(size);
    out.write(id, GDNRT_UNIQUE_ID_BYTES);
    if (!out) {
      error = systemError("cannot write " + temporary);
      return GDN_ERROR_SYSTEM;
    }
  }
  // rename() is atomic: a reader sees no file or the whole file.
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = systemError("cannot rename " + temporary + " to " + path);
    std::remove(temporary.c_str());
    return GDN_ERROR_SYSTEM;
  }
  return GDN_SUCCESS;
}

int readFile(const std::string &path, int rank, int size, int64_t timeoutMs,
             char *id, std::string &error) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  const std::string expected = header(size);
  while (true) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::string line;
      std::getline(in, line);
      if (line + "\n" != expected) {
        error = "the rendezvous file " + path + " starts with \"" + line +
                "\" but rank " + std::to_string(rank) +
                " expected \"" + expected.substr(0, expected.size() - 1) +
                "\": the ranks were started with different world sizes, or "
                "the file is not a gdnrt rendezvous";
        return GDN_ERROR_INVALID_ARGUMENT;
      }
      in.read(id, GDNRT_UNIQUE_ID_BYTES);
      if (in.gcount() == GDNRT_UNIQUE_ID_BYTES)
        return GDN_SUCCESS;
      error = "the rendezvous file " + path + " is truncated";
      return GDN_ERROR_SYSTEM;
    }
    if (Clock::now() >= deadline) {
      error = "rank " + std::to_string(rank) + " of " + std::to_string(size) +
              ": no id appeared at " + path + " within " +
              std::to_string(timeoutMs) +
              " ms; is rank 0 running, with the same rendezvous?";
      return GDN_ERROR_TIMEOUT;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

//===--- tcp:<host>:<port> ------------------------------------------------===//

// A joining rank says: the magic, its rank, the world size, its progress
// service's port (network byte order). Rank 0 answers a status byte, then
// the id and, for every rank, the IPv4 address rank 0 saw it connect from
// and its service's port (rank 0's own address left 0), or a reason.
constexpr char kHello[8] = {'G', 'D', 'N', 'R', 'T', 'H', 'I', '2'};
constexpr size_t kHelloBytes = 20;
constexpr size_t kPeerBytes = 6;
constexpr size_t kReasonBytes = 256;

/// A socket that closes itself.
struct Socket {
  int fd = -1;
  Socket() = default;
  explicit Socket(int fd) : fd(fd) {}
  Socket(Socket &&other) : fd(other.fd) { other.fd = -1; }
  Socket &operator=(Socket &&other) {
    std::swap(fd, other.fd);
    return *this;
  }
  ~Socket() {
    if (fd >= 0)
      close(fd);
  }
};

bool transfer(int fd, char *data, size_t bytes, bool sending,
              Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes) {
    pollfd waiting{fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    int ready = poll(&waiting, 1, static_cast<int>(millisecondsLeft(deadline)));
    if (ready <= 0)
      return false;
    ssize_t n = sending ? send(fd, data + done, bytes - done, MSG_NOSIGNAL)
                        : recv(fd, data + done, bytes - done, 0);
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool parseTcp(const std::string &address, std::string &host, std::string &port,
              std::string &error) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    error = "the rendezvous \"tcp:" + address +
            "\" has no port; write tcp:<host>:<port>, e.g. tcp:127.0.0.1:29500";
    return false;
  }
  host = address.substr(0, colon);
  port = address.substr(colon + 1);
  if (host.empty())
    host = "127.0.0.1";
  return true;
}

addrinfo *resolve(const std::string &host, const std::string &port,
                  bool listening, std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = listening ? AI_PASSIVE : 0;
  addrinfo *result = nullptr;
  if (int status = getaddrinfo(host.c_str(), port.c_str(), &hints, &result)) {
    error = "cannot resolve " + host + ":" + port + ": " + gai_strerror(status);
    return nullptr;
  }
  return result;
}

void refuse(int fd, const std::string &reason, Clock::time_point deadline) {
  char reply[1 + kReasonBytes] = {1};
  std::strncpy(reply + 1, reason.c_str(), kReasonBytes - 1);
  transfer(fd, reply, sizeof(reply), /*sending=*/true, deadline);
}

std::string ipv4Text(const in_addr &address) {
  char text[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &address, text, sizeof(text));
  return text;
}

bool isLoopback(const std::string &host) { return host.rfind("127.", 0) == 0; }

/// The ranks' progress services from rank 0's table. A joining rank
/// reached rank 0 at `rankZeroHost`: rank 0's service is there, and so is
/// any rank that rank 0 saw arrive over its loopback (it runs on rank 0's
/// host), unless `rankZeroHost` is a loopback address itself.
std::vector<ProgressBoard::Peer> readPeers(const std::vector<char> &table,
                                           const std::string &rankZeroHost) {
  std::vector<ProgressBoard::Peer> peers(table.size() / kPeerBytes);
  for (size_t rank = 0; rank < peers.size(); ++rank) {
    in_addr address{};
    uint16_t port = 0;
    std::memcpy(&address, table.data() + rank * kPeerBytes, 4);
    std::memcpy(&port, table.data() + rank * kPeerBytes + 4, 2);
    peers[rank].port = ntohs(port);
    peers[rank].host = ipv4Text(address);
    if (!rankZeroHost.empty() && (rank == 0 || (isLoopback(peers[rank].host) &&
                                                !isLoopback(rankZeroHost))))
      peers[rank].host = rankZeroHost;
  }
  return peers;
}

int serveTcp(const std::string &host, const std::string &port, int size,
             int64_t timeoutMs, const char *id, std::string &error,
             uint16_t progressPort,
             std::vector<ProgressBoard::Peer> *peersOut) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  const std::string where = "tcp:" + host + ":" + port;
  addrinfo *address = resolve(host, port, /*listening=*/true, error);
  if (!address)
    return GDN_ERROR_SYSTEM;
  Socket listener(socket(address->ai_family, SOCK_STREAM, 0));
  int yes = 1;
  setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  bool bound = listener.fd >= 0 &&
               bind(listener.fd, address->ai_addr, address->ai_addrlen) == 0 &&
               listen(listener.fd, size) == 0;
  freeaddrinfo(address);
  if (!bound) {
    error = systemError("rank 0 cannot listen on " + where);
    return GDN_ERROR_SYSTEM;
  }
  std::vector<Socket> peers(size);
  // Where each rank's progress service answers: its address as rank 0 saw
  // it, and the port it said.
  std::vector<char> table(size * kPeerBytes, 0);
  const uint16_t ownPort = htons(progressPort);
  std::memcpy(table.data() + 4, &ownPort, 2);
  int joined = 1;
  while (joined < size) {
    pollfd waiting{listener.fd, POLLIN, 0};
    if (poll(&waiting, 1, static_cast<int>(millisecondsLeft(deadline))) <= 0)
      break;
    sockaddr_in from{};
    socklen_t fromLength = sizeof(from);
    Socket peer(
        accept(listener.fd, reinterpret_cast<sockaddr *>(&from), &fromLength));
    if (peer.fd < 0)
      continue;
    // A joiner has a second to say who it is: one that says nothing, or
    // speaks another version, must not hold up the others.
    const auto helloDeadline =
        std::min(deadline, Clock::now() + std::chrono::milliseconds(1000));
    char hello[kHelloBytes];
    if (!transfer(peer.fd, hello, 8, false, helloDeadline) ||
        std::memcmp(hello, kHello, sizeof(kHello) - 1) != 0)
      continue; // not a gdnrt rank: ignore it
    if (hello[7] != kHello[7]) {
      refuse(peer.fd,
             std::string("it speaks rendezvous version ") + hello[7] +
                 " and rank 0 version " + kHello[7] +
                 ": run the same gdnrt on every rank",
             deadline);
      continue;
    }
    if (!transfer(peer.fd, hello + 8, kHelloBytes - 8, false, helloDeadline))
      continue;
    int32_t rank, peerSize;
    std::memcpy(&rank, hello + 8, 4);
    std::memcpy(&peerSize, hello + 12, 4);
    rank = static_cast<int32_t>(ntohl(static_cast<uint32_t>(rank)));
    peerSize = static_cast<int32_t>(ntohl(static_cast<uint32_t>(peerSize)));
    std::string reason;
    if (peerSize != size)
      reason = "rank " + std::to_string(rank) + " was started with world size " +
               std::to_string(peerSize) + " but rank 0 with " +
               std::to_string(size);
    else if (rank <= 0 || rank >= size)
      reason = "rank " + std::to_string(rank) + " is not in 1.." +
               std::to_string(size - 1);
    else if (peers[rank].fd >= 0)
      reason = "two processes claim rank " + std::to_string(rank);
    if (!reason.empty()) {
      refuse(peer.fd, reason, deadline);
      continue;
    }
    peers[rank] = std::move(peer);
    std::memcpy(table.data() + rank * kPeerBytes, &from.sin_addr, 4);
    std::memcpy(table.data() + rank * kPeerBytes + 4, hello + 16, 2);
    ++joined;
  }
  if (joined < size) {
    std::string missing;
    for (int rank = 1; rank < size; ++rank)
      if (peers[rank].fd < 0)
        missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
    error = "rank 0 of " + std::to_string(size) + ": only " +
            std::to_string(joined - 1) + " of " + std::to_string(size - 1) +
            " peers connected to " + where + " within " +
            std::to_string(timeoutMs) + " ms (missing ranks: " + missing + ")";
    for (Socket &peer : peers)
      if (peer.fd >= 0)
        refuse(peer.fd, "rank 0 gave up: " + error, deadline);
    return GDN_ERROR_TIMEOUT;
  }
  std::vector<char> reply(1 + GDNRT_UNIQUE_ID_BYTES + table.size(), 0);
  std::memcpy(reply.data() + 1, id, GDNRT_UNIQUE_ID_BYTES);
  std::memcpy(reply.data() + 1 + GDNRT_UNIQUE_ID_BYTES, table.data(),
              table.size());
  if (peersOut)
    *peersOut = readPeers(table, "");
  for (int rank = 1; rank < size; ++rank) {
    if (!transfer(peers[rank].fd, reply.data(), reply.size(), true, deadline)) {
      error = "rank 0 could not send the id to rank " + std::to_string(rank);
      return GDN_ERROR_SYSTEM;
    }
  }
  return GDN_SUCCESS;
}

int joinTcp(const std::string &host, const std::string &port, int rank,
            int size, int64_t timeoutMs, char *id, std::string &error,
            uint16_t progressPort, std::vector<ProgressBoard::Peer> *peersOut) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  const std::string where = "tcp:" + host + ":" + port;
  const std::string who =
      "rank " + std::to_string(rank) + " of " + std::to_string(size);
  addrinfo *address = resolve(host, port, /*listening=*/false, error);
  if (!address)
    return GDN_ERROR_SYSTEM;
  Socket connection;
  const std::string rankZeroHost = ipv4Text(
      reinterpret_cast<const sockaddr_in *>(address->ai_addr)->sin_addr);
  // Rank 0 may not be listening yet: retry until the deadline.
  while (true) {
    Socket attempt(socket(address->ai_family, SOCK_STREAM, 0));
    if (attempt.fd >= 0 &&
        connect(attempt.fd, address->ai_addr, address->ai_addrlen) == 0) {
      connection = std::move(attempt);
      break;
    }
    if (Clock::now() >= deadline) {
      freeaddrinfo(address);
      error = who + ": rank 0 did not answer at " + where + " within " +
              std::to_string(timeoutMs) +
              " ms; is it running, with the same rendezvous?";
      return GDN_ERROR_TIMEOUT;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  freeaddrinfo(address);
  char hello[kHelloBytes] = {0};
  std::memcpy(hello, kHello, sizeof(kHello));
  uint32_t fields[2] = {htonl(static_cast<uint32_t>(rank)),
                        htonl(static_cast<uint32_t>(size))};
  std::memcpy(hello + 8, fields, 8);
  const uint16_t ownPort = htons(progressPort);
  std::memcpy(hello + 16, &ownPort, 2);
  char status = 0;
  if (!transfer(connection.fd, hello, sizeof(hello), true, deadline) ||
      !transfer(connection.fd, &status, 1, false, deadline)) {
    error = who + ": rank 0 at " + where + " did not send the id within " +
            std::to_string(timeoutMs) + " ms";
    return GDN_ERROR_TIMEOUT;
  }
  if (status != 0) {
    char reason[kReasonBytes] = {0};
    transfer(connection.fd, reason, sizeof(reason), false, deadline);
    reason[kReasonBytes - 1] = 0;
    error = who + ": rank 0 refused this rank: " + reason;
    return GDN_ERROR_INVALID_ARGUMENT;
  }
  std::vector<char> table(size * kPeerBytes);
  if (!transfer(connection.fd, id, GDNRT_UNIQUE_ID_BYTES, false, deadline) ||
      !transfer(connection.fd, table.data(), table.size(), false, deadline)) {
    error = who + ": rank 0 at " + where +
            " did not send the id and the ranks' table within " +
            std::to_string(timeoutMs) + " ms, or closed the connection";
    return GDN_ERROR_SYSTEM;
  }
  if (peersOut)
    *peersOut = readPeers(table, rankZeroHost);
  return GDN_SUCCESS;
}

} // namespace

int exchangeUniqueId(const std::string &rendezvous, int rank, int size,
                     int64_t timeoutMs, char *id, std::string &error,
                     uint16_t progressPort,
                     std::vector<ProgressBoard::Peer> *peers) {
  if (peers)
    peers->clear();
  if (size < 1 || rank < 0 || rank >= size) {
    error = "rank " + std::to_string(rank) + " is not in a world of " +
            std::to_string(size) + " ranks";
    return GDN_ERROR_INVALID_ARGUMENT;
  }
  if (timeoutMs <= 0) {
    error = "the timeout must be positive";
    return GDN_ERROR_INVALID_ARGUMENT;
  }
  // One rank has no one to tell.
  if (size == 1 && (rendezvous.rfind("file:", 0) == 0 ||
                    rendezvous.rfind("tcp:", 0) == 0))
    return GDN_SUCCESS;
  if (rendezvous.rfind("file:", 0) == 0) {
    std::string path = rendezvous.substr(5);
    if (path.empty()) {
      error = "the rendezvous \"file:\" names no path";
      return GDN_ERROR_INVALID_ARGUMENT;
    }
    return rank == 0 ? publishFile(path, size, id, error)
                     : readFile(path, rank, size, timeoutMs, id, error);
  }
  if (rendezvous.rfind("tcp:", 0) == 0) {
    std::string host, port;
    if (!parseTcp(rendezvous.substr(4), host, port, error))
      return GDN_ERROR_INVALID_ARGUMENT;
    return rank == 0 ? serveTcp(host, port, size, timeoutMs, id, error,
                                progressPort, peers)
                     : joinTcp(host, port, rank, size, timeoutMs, id, error,
                               progressPort, peers);
  }
  error = "the rendezvous \"" + rendezvous +
          "\" is neither file:<path> nor tcp:<host>:<port>";
  return GDN_ERROR_INVALID_ARGUMENT;
}

} // namespace gdnrt
