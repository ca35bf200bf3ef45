// The host simulation waits as real NCCL does, and the runtime's waits end at
// their deadline: a non-blocking init with a rank missing and a receive whose
// send never comes stay ncclInProgress until ncclCommAbort, which ends them at
// once; awaitCommunicators gives up at its deadline naming what it waited
// for; the handle owners and a failing constructor leak nothing.
#include "Bootstrap.h"
#include "CudaHandles.h"
#include "HostCuda.h"
#include "InProcessTransport.h"
#include "NcclExpertExchange.h"
#include "NcclGroup.h"
#include "NcclWait.h"

#include <catch2/catch.hpp>

#include <nccl.h>

#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

using namespace pipert::cuda;
using pipert::hostcuda::liveHandles;

namespace {

ncclConfig_t nonBlocking() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

ncclResult_t state(ncclComm_t comm) {
  ncclResult_t s = ncclInternalError;
  REQUIRE(ncclCommGetAsyncError(comm, &s) == ncclSuccess);
  return s;
}

// Both ranks of a two-rank world, in this process (the simulation's
// connections are sockets, so one process can hold both ends).
struct TwoRanks {
  ncclComm_t comm[2] = {nullptr, nullptr};
  TwoRanks() {
    ncclUniqueId id;
    REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
    ncclConfig_t config = nonBlocking();
    for (int r = 0; r < 2; ++r)
      REQUIRE(ncclCommInitRankConfig(&comm[r], 2, id, r, &config) == ncclInProgress);
    awaitCommunicators({comm[0], comm[1]}, Deadline(20), "the test's init", "");
  }
};

// Rank 1 waits for two floats and rank 0 sends one int32: a message of
// another size arrives, invalid usage, an asynchronous error on comm[1] only
// (the sender is healthy). The buffers live as long as the transfer.
struct MismatchedTransfer {
  float got[2] = {0, 0};
  int32_t one = 1;
  explicit MismatchedTransfer(TwoRanks &world) {
    REQUIRE(ncclGroupStart() == ncclSuccess);
    REQUIRE(ncclRecv(got, 2, ncclFloat, 0, world.comm[1], nullptr) == ncclSuccess);
    REQUIRE(ncclGroupEnd() == ncclInProgress);
    REQUIRE(ncclGroupStart() == ncclSuccess);
    REQUIRE(ncclSend(&one, 1, ncclInt32, 1, world.comm[0], nullptr) == ncclSuccess);
    REQUIRE(ncclGroupEnd() == ncclSuccess);
  }
};

} // namespace

TEST_CASE("host NCCL: an init with a rank missing stays in progress until aborted",
          "[hostnccl]") {
  pipert::hostcuda::LiveHandles before = liveHandles();
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclConfig_t config = nonBlocking();
  ncclComm_t comm = nullptr;
  REQUIRE(ncclCommInitRankConfig(&comm, 2, id, 0, &config) == ncclInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(state(comm) == ncclInProgress); // no timeout of its own
  CHECK_THROWS_WITH(awaitCommunicators({comm}, Deadline(0.2), "NCCL communicator init of rank 0",
                                       "is every rank started?"),
                    "timed out after 0.2 s waiting for NCCL communicator init of rank 0: is "
                    "every rank started?");
  auto start = std::chrono::steady_clock::now();
  CHECK(ncclCommAbort(comm) == ncclSuccess);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5)); // not a hang
  CHECK(liveHandles() == before);
}

TEST_CASE("host NCCL: non-blocking splits and sends complete in the background",
          "[hostnccl]") {
  TwoRanks world;
  ncclConfig_t config = nonBlocking();
  ncclComm_t child[2] = {nullptr, nullptr};
  for (int r = 0; r < 2; ++r)
    REQUIRE(ncclCommSplit(world.comm[r], 0, r, &child[r], &config) == ncclInProgress);
  awaitCommunicators({world.comm[0], world.comm[1], child[0], child[1]}, Deadline(20), "split", "");
  // The receive first: it waits in the background; the send cannot wait, so
  // it runs at once.
  float sent = 42, got = 0;
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclRecv(&got, 1, ncclFloat, 0, child[1], nullptr) == ncclSuccess);
  CHECK(ncclGroupEnd() == ncclInProgress);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclSend(&sent, 1, ncclFloat, 1, child[0], nullptr) == ncclSuccess);
  CHECK(ncclGroupEnd() == ncclSuccess);
  awaitCommunicators({child[0], child[1]}, Deadline(20), "the transfer", "");
  CHECK(got == 42);
  for (ncclComm_t c : {child[0], child[1], world.comm[0], world.comm[1]})
    CHECK(ncclCommDestroy(c) == ncclSuccess);
}

TEST_CASE("host NCCL: a receive whose send never comes waits until aborted", "[hostnccl]") {
  TwoRanks world;
  float got = 0;
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclRecv(&got, 1, ncclFloat, 0, world.comm[1], nullptr) == ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclInProgress);
  CHECK_THROWS_AS(awaitCommunicators({world.comm[1]}, Deadline(0.3), "the receive", ""),
                  TimeoutError);
  CHECK(state(world.comm[1]) == ncclInProgress);
  // Owners abort what is still in progress (destroying it would wait forever).
  UniqueComm owned[2] = {UniqueComm(world.comm[1]), UniqueComm(world.comm[0])};
}

TEST_CASE("host NCCL: an asynchronous error is reported, naming the peer", "[hostnccl]") {
  TwoRanks world;
  MismatchedTransfer transfer(world);
  CHECK_THROWS_WITH(awaitCommunicators({world.comm[0], world.comm[1]}, Deadline(20), "it", ""),
                    Catch::Contains("the message that arrived has 4 bytes"));
  UniqueComm owned[2] = {UniqueComm(world.comm[1]), UniqueComm(world.comm[0])};
}

// The expert all-to-all: piece i for peer p leaves from (p, i) of the send
// layout and lands at (p, i) of the receive layout at p; both participants
// call it at once (on threads: each waits for the other's sends), and the
// inverse exchange brings every piece home.
TEST_CASE("expert exchange: pieces go to their peers, in both layouts", "[hostnccl]") {
  TwoRanks world;
  using L = ExpertExchange::Layout;
  int sent[2][4], got[2][4], back[2][4];
  for (int r = 0; r < 2; ++r)
    for (int p = 0; p < 2; ++p)
      for (int i = 0; i < 2; ++i)
        sent[r][p * 2 + i] = 100 * r + 10 * p + i; // PeerMajor: from r, for p, piece i
  bool aborted = false;
  std::vector<std::future<void>> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(std::async(std::launch::async, [&, r] {
      NcclExpertExchange exchange(world.comm[r], r, 2, 20, "the test's group", [&] { aborted = true; });
      exchange.allToAll(sent[r], L::PeerMajor, got[r], L::PieceMajor, 2, sizeof(int), nullptr);
      exchange.allToAll(got[r], L::PieceMajor, back[r], L::PeerMajor, 2, sizeof(int), nullptr);
    }));
  for (auto &rank : ranks)
    rank.get();
  for (int r = 0; r < 2; ++r)
    for (int p = 0; p < 2; ++p)
      for (int i = 0; i < 2; ++i) {
        CHECK(got[r][i * 2 + p] == 100 * p + 10 * r + i); // PieceMajor: from p, piece i
        CHECK(back[r][p * 2 + i] == sent[r][p * 2 + i]);
      }
  CHECK_FALSE(aborted);
  for (ncclComm_t c : world.comm)
    CHECK(ncclCommDestroy(c) == ncclSuccess);
}

TEST_CASE("expert exchange: a peer that never joins ends at the deadline", "[hostnccl]") {
  TwoRanks world;
  int sent[2] = {1, 2}, got[2] = {0, 0};
  bool aborted = false;
  NcclExpertExchange exchange(world.comm[0], 0, 2, 0.3, "stage 1", [&] { aborted = true; });
  CHECK_THROWS_WITH(
      exchange.allToAll(sent, ExpertExchange::Layout::PeerMajor, got,
                        ExpertExchange::Layout::PeerMajor, 1, sizeof(int), nullptr),
      Catch::StartsWith("timed out after 0.3 s waiting for the expert all-to-all of stage 1"));
  CHECK(aborted);
  UniqueComm owned[2] = {UniqueComm(world.comm[0]), UniqueComm(world.comm[1])};
}

TEST_CASE("handles: a constructor that fails halfway leaks nothing", "[hostnccl]") {
  pipert::hostcuda::LiveHandles before = liveHandles();
  pipert::hostcuda::failCreation(5); // the 5th of 8 events
  CHECK_THROWS_AS(InProcessTransport(8), CudaError);
  pipert::hostcuda::failCreation(0);
  CHECK(liveHandles() == before);
  {
    UniqueStream stream = makeStream();
    DeviceMemory memory = allocateDevice(16);
    UniqueEvent event = makeEvent();
    UniqueEvent moved = std::move(event);
    CHECK(liveHandles().streams == before.streams + 1);
    CHECK(liveHandles().events == before.events + 1);
    CHECK(liveHandles().allocations == before.allocations + 1);
  }
  CHECK(liveHandles() == before);
}

namespace {
void ignoreSignal(int) {}

int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr *>(&address), length) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0);
  int port = ntohs(address.sin_port);
  close(fd);
  return port;
}

// A connection to rank 0's id server, retried until it listens.
int connectTo(int port) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(uint16_t(port));
    if (connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0)
      return fd;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL("rank 0 never listened");
  return -1;
}

ProcessGroup rankOf(int rank, int worldSize, int port) {
  ProcessGroup group;
  group.rank = rank;
  group.worldSize = worldSize;
  group.masterAddr = "127.0.0.1";
  group.masterPort = port;
  return group;
}
} // namespace

// Rank 0 counts the ranks that confirm the id, not connections: a connection
// that closes at once, one that takes the id and names no rank of the job,
// and rank 1 fetching twice leave rank 0 waiting until rank 2 has it too.
TEST_CASE("bootstrap: the id server counts ranks, not connections", "[hostnccl]") {
  int port = freePort();
  auto server = std::async(std::launch::async, [port] { return exchangeUniqueId(rankOf(0, 3, port), 20); });
  close(connectTo(port)); // a port scan
  {
    int fd = connectTo(port); // takes the id, then answers as a rank the job does not have
    char taken[12 + sizeof(ncclUniqueId)]; // the header (magic, world size) and the id
    size_t got = 0;
    while (got < sizeof taken) {
      ssize_t n = recv(fd, taken + got, sizeof taken - got, 0);
      REQUIRE(n > 0);
      got += size_t(n);
    }
    const char receipt[12] = {'p', 'i', 'p', 'e', 'r', 't', 'O', 'K', 7, 0, 0, 0};
    REQUIRE(send(fd, receipt, sizeof receipt, MSG_NOSIGNAL) == sizeof receipt);
    close(fd);
  }
  ncclUniqueId first = exchangeUniqueId(rankOf(1, 3, port), 20);
  ncclUniqueId again = exchangeUniqueId(rankOf(1, 3, port), 20); // a retry
  CHECK(server.wait_for(std::chrono::milliseconds(500)) == std::future_status::timeout);
  ncclUniqueId last = exchangeUniqueId(rankOf(2, 3, port), 20);
  REQUIRE(server.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  ncclUniqueId served = server.get();
  CHECK(std::memcmp(&served, &first, sizeof served) == 0);
  CHECK(std::memcmp(&served, &again, sizeof served) == 0);
  CHECK(std::memcmp(&served, &last, sizeof served) == 0);
}

// The server's timeout names the ranks that never confirmed.
TEST_CASE("bootstrap: a rank that never comes is named at the deadline", "[hostnccl]") {
  int port = freePort();
  auto server = std::async(std::launch::async, [port] { return exchangeUniqueId(rankOf(0, 3, port), 1); });
  exchangeUniqueId(rankOf(2, 3, port), 20);
  CHECK_THROWS_WITH(server.get(), Catch::Contains("(1 of 2 did; missing: ranks 1)"));
}

// An exception between ncclGroupStart and ncclGroupEnd still ends the group:
// the thread's next NCCL call is not swallowed by it.
TEST_CASE("nccl group: an exception inside a group still ends it", "[hostnccl]") {
  try {
    NcclGroup group;
    throw CudaError("a communicator is missing");
  } catch (const CudaError &) {
  }
  CHECK(ncclGroupEnd() == ncclInvalidUsage); // no group is open
  NcclGroup ended;
  CHECK(ended.end() == ncclSuccess);
  CHECK(ncclGroupEnd() == ncclInvalidUsage);
}

// After an asynchronous error on one communicator, all of the process's are
// aborted, the healthy one too, before any is destroyed; healthy ones alone
// are destroyed.
TEST_CASE("handles: an asynchronous error aborts every communicator", "[hostnccl]") {
  {
    TwoRanks world;
    long before = pipert::hostcuda::abortedCommunicators();
    std::vector<UniqueComm> comms;
    comms.emplace_back(world.comm[0]);
    comms.emplace_back(world.comm[1]);
    releaseCommunicators({&comms[0], &comms[1]});
    CHECK(pipert::hostcuda::abortedCommunicators() == before); // destroyed, none aborted
    CHECK(!comms[0].get());
  }
  TwoRanks world;
  MismatchedTransfer transfer(world);
  CHECK_THROWS(awaitCommunicators({world.comm[0], world.comm[1]}, Deadline(20), "it", ""));
  CHECK(state(world.comm[0]) == ncclSuccess); // the sender is healthy
  long before = pipert::hostcuda::abortedCommunicators();
  std::vector<UniqueComm> comms;
  comms.emplace_back(world.comm[0]);
  comms.emplace_back(world.comm[1]);
  releaseCommunicators({&comms[0], &comms[1]});
  CHECK(pipert::hostcuda::abortedCommunicators() - before == 2);
}

// Signals arriving all the time (a profiler's timer, a launcher's SIGCHLD)
// interrupt poll, accept, connect, send and recv with EINTR; the bootstrap
// retries them instead of failing, and hands every rank the same id.
TEST_CASE("bootstrap: the id exchange survives a storm of signals", "[hostnccl]") {
  struct sigaction action {}, previous{};
  action.sa_handler = ignoreSignal; // no SA_RESTART: calls fail with EINTR
  REQUIRE(sigaction(SIGALRM, &action, &previous) == 0);
  itimerval every{{0, 500}, {0, 500}}, off{};
  REQUIRE(setitimer(ITIMER_REAL, &every, nullptr) == 0);
  int port = freePort();
  // Only the ranks' threads take the signal (else the kernel may pick this one).
  sigset_t alarm, old;
  sigemptyset(&alarm);
  sigaddset(&alarm, SIGALRM);
  pthread_sigmask(SIG_BLOCK, &alarm, &old);
  std::vector<std::future<ncclUniqueId>> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(std::async(std::launch::async, [r, port, alarm] {
      pthread_sigmask(SIG_UNBLOCK, &alarm, nullptr);
      if (r > 0) // rank 0 waits in poll and accept meanwhile, signalled
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ProcessGroup group;
      group.rank = r;
      group.worldSize = 3;
      group.masterAddr = "127.0.0.1";
      group.masterPort = port;
      return exchangeUniqueId(group, 20);
    }));
  std::vector<ncclUniqueId> ids;
  for (auto &rank : ranks)
    ids.push_back(rank.get());
  setitimer(ITIMER_REAL, &off, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  sigaction(SIGALRM, &previous, nullptr);
  CHECK(std::memcmp(&ids[0], &ids[1], sizeof ids[0]) == 0);
  CHECK(std::memcmp(&ids[0], &ids[2], sizeof ids[0]) == 0);
}

// The stand-ins an Offload and a Reload use: pinned host memory is counted
// (a leak shows), copies must name the right direction, and a captured copy
// must use pinned memory, as a CUDA graph's memcpy node requires.
TEST_CASE("host cuda: pinned memory and copy kinds", "[hostnccl]") {
  const long pinnedBefore = liveHandles().pinned;
  const auto copiesBefore = pipert::hostcuda::copyCounts();
  void *host = nullptr, *dev = nullptr;
  std::vector<char> pageable(64, 1);
  REQUIRE(cudaMallocHost(&host, 64) == cudaSuccess);
  REQUIRE(liveHandles().pinned == pinnedBefore + 1);
  REQUIRE(cudaMalloc(&dev, 64) == cudaSuccess);
  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  std::memset(host, 7, 64);
  REQUIRE(cudaMemcpyAsync(dev, host, 64, cudaMemcpyHostToDevice, stream) == cudaSuccess);
  REQUIRE(static_cast<char *>(dev)[63] == 7);
  // Wrong directions: the device pointer on the host side, pinned memory on the device side.
  CHECK(cudaMemcpyAsync(host, dev, 64, cudaMemcpyHostToDevice, stream) == cudaErrorInvalidValue);
  CHECK(cudaMemcpyAsync(dev, host, 64, cudaMemcpyDeviceToHost, stream) == cudaErrorInvalidValue);
  CHECK(cudaMemcpyAsync(static_cast<char *>(dev) + 8, dev, 8, cudaMemcpyDeviceToHost, stream) ==
        cudaErrorInvalidValue); // inside an allocation is still the device
  // Under capture: pinned copies are recorded, pageable ones and cudaMallocHost refused.
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  CHECK(cudaMemcpyAsync(host, dev, 64, cudaMemcpyDeviceToHost, stream) == cudaSuccess);
  CHECK(cudaMemcpyAsync(pageable.data(), dev, 64, cudaMemcpyDeviceToHost, stream) ==
        cudaErrorStreamCaptureUnsupported);
  CHECK(cudaMemcpyAsync(dev, pageable.data(), 64, cudaMemcpyHostToDevice, stream) ==
        cudaErrorStreamCaptureUnsupported);
  void *more = nullptr;
  CHECK(cudaMallocHost(&more, 8) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(graph) == cudaSuccess);
  const auto copies = pipert::hostcuda::copyCounts();
  CHECK(copies.hostToDevice == copiesBefore.hostToDevice + 1);
  CHECK(copies.deviceToHost == copiesBefore.deviceToHost + 1);
  CHECK(copies.bytesToHost == copiesBefore.bytesToHost + 64);
  CHECK(cudaFreeHost(dev) == cudaErrorInvalidValue); // not pinned host memory
  REQUIRE(cudaFreeHost(host) == cudaSuccess);
  REQUIRE(liveHandles().pinned == pinnedBefore);
  REQUIRE(cudaFree(dev) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}
