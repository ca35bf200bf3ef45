#include "Bootstrap.h"

#include "Deadline.h"

#include "pipert/cuda/CudaCheck.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace pipert::cuda {

namespace {

std::string systemError(const std::string &what) { return what + ": " + std::strerror(errno); }

// Closes a socket however the exchange ends.
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0)
      close(fd);
  }
};

// What rank 0 sends before the id: a magic word and the world size.
struct IdHeader {
  char magic[8] = {'p', 'i', 'p', 'e', 'r', 't', 'I', 'D'};
  uint32_t worldSize = 0;
};

// Waits until `fd` has one of `events` or the deadline passes; a signal does
// not end the wait early. True when an event came.
bool pollBefore(int fd, short events, const Deadline &deadline) {
  for (;;) {
    pollfd ready{fd, events, 0};
    int n = ::poll(&ready, 1, deadline.millisecondsLeft());
    if (n > 0)
      return true;
    if (n == 0 || errno != EINTR || deadline.passed())
      return false;
  }
}

bool writeAll(int fd, const void *data, size_t size, const Deadline &deadline) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    if (!pollBefore(fd, POLLOUT, deadline))
      return false;
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool readAll(int fd, void *data, size_t size, const Deadline &deadline) {
  char *p = static_cast<char *>(data);
  while (size > 0) {
    if (!pollBefore(fd, POLLIN, deadline))
      return false;
    ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

// A listening socket on `port`: dual-stack IPv6 where the host has IPv6, else IPv4.
int listenOn(int port, int backlog) {
  int yes = 1, no = 0;
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd >= 0) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no); // IPv4 peers too
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(uint16_t(port));
    if (bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0 &&
        listen(fd, backlog) == 0)
      return fd;
    close(fd);
  }
  fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(uint16_t(port));
  if (bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0 &&
      listen(fd, backlog) == 0)
    return fd;
  close(fd);
  return -1;
}

// connect() that gives up at the deadline (an unreachable MASTER_ADDR would
// otherwise block for the kernel's own timeout).
// A connect() interrupted by a signal goes on in the background (EINTR, then
// as EINPROGRESS): either way the outcome is read once the socket is writable.
bool connectBefore(int fd, const sockaddr *address, socklen_t length, const Deadline &deadline) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  bool connected = connect(fd, address, length) == 0;
  if (!connected && (errno == EINPROGRESS || errno == EINTR)) {
    int error = 0;
    socklen_t size = sizeof error;
    connected = pollBefore(fd, POLLOUT, deadline) &&
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 && error == 0;
  }
  fcntl(fd, F_SETFL, flags);
  return connected;
}

// accept() that retries when a signal or an aborted connection interrupts it.
int acceptRetrying(int listener) {
  for (;;) {
    int fd = ::accept(listener, nullptr, nullptr);
    if (fd >= 0 || (errno != EINTR && errno != ECONNABORTED))
      return fd;
  }
}

void serveId(const ncclUniqueId &id, int worldSize, int port, const Deadline &deadline) {
  int peers = worldSize - 1;
  Socket listener;
  listener.fd = listenOn(port, peers);
  if (listener.fd < 0)
    throw std::runtime_error(systemError("rank 0 cannot listen on MASTER_PORT " +
                                         std::to_string(port)));
  IdHeader header;
  header.worldSize = uint32_t(worldSize);
  for (int served = 0; served < peers; ++served) {
    if (!pollBefore(listener.fd, POLLIN, deadline))
      throw TimeoutError(deadline.timedOut("the other ranks to fetch the NCCL id from rank 0 (" +
                                           std::to_string(served) + " of " +
                                           std::to_string(peers) + " did)") +
                         ": is every rank started?");
    Socket peer;
    peer.fd = acceptRetrying(listener.fd);
    if (peer.fd < 0 || !writeAll(peer.fd, &header, sizeof header, deadline) ||
        !writeAll(peer.fd, &id, sizeof id, deadline))
      throw std::runtime_error(systemError("rank 0 cannot hand out the NCCL id"));
  }
}

ncclUniqueId fetchId(const std::string &host, int port, int worldSize,
                     const Deadline &deadline) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  std::string service = std::to_string(port);
  int status = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (status != 0)
    throw std::runtime_error("cannot resolve MASTER_ADDR '" + host + "': " + gai_strerror(status));
  ncclUniqueId id;
  for (;;) { // rank 0 may not listen yet: retry until the deadline
    for (addrinfo *a = found; a; a = a->ai_next) {
      Socket s;
      s.fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      IdHeader header, expected;
      if (s.fd >= 0 && connectBefore(s.fd, a->ai_addr, a->ai_addrlen, deadline) &&
          readAll(s.fd, &header, sizeof header, deadline)) {
        bool ours = std::memcmp(header.magic, expected.magic, sizeof header.magic) == 0;
        if (!ours || header.worldSize != uint32_t(worldSize)) {
          freeaddrinfo(found);
          throw std::runtime_error(
              host + ":" + service + " is not rank 0 of this job (" +
              (ours ? "its WORLD_SIZE is " + std::to_string(header.worldSize)
                    : std::string("not a pipert program")) +
              "); is MASTER_PORT shared with another job?");
        }
        if (readAll(s.fd, &id, sizeof id, deadline)) {
          freeaddrinfo(found);
          return id;
        }
      }
    }
    if (deadline.passed()) {
      freeaddrinfo(found);
      throw TimeoutError(deadline.timedOut("the NCCL id from rank 0 at " + host + ":" + service) +
                         ": is rank 0 started, and is that its address?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

ncclUniqueId idFromFile(const ProcessGroup &group, const std::string &path,
                        const Deadline &deadline) {
  ncclUniqueId id;
  if (group.rank == 0) {
    PIPERT_NCCL(ncclGetUniqueId(&id), nullptr);
    std::string temporary = path + ".tmp";
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char *>(&id), sizeof id);
      if (!out)
        throw std::runtime_error("cannot write PIPERT_NCCL_ID_FILE '" + temporary + "'");
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) // readers never see half a file
      throw std::runtime_error(systemError("cannot rename '" + temporary + "'"));
    return id;
  }
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(reinterpret_cast<char *>(&id), sizeof id))
      return id;
    if (deadline.passed())
      throw TimeoutError(deadline.timedOut("rank 0 to write PIPERT_NCCL_ID_FILE '" + path + "'") +
                         ": is rank 0 started, and does it see the same file?");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

} // namespace

ncclUniqueId exchangeUniqueId(const ProcessGroup &group, double timeoutSeconds) {
  Deadline deadline(timeoutSeconds);
  if (const char *file = std::getenv("PIPERT_NCCL_ID_FILE"); file && *file)
    return idFromFile(group, file, deadline);
  if (group.masterAddr.empty())
    throw std::runtime_error("the NCCL transport needs rank 0's address to share NCCL's unique "
                             "id: set MASTER_ADDR (or pass --master-addr; under Slurm the first "
                             "host of the node list is used) and MASTER_PORT, or "
                             "PIPERT_NCCL_ID_FILE");
  if (group.masterPort < 1 || group.masterPort > 65535)
    throw std::runtime_error(group.masterPort == 0
                                 ? std::string("the NCCL transport needs MASTER_PORT (or "
                                               "--master-port) with MASTER_ADDR")
                                 : "MASTER_PORT " + std::to_string(group.masterPort) +
                                       " is not a TCP port");
  if (group.rank != 0)
    return fetchId(group.masterAddr, group.masterPort, group.worldSize, deadline);
  ncclUniqueId id;
  PIPERT_NCCL(ncclGetUniqueId(&id), nullptr);
  serveId(id, group.worldSize, group.masterPort, deadline);
  return id;
}

void forgetUniqueId(const ProcessGroup &group) {
  const char *file = std::getenv("PIPERT_NCCL_ID_FILE");
  if (group.rank == 0 && file && *file)
    std::remove(file); // ignore failure: a file already gone is what we want
}

} // namespace pipert::cuda
