//===- LoopbackPort.h - a loopback TCP port nobody listens on -------------===//
//
// For the host tests' TCP: a port to rendezvous on, or one where asking is
// refused at once (as asking a host whose process is gone).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_RUNTIME_LOOPBACKPORT_H
#define GDN_UNITTESTS_RUNTIME_LOOPBACKPORT_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

/// A loopback port the system had free a moment ago (bound, then closed).
inline uint16_t unusedLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(fd, reinterpret_cast<sockaddr *>(&address), length);
  getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

#endif // GDN_UNITTESTS_RUNTIME_LOOPBACKPORT_H
