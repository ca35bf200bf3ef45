#include "Bootstrap.h"

#include "pipert/RegularFile.h"

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
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

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

// What a rank sends back once it holds the id: the magic word and its rank.
struct IdReceipt {
  char magic[8] = {'p', 'i', 'p', 'e', 'r', 't', 'O', 'K'};
  uint32_t rank = 0;
};

// Rank 0 hands the id to whoever connects and counts the ranks that confirm
// it (an IdReceipt naming a rank 1..W-1 not seen before), not connections: a
// stray connection (a port scan, another job's rank, a health check) and a
// rank that retries cannot take another rank's place, so rank 0 returns only
// once every rank holds the id. Connections are served side by side (poll),
// so one that stalls holds up nobody.
void serveId(const ncclUniqueId &id, int worldSize, int port, const Deadline &deadline) {
  int peers = worldSize - 1;
  Socket listener;
  listener.fd = listenOn(port, peers);
  if (listener.fd < 0)
    throw std::runtime_error(systemError("rank 0 cannot listen on MASTER_PORT " +
                                         std::to_string(port)));
  IdHeader header;
  header.worldSize = uint32_t(worldSize);
  std::vector<bool> confirmed(size_t(worldSize), false);
  int count = 0;
  std::vector<std::unique_ptr<Socket>> pending; // handed the id, receipt not read yet
  while (count < peers) {
    std::vector<pollfd> ready{{listener.fd, POLLIN, 0}};
    for (auto &peer : pending)
      ready.push_back({peer->fd, POLLIN, 0});
    int n = ::poll(ready.data(), nfds_t(ready.size()), deadline.millisecondsLeft());
    if (n < 0 && errno != EINTR)
      throw std::runtime_error(systemError("rank 0 cannot wait for the other ranks"));
    if (n <= 0 && deadline.passed()) {
      std::string missing;
      for (int r = 1; r < worldSize && missing.size() < 200; ++r)
        if (!confirmed[size_t(r)])
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      throw TimeoutError(deadline.timedOut("the other ranks to fetch the NCCL id from rank 0 (" +
                                           std::to_string(count) + " of " +
                                           std::to_string(peers) + " did; missing: ranks " +
                                           missing + ")") +
                         ": is every rank started?");
    }
    if (n <= 0)
      continue;
    // Receipts first: a connection is closed once it has said its piece.
    for (size_t i = ready.size() - 1; i >= 1; --i) {
      if (!ready[i].revents)
        continue;
      IdReceipt receipt, expected;
      Deadline brief(std::min(1.0, deadline.secondsLeft())); // a stalled peer waits its turn out
      if (readAll(pending[i - 1]->fd, &receipt, sizeof receipt, brief) &&
          std::memcmp(receipt.magic, expected.magic, sizeof receipt.magic) == 0 &&
          receipt.rank >= 1 && receipt.rank < uint32_t(worldSize) && !confirmed[receipt.rank]) {
        confirmed[receipt.rank] = true;
        ++count;
      }
      pending.erase(pending.begin() + long(i - 1));
    }
    if (ready[0].revents & POLLIN) {
      auto peer = std::make_unique<Socket>();
      peer->fd = acceptRetrying(listener.fd);
      if (peer->fd < 0)
        throw std::runtime_error(systemError("rank 0 cannot accept a connection"));
      // A peer that cannot take the id is not a rank of this job: it is dropped.
      if (writeAll(peer->fd, &header, sizeof header, deadline) &&
          writeAll(peer->fd, &id, sizeof id, deadline))
        pending.push_back(std::move(peer));
      if (pending.size() > size_t(4 * worldSize)) // strays that never answer: the oldest goes
        pending.erase(pending.begin());
    }
  }
}

ncclUniqueId fetchId(const std::string &host, int port, int rank, int worldSize,
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
        IdReceipt receipt;
        receipt.rank = uint32_t(rank);
        if (readAll(s.fd, &id, sizeof id, deadline) &&
            writeAll(s.fd, &receipt, sizeof receipt, deadline)) {
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
    // A fresh regular file renamed into place: readers never see half a file,
    // and a FIFO or a link left at the temporary name is replaced, not opened.
    std::string problem = writeFileReplacing(
        path, path + ".tmp", std::string(reinterpret_cast<const char *>(&id), sizeof id));
    if (!problem.empty())
      throw std::runtime_error("PIPERT_NCCL_ID_FILE: " + problem);
    return id;
  }
  for (;;) {
    // Only a regular file of exactly one id: a FIFO would block the open and
    // /dev/zero would hand NCCL an id of zeros (issue 26).
    FileRead read = readRegularFile(path, sizeof id);
    if (read.ok && read.bytes.size() == sizeof id) {
      std::memcpy(&id, read.bytes.data(), sizeof id);
      return id;
    }
    if (!read.ok && !read.missing)
      throw std::runtime_error("cannot read PIPERT_NCCL_ID_FILE '" + path + "': " + read.problem);
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
    return fetchId(group.masterAddr, group.masterPort, group.rank, group.worldSize, deadline);
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
