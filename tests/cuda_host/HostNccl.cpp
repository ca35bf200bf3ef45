// A host simulation of the NCCL entry points the CUDA executor calls
// (runtime/cuda/src: NcclTransport, Bootstrap, StepRunner), working between
// real processes on one machine, so that the one-process-per-rank path
// (--transport nccl) runs end to end, with --check, without a GPU or NCCL.
//
// Wiring: ncclGetUniqueId names a rendezvous, an abstract Unix socket name
// (no files to clean up); in ncclCommInitRank every rank listens on
// "<name>.<rank>" and connects to every other rank's, and a reader thread per
// process files each incoming message under (communicator, sender, channel).
// Communicators split from a world share its connections.
//
// Semantics, consistent with HostCuda's "run at enqueue": a send is eager (the
// receiver's reader thread buffers it, so it never waits for the receive); a
// receive waits until its message has arrived, matched in order per
// (communicator, peer); an all-reduce sends this rank's contribution to every
// member, then waits until it has everyone's and sums them in rank order, so
// every member gets the same bits. Operations between ncclGroupStart/End run
// at ncclGroupEnd, every send (and contribution) first. Under stream capture
// they are recorded (pipert::hostcuda::enqueue) and communicate when the
// graph is replayed. A wait on a peer whose connection closed fails at once.
//
// Waiting as real NCCL does. A communicator made with ncclConfig_t::blocking
// = 0 (and the communicators split from it) is non-blocking: ncclCommInitRank-
// Config, ncclCommSplit and an ncclGroupEnd that could wait (a receive whose
// message is not here yet, an all-reduce) start the work on a background
// thread and return ncclInProgress; ncclCommGetAsyncError reports ncclInProgress
// until it is done, then its result. Such work never gives up by itself: an
// init with a rank missing, a split a rank does not join, a receive whose
// send never comes wait until ncclCommAbort, as on a GPU, so only the
// caller's own deadline ends them. ncclCommAbort stops every wait of its world
// (all communicators split from one init share connections here). Blocking
// communicators, and a graph replay (which no call can return an error from),
// wait inline instead and give up after $PIPERT_HOSTNCCL_TIMEOUT seconds
// (default 20) with ncclRemoteError; ncclGetLastError says what was waited
// for. A failure at graph replay is printed to stderr and kept as the
// communicator's asynchronous error. Calls come from one thread, as the
// executor makes them; the background work of one communicator runs one
// piece at a time.
//
// Testing: PIPERT_HOSTNCCL_DROP_SEND=K makes this process never post its K-th
// ncclSend (counted from 1, set-up included), so its peer's receive waits for
// a message that never comes, as with a peer stuck on a GPU.
#include "HostCuda.h"

#include <nccl.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kIdPrefix[] = "pipert-hostnccl-";

// Point-to-point messages and collectives' contributions on one communicator
// are matched separately, as NCCL keeps them apart.
enum Channel : uint32_t { kPointToPoint = 0, kCollective = 1 };

// What travels ahead of every message's bytes.
struct Header {
  uint64_t comm;    // communicator id, the same in every member
  int32_t from;     // sender's rank in that communicator
  uint32_t channel;
  uint64_t bytes;
};

thread_local std::string lastError;

ncclResult_t fail(ncclResult_t result, std::string message) {
  lastError = std::move(message);
  return result;
}

double timeoutSeconds() {
  const char *text = std::getenv("PIPERT_HOSTNCCL_TIMEOUT");
  double seconds = text ? std::strtod(text, nullptr) : 0;
  return seconds > 0 ? seconds : 20;
}

Clock::time_point deadlineFromNow() {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(timeoutSeconds()));
}

std::string seconds() {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", timeoutSeconds());
  return text;
}

// An abstract-namespace address: sun_path[0] stays '\0'.
socklen_t socketAddress(const std::string &name, sockaddr_un &address) {
  address = sockaddr_un{};
  address.sun_family = AF_UNIX;
  size_t length = std::min(name.size(), sizeof address.sun_path - 1);
  std::memcpy(address.sun_path + 1, name.data(), length);
  return socklen_t(offsetof(sockaddr_un, sun_path) + 1 + length);
}

bool readAll(int fd, void *data, size_t size) {
  char *p = static_cast<char *>(data);
  while (size > 0) {
    ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

size_t typeBytes(ncclDataType_t type) {
  switch (type) {
  case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
  default: return 0;
  }
}

uint64_t mix(uint64_t x) { // splitmix64: split communicators' ids
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One process's connections in a world: a socket to each peer for sending,
// and a reader thread that files what arrives until the mesh is destroyed.
class Mesh {
public:
  using Key = std::tuple<uint64_t, int, uint32_t>; // communicator, sender, channel

  Mesh(int rank, int size) : rank_(rank), size_(size), out_(size_t(size), -1),
                             closed_(size_t(size), false) {}
  ~Mesh() {
    if (reader_.joinable()) {
      char stop = 0;
      while (write(wake_[1], &stop, 1) < 0 && errno == EINTR) { // a pipe: not send()
      }
      reader_.join();
    }
    for (int fd : out_)
      if (fd >= 0)
        close(fd);
    for (int fd : {listener_, wake_[0], wake_[1]})
      if (fd >= 0)
        close(fd);
  }

  // Stops every wait on this mesh, now and later (ncclCommAbort).
  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    arrived_.notify_all();
  }
  bool aborted() const { return aborted_; }

  // Listens as `name`.rank, then connects to every other rank's listener
  // (retrying: a peer may not have started yet), until aborted, or when
  // `bounded` until the simulation's timeout.
  ncclResult_t connect(const std::string &name, bool bounded) {
    sockaddr_un address;
    std::string mine = name + "." + std::to_string(rank_);
    socklen_t length = socketAddress(mine, address);
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ < 0 || pipe(wake_) != 0 ||
        bind(listener_, reinterpret_cast<sockaddr *>(&address), length) != 0 ||
        listen(listener_, size_) != 0)
      return fail(ncclSystemError, "rank " + std::to_string(rank_) + " cannot listen on @" + mine +
                                       ": " + std::strerror(errno));
    reader_ = std::thread([this] { readLoop(); });
    Clock::time_point deadline = deadlineFromNow();
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_)
        continue;
      std::string theirs = name + "." + std::to_string(peer);
      length = socketAddress(theirs, address);
      for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr *>(&address), length) == 0) {
          out_[size_t(peer)] = fd;
          break;
        }
        if (fd >= 0)
          close(fd);
        if (aborted_)
          return fail(ncclInternalError, "ncclCommInitRank: rank " + std::to_string(rank_) +
                                             ": aborted while waiting for rank " +
                                             std::to_string(peer));
        if (bounded && Clock::now() > deadline)
          return fail(ncclRemoteError,
                      "ncclCommInitRank: rank " + std::to_string(rank_) + " of " +
                          std::to_string(size_) + ": rank " + std::to_string(peer) +
                          " did not join within " + seconds() + " (nothing listens at @" +
                          theirs + ")");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      int32_t hello = rank_; // tells the peer's reader who this connection is from
      if (!writeAll(out_[size_t(peer)], &hello, sizeof hello))
        return fail(ncclRemoteError, "ncclCommInitRank: rank " + std::to_string(peer) +
                                         " closed its connection");
    }
    return ncclSuccess;
  }

  // Messages filed under `key` and not taken yet.
  size_t waiting(const Key &key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = inbox_.find(key);
    return it == inbox_.end() ? 0 : it->second.size();
  }

  ncclResult_t post(int to, const Header &header, const void *data) {
    if (to == rank_) {
      const char *bytes = static_cast<const char *>(data);
      std::lock_guard<std::mutex> lock(mutex_);
      inbox_[{header.comm, header.from, header.channel}].emplace_back(bytes, bytes + header.bytes);
      arrived_.notify_all();
      return ncclSuccess;
    }
    int fd = out_[size_t(to)];
    if (!writeAll(fd, &header, sizeof header) || !writeAll(fd, data, header.bytes))
      return fail(ncclRemoteError, "cannot send to world rank " + std::to_string(to) + ": " +
                                       std::strerror(errno) + " (has it exited?)");
    return ncclSuccess;
  }

  // The next message filed under `key`, from world rank `from`, into `out`
  // (`bytes` long); `what` describes the wait for errors. Waits until it
  // comes, the peer's connection closes or the mesh is aborted, or when
  // `bounded` until the simulation's timeout.
  ncclResult_t take(const Key &key, int from, void *out, size_t bytes, const std::string &what,
                    bool bounded) {
    Clock::time_point deadline = deadlineFromNow();
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      auto it = inbox_.find(key);
      if (it != inbox_.end() && !it->second.empty()) {
        std::vector<char> data = std::move(it->second.front());
        it->second.pop_front();
        if (data.size() != bytes)
          return fail(ncclInvalidUsage, what + ": the message that arrived has " +
                                            std::to_string(data.size()) + " bytes");
        std::memcpy(out, data.data(), bytes);
        return ncclSuccess;
      }
      if (closed_[size_t(from)])
        return fail(ncclRemoteError, what + ": its connection closed first (the process exited)");
      if (aborted_)
        return fail(ncclInternalError, what + ": aborted (ncclCommAbort)");
      if (!bounded) {
        arrived_.wait(lock);
        continue;
      }
      if (Clock::now() >= deadline)
        return fail(ncclRemoteError, what + ": nothing arrived within " + seconds() +
                                         " (PIPERT_HOSTNCCL_TIMEOUT)");
      arrived_.wait_until(lock, deadline);
    }
  }

private:
  void readLoop() {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    std::vector<int> peers{-1, -1}; // world rank behind each of fds
    for (;;) {
      if (poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR)
          continue;
        break;
      }
      if (fds[0].revents)
        break;
      if (fds[1].revents & POLLIN) {
        int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        int32_t peer = -1;
        if (fd >= 0 && readAll(fd, &peer, sizeof peer) && peer >= 0 && peer < size_) {
          fds.push_back({fd, POLLIN, 0});
          peers.push_back(peer);
        } else if (fd >= 0) {
          close(fd);
        }
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents)
          continue;
        // A sender writes a message whole, so reading it whole does not stall.
        Header header;
        std::vector<char> data;
        bool ok = readAll(fds[i].fd, &header, sizeof header) && header.bytes < (uint64_t(1) << 40);
        if (ok) {
          data.resize(size_t(header.bytes));
          ok = readAll(fds[i].fd, data.data(), data.size());
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (ok) {
          inbox_[{header.comm, header.from, header.channel}].push_back(std::move(data));
        } else { // end of stream: the peer exited (what it sent before is still filed)
          closed_[size_t(peers[i])] = true;
          close(fds[i].fd);
          fds.erase(fds.begin() + std::ptrdiff_t(i));
          peers.erase(peers.begin() + std::ptrdiff_t(i));
          --i;
        }
        arrived_.notify_all();
      }
    }
    for (size_t i = 2; i < fds.size(); ++i)
      close(fds[i].fd);
  }

  int rank_, size_;
  int listener_ = -1, wake_[2] = {-1, -1};
  std::vector<int> out_;
  std::thread reader_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<Key, std::deque<std::vector<char>>> inbox_;
  std::vector<bool> closed_; // per world rank: its connection ended
  std::atomic<bool> aborted_{false};
};

} // namespace

namespace {
std::atomic<long> liveComms{0};
} // namespace

long pipert::hostcuda::liveCommunicators() { return liveComms; }

namespace {
std::atomic<long> abortCalls{0};
} // namespace

long pipert::hostcuda::abortedCommunicators() { return abortCalls.load(); }

// The opaque handle type, given a body here.
struct ncclComm {
  ncclComm() { ++liveComms; }
  std::shared_ptr<Mesh> mesh;
  uint64_t id = 0;
  int rank = 0;
  std::vector<int> members; // world rank of each rank
  uint64_t splits = 0;      // ncclCommSplit calls so far: part of the children's ids
  bool blocking = true;     // ncclConfig_t::blocking
  // ncclInProgress while background work runs; `error` is written before it
  // leaves that state, and read only after.
  std::atomic<ncclResult_t> asyncError{ncclSuccess};
  std::string error;
  std::shared_ptr<std::thread> job; // the background work, when there is some

  ~ncclComm() {
    finishJob();
    --liveComms;
  }
  void finishJob() {
    if (job && job->joinable())
      job->join();
    job.reset();
  }

  int size() const { return int(members.size()); }
  std::string describe() const {
    std::string text = "world rank " + std::to_string(members[size_t(rank)]) + " (rank " +
                       std::to_string(rank) + " of the communicator of world ranks";
    for (int m : members)
      text += " " + std::to_string(m);
    return text + ")";
  }
  ncclResult_t post(int to, Channel channel, const void *data, size_t bytes) {
    ncclResult_t r = mesh->post(members[size_t(to)], Header{id, rank, channel, bytes}, data);
    if (r != ncclSuccess)
      lastError = describe() + ": " + lastError;
    return r;
  }
  ncclResult_t take(int from, Channel channel, void *out, size_t bytes, const std::string &what,
                    bool bounded) {
    return mesh->take({id, from, channel}, members[size_t(from)], out, bytes,
                      describe() + ": " + what + " of " + std::to_string(bytes) +
                          " bytes from its rank " + std::to_string(from) + " (world rank " +
                          std::to_string(members[size_t(from)]) + ")",
                      bounded);
  }
  // A failed operation leaves the communicator failed, as NCCL's does.
  ncclResult_t failed(ncclResult_t result) {
    error = lastError;
    asyncError = result;
    return result;
  }
  // Whether a failure is recorded (in-progress work is not one).
  bool broken() const {
    ncclResult_t state = asyncError;
    return state != ncclSuccess && state != ncclInProgress;
  }
};

namespace {

struct Op {
  enum Kind { Send, Recv, AllReduce } kind;
  ncclComm_t comm;
  const void *source;
  void *target;
  size_t count;
  ncclDataType_t type;
  int peer;
};

template <typename T>
void sumInOrder(const std::vector<std::vector<char>> &parts, size_t count, void *out) {
  std::vector<T> sum(count);
  for (size_t k = 0; k < parts.size(); ++k) {
    const T *part = reinterpret_cast<const T *>(parts[k].data());
    for (size_t e = 0; e < count; ++e)
      sum[e] = k == 0 ? part[e] : sum[e] + part[e];
  }
  std::memcpy(out, sum.data(), count * sizeof(T));
}

// Whether this send is the one PIPERT_HOSTNCCL_DROP_SEND names.
bool dropThisSend() {
  static const long drop = [] {
    const char *text = std::getenv("PIPERT_HOSTNCCL_DROP_SEND");
    return text ? std::strtol(text, nullptr, 10) : 0;
  }();
  static std::atomic<long> sends{0};
  return ++sends == drop;
}

// One group's operations: every send and contribution first, so no rank waits
// on a peer that is itself waiting before its sends. `bounded`: waits give up
// after the simulation's timeout.
ncclResult_t runGroup(const std::vector<Op> &ops, bool bounded) {
  for (const Op &op : ops)
    if (op.comm->broken())
      return fail(op.comm->asyncError, op.comm->describe() + " failed earlier: " + op.comm->error);
  std::vector<std::vector<char>> own(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op &op = ops[i];
    size_t bytes = op.count * typeBytes(op.type);
    ncclResult_t r = ncclSuccess;
    if (op.kind == Op::Send) {
      if (!dropThisSend())
        r = op.comm->post(op.peer, kPointToPoint, op.source, bytes);
    } else if (op.kind == Op::AllReduce) {
      const char *source = static_cast<const char *>(op.source);
      own[i].assign(source, source + bytes); // before any receive of the group lands
      for (int m = 0; m < op.comm->size() && r == ncclSuccess; ++m)
        if (m != op.comm->rank)
          r = op.comm->post(m, kCollective, source, bytes);
    }
    if (r != ncclSuccess)
      return op.comm->failed(r);
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op &op = ops[i];
    size_t bytes = op.count * typeBytes(op.type);
    ncclResult_t r = ncclSuccess;
    if (op.kind == Op::Recv) {
      r = op.comm->take(op.peer, kPointToPoint, op.target, bytes, "ncclRecv", bounded);
    } else if (op.kind == Op::AllReduce) {
      std::vector<std::vector<char>> parts(size_t(op.comm->size()));
      for (int m = 0; m < op.comm->size() && r == ncclSuccess; ++m) {
        if (m == op.comm->rank) {
          parts[size_t(m)] = std::move(own[i]);
        } else {
          parts[size_t(m)].resize(bytes);
          r = op.comm->take(m, kCollective, parts[size_t(m)].data(), bytes, "ncclAllReduce",
                            bounded);
        }
      }
      if (r == ncclSuccess) {
        if (op.type == ncclFloat)
          sumInOrder<float>(parts, op.count, op.target);
        else
          sumInOrder<double>(parts, op.count, op.target);
      }
    }
    if (r != ncclSuccess)
      return op.comm->failed(r);
  }
  return ncclSuccess;
}

// Runs `work` on a background thread for non-blocking communicators: each is
// ncclInProgress until it is done, then takes its result (and error text).
// Work already running on one of them finishes first (the executor polls
// every call to its end before the next, so this does not wait).
ncclResult_t startJob(const std::vector<ncclComm_t> &comms, std::function<ncclResult_t()> work) {
  for (ncclComm_t comm : comms)
    comm->finishJob();
  for (ncclComm_t comm : comms)
    comm->asyncError = ncclInProgress;
  auto job = std::make_shared<std::thread>([comms, work = std::move(work)] {
    ncclResult_t result = work();
    for (ncclComm_t comm : comms) {
      comm->error = result == ncclSuccess ? std::string() : lastError; // this thread's
      comm->asyncError = result;
    }
  });
  for (ncclComm_t comm : comms)
    comm->job = job;
  return ncclInProgress;
}

thread_local int groupDepth = 0;
thread_local std::vector<Op> grouped;

// Runs the pending group: in the background when every communicator in it is
// non-blocking, else now; under capture at each replay of the graph. Only a
// run at the call can return its error.
ncclResult_t flushGroup() {
  struct Call {
    std::vector<Op> ops;
    bool atCall = true;
    ncclResult_t result = ncclSuccess;
  };
  if (grouped.empty())
    return ncclSuccess;
  auto call = std::make_shared<Call>();
  call->ops.swap(grouped);
  bool nonBlocking = std::none_of(call->ops.begin(), call->ops.end(),
                                  [](const Op &op) { return op.comm->blocking; });
  if (nonBlocking && !pipert::hostcuda::isCapturing()) {
    for (const Op &op : call->ops)
      if (op.comm->broken())
        return fail(op.comm->asyncError,
                    op.comm->describe() + " failed earlier: " + op.comm->error);
    // A group that cannot wait (sends, receives whose messages are here) runs
    // now, as NCCL enqueues work at once on a connected channel; the rest in
    // the background.
    std::map<Mesh::Key, size_t> wanted;
    bool canWait = false;
    for (const Op &op : call->ops) {
      if (op.kind == Op::AllReduce)
        canWait = true;
      else if (op.kind == Op::Recv) {
        Mesh::Key key{op.comm->id, op.peer, kPointToPoint};
        canWait |= ++wanted[key] > op.comm->mesh->waiting(key);
      }
    }
    if (!canWait) {
      ncclResult_t r = runGroup(call->ops, false);
      return r == ncclSuccess ? r : call->ops.front().comm->failed(r);
    }
    std::vector<ncclComm_t> comms;
    for (const Op &op : call->ops)
      if (std::find(comms.begin(), comms.end(), op.comm) == comms.end())
        comms.push_back(op.comm);
    return startJob(comms, [call] { return runGroup(call->ops, false); });
  }
  pipert::hostcuda::enqueue([call] {
    bool failedBefore = std::any_of(call->ops.begin(), call->ops.end(),
                                    [](const Op &op) { return op.comm->broken(); });
    call->result = runGroup(call->ops, true);
    if (call->result != ncclSuccess && !call->atCall && !failedBefore) // say it once
      std::fprintf(stderr, "pipert host NCCL: error in a graph replay: %s\n", lastError.c_str());
  });
  call->atCall = false;
  return call->result;
}

ncclResult_t submit(const Op &op) {
  if (!op.comm)
    return fail(ncclInvalidArgument, "null communicator");
  if (typeBytes(op.type) == 0)
    return fail(ncclInvalidArgument, "unknown data type " + std::to_string(int(op.type)));
  if (op.kind != Op::AllReduce && (op.peer < 0 || op.peer >= op.comm->size()))
    return fail(ncclInvalidArgument,
                op.comm->describe() + ": no peer rank " + std::to_string(op.peer));
  grouped.push_back(op);
  return groupDepth > 0 ? ncclSuccess : flushGroup();
}

} // namespace

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static std::atomic<unsigned> made{0};
  std::memset(id, 0, sizeof *id);
  std::snprintf(id->internal, sizeof id->internal, "%s%d-%u-%llx", kIdPrefix, int(getpid()),
                made++, static_cast<unsigned long long>(Clock::now().time_since_epoch().count()));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config) {
  *comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(rank) + " of " +
                                         std::to_string(nranks));
  std::string name(id.internal, strnlen(id.internal, sizeof id.internal));
  if (name.compare(0, sizeof kIdPrefix - 1, kIdPrefix) != 0)
    return fail(ncclInvalidArgument, "ncclCommInitRank: the unique id is not from the host "
                                     "simulation's ncclGetUniqueId");
  auto world = std::make_unique<ncclComm>();
  world->mesh = std::make_shared<Mesh>(rank, nranks);
  world->id = mix(0);
  world->rank = rank;
  world->blocking = !config || config->blocking != 0; // NCCL_CONFIG_UNDEF_INT: blocking
  for (int r = 0; r < nranks; ++r)
    world->members.push_back(r);
  if (!world->blocking) {
    std::shared_ptr<Mesh> mesh = world->mesh;
    *comm = world.release();
    return startJob({*comm}, [mesh, name] { return mesh->connect(name, false); });
  }
  if (ncclResult_t r = world->mesh->connect(name, true); r != ncclSuccess)
    return r;
  *comm = world.release();
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

// Collective over `parent`: every rank shares its (color, key); the members of
// this rank's color are ordered by key, then by parent rank.
// A non-blocking parent splits in the background: the parent and the child
// are ncclInProgress until every parent rank has taken part.
ncclResult_t ncclCommSplit(ncclComm_t parent, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config) {
  *newcomm = nullptr;
  if (!parent)
    return fail(ncclInvalidArgument, "ncclCommSplit: null communicator");
  parent->finishJob();
  if (parent->broken())
    return fail(parent->asyncError, parent->describe() + " failed earlier: " + parent->error);
  // Every member derives the same id; every parent rank counts the split.
  uint64_t id = mix(mix(parent->id ^ mix(parent->splits++)) ^ uint32_t(color));
  ncclComm_t child = nullptr;
  if (color != NCCL_SPLIT_NOCOLOR) {
    child = new ncclComm;
    child->mesh = parent->mesh;
    child->id = id;
    child->blocking = config && config->blocking != NCCL_CONFIG_UNDEF_INT ? config->blocking != 0
                                                                         : parent->blocking;
  }
  bool bounded = parent->blocking;
  auto work = [parent, child, color, key, bounded]() -> ncclResult_t {
    int32_t mine[2] = {color, key};
    std::vector<std::pair<int32_t, int32_t>> all(size_t(parent->size()));
    for (int m = 0; m < parent->size(); ++m)
      if (m != parent->rank)
        if (ncclResult_t r = parent->post(m, kCollective, mine, sizeof mine); r != ncclSuccess)
          return r;
    for (int m = 0; m < parent->size(); ++m) {
      int32_t theirs[2] = {color, key};
      if (m != parent->rank)
        if (ncclResult_t r =
                parent->take(m, kCollective, theirs, sizeof theirs, "ncclCommSplit", bounded);
            r != ncclSuccess)
          return r;
      all[size_t(m)] = {theirs[0], theirs[1]};
    }
    if (!child)
      return ncclSuccess;
    std::vector<int> ranks; // parent ranks of this color
    for (int m = 0; m < parent->size(); ++m)
      if (all[size_t(m)].first == color)
        ranks.push_back(m);
    std::stable_sort(ranks.begin(), ranks.end(),
                     [&](int a, int b) { return all[size_t(a)].second < all[size_t(b)].second; });
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] == parent->rank)
        child->rank = int(i);
      child->members.push_back(parent->members[size_t(ranks[i])]);
    }
    return ncclSuccess;
  };
  if (!parent->blocking) {
    *newcomm = child;
    std::vector<ncclComm_t> comms{parent};
    if (child)
      comms.push_back(child);
    return startJob(comms, work);
  }
  if (ncclResult_t r = work(); r != ncclSuccess) {
    delete child;
    return parent->failed(r);
  }
  *newcomm = child;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm; // after its background work; the last of a world closes its connections
  return ncclSuccess;
}

// Ends every wait of the communicator's world at once, then destroys it.
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  ++abortCalls;
  if (comm)
    comm->mesh->abort();
  return ncclCommDestroy(comm);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  if (!comm)
    return fail(ncclInvalidArgument, "ncclCommGetAsyncError: null communicator");
  *asyncError = comm->asyncError;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (groupDepth == 0)
    return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  return --groupDepth > 0 ? ncclSuccess : flushGroup();
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t) {
  return submit({Op::Send, comm, sendbuff, nullptr, count, type, peer});
}
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t) {
  return submit({Op::Recv, comm, nullptr, recvbuff, count, type, peer});
}
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  if (op != ncclSum || (type != ncclFloat && type != ncclDouble))
    return fail(ncclInvalidArgument,
                "ncclAllReduce: the host simulation sums float or double only");
  return submit({Op::AllReduce, comm, sendbuff, recvbuff, count, type, 0});
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclSystemError: return "unhandled system error (host NCCL simulation)";
  case ncclInvalidArgument: return "invalid argument (host NCCL simulation)";
  case ncclInvalidUsage: return "invalid usage (host NCCL simulation)";
  case ncclRemoteError: return "remote process exited or did not answer (host NCCL simulation)";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "unexpected error (host NCCL simulation)";
  }
}

// A communicator's failure (its background work's), else this thread's last.
const char *ncclGetLastError(ncclComm_t comm) {
  if (comm && comm->broken())
    return comm->error.c_str();
  return lastError.c_str();
}

} // extern "C"
