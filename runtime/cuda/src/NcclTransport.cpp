#include "NcclTransport.h"

#include "GradientSync.h"
#include "NcclExpertExchange.h"
#include "NcclGroup.h"
#include "NcclWait.h"

#include "pipert/cuda/CudaCheck.h"

#include <algorithm>
#include <set>

namespace pipert::cuda {

namespace {

// Greedy rounds: each item (a set of ranks) goes into the first round where
// none of its ranks is used yet, so a rank joins at most one communicator per
// ncclCommSplit. Every rank computes the same rounds.
std::vector<std::vector<size_t>> splitRounds(const std::vector<std::vector<int>> &items) {
  std::vector<std::vector<size_t>> rounds;
  std::vector<std::set<int>> used;
  for (size_t i = 0; i < items.size(); ++i) {
    size_t r = 0;
    for (; r < rounds.size(); ++r)
      if (std::none_of(items[i].begin(), items[i].end(), [&](int x) { return used[r].count(x); }))
        break;
    if (r == rounds.size()) {
      rounds.emplace_back();
      used.emplace_back();
    }
    rounds[r].push_back(i);
    used[r].insert(items[i].begin(), items[i].end());
  }
  return rounds;
}

// Non-blocking, so that every wait is the host's own, polled to a deadline.
ncclConfig_t nonBlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

const char *const kStartHint = "is every rank started, with the same program?";

} // namespace

NcclTransport::NcclTransport(const Program &program, const ProcessGroup &group,
                             double timeoutSeconds, int replicas)
    : rank_(group.rank), worldSize_(group.worldSize), pipelineRank_(group.rank % program.numRanks),
      replica_(group.rank / program.numRanks), replicas_(replicas), timeoutSeconds_(timeoutSeconds) {
  if (replicas == 1 && group.worldSize != program.numRanks)
    throw std::runtime_error("WORLD_SIZE is " + std::to_string(group.worldSize) + " but " +
                             program.name + " has " + std::to_string(program.numRanks) +
                             " ranks: run one process per rank");
  if (group.worldSize != program.numRanks * replicas)
    throw std::runtime_error("WORLD_SIZE is " + std::to_string(group.worldSize) + " but " +
                             program.name + " has " + std::to_string(program.numRanks) +
                             " ranks and --ep " + std::to_string(replicas) + " runs " +
                             std::to_string(replicas) + " replicas of it: run " +
                             std::to_string(program.numRanks * replicas) +
                             " processes, one per rank of each replica");
  ncclUniqueId id = exchangeUniqueId(group, timeoutSeconds);
  try {
    initWorld(id);
    forgetUniqueId(group); // every rank has joined, so every rank has read it
    splitChannels(program);
    splitSyncGroups(program);
    splitExpertGroups(program);
    connectChannels();
  } catch (...) {
    abort(); // nothing may stay blocked on a peer that is not coming
    throw;
  }
}

std::string NcclTransport::whoAmI() const {
  return "rank " + std::to_string(rank_) + " (world " + std::to_string(worldSize_) + ")";
}

void NcclTransport::initWorld(const ncclUniqueId &id) {
  ncclConfig_t config = nonBlockingConfig();
  ncclComm_t comm = nullptr;
  ncclResult_t started = ncclCommInitRankConfig(&comm, worldSize_, id, rank_, &config);
  world_ = UniqueComm(comm); // owned even when it failed: it must be aborted then
  PIPERT_NCCL(started, comm);
  awaitCommunicators({world_}, Deadline(timeoutSeconds_), "NCCL communicator init of " + whoAmI(),
                     kStartHint);
}

ncclComm_t NcclTransport::split(int color, int key, ncclConfig_t &config, const std::string &what) {
  ncclComm_t comm = nullptr;
  ncclResult_t started = ncclCommSplit(world_, color, key, &comm, &config);
  if (comm)
    owned_.emplace_back(comm);
  PIPERT_NCCL(started, world_.get());
  // A split is collective over the world: the parent is busy until every rank
  // has joined it.
  awaitCommunicators({world_, comm}, Deadline(timeoutSeconds_), what + " of " + whoAmI(),
                     kStartHint);
  return comm;
}

void NcclTransport::splitChannels(const Program &program) {
  std::map<uint64_t, std::pair<int, int>> unique;
  messageChannel_.resize(program.numMessages);
  for (uint32_t id = 0; id < program.numMessages; ++id) {
    const ProgramMessage &m = program.messages[id];
    messageChannel_[id] = channelKey(m);
    unique.emplace(channelKey(m), std::make_pair(m.from, m.to));
  }
  std::vector<uint64_t> keys;
  std::vector<std::vector<int>> members;
  for (auto &[key, ends] : unique) {
    keys.push_back(key);
    members.push_back({ends.first, ends.second});
  }
  // A channel carries one transfer at a time and its receives are posted ahead
  // of use: a couple of thread blocks suffice, and waiting receives then leave
  // the SMs to the compute they are meant to overlap.
  ncclConfig_t config = nonBlockingConfig();
  config.minCTAs = 1;
  config.maxCTAs = 2;
  std::vector<std::vector<size_t>> rounds = splitRounds(members);
  for (size_t r = 0; r < rounds.size(); ++r) {
    int color = NCCL_SPLIT_NOCOLOR, key = 0;
    for (size_t item : rounds[r])
      if (members[item][0] == pipelineRank_ || members[item][1] == pipelineRank_) {
        color = int(item + size_t(replica_) * members.size()); // each replica its own
        key = members[item][0] == pipelineRank_ ? 0 : 1; // the sender is rank 0 of the channel
      }
    ncclComm_t comm = split(color, key, config,
                            "NCCL channel communicator split (round " + std::to_string(r + 1) +
                                " of " + std::to_string(rounds.size()) + ")");
    if (comm)
      channels_[keys[size_t(color) % members.size()]] = {comm, 1 - key};
  }
}

void NcclTransport::splitSyncGroups(const Program &program) {
  std::vector<std::vector<int>> members;
  for (uint32_t g = 0; g < program.numSyncGroups; ++g) {
    const SyncGroupTable &group = program.syncGroups[g];
    std::set<int> ranks(group.ranks, group.ranks + group.size);
    members.emplace_back(ranks.begin(), ranks.end());
  }
  ncclConfig_t config = nonBlockingConfig();
  std::vector<std::vector<size_t>> rounds = splitRounds(members);
  for (size_t r = 0; r < rounds.size(); ++r) {
    int color = NCCL_SPLIT_NOCOLOR;
    for (size_t item : rounds[r])
      if (std::count(members[item].begin(), members[item].end(), pipelineRank_))
        color = int(item + size_t(replica_) * members.size()); // each replica its own
    ncclComm_t comm = split(color, rank_, config,
                            "NCCL gradient-sync communicator split (round " +
                                std::to_string(r + 1) + " of " + std::to_string(rounds.size()) +
                                ")");
    if (comm)
      syncGroups_[uint32_t(size_t(color) % members.size())] = comm;
  }
}

// One round per chunk: the members of (pipeline rank r, chunk c) are world
// ranks e * P + r, ranked by replica e, which is the expert shard they hold.
void NcclTransport::splitExpertGroups(const Program &program) {
  if (replicas_ == 1)
    return;
  int chunks = 0;
  for (int r = 0; r < program.numRanks; ++r)
    for (uint32_t i = 0; i < program.ranks[r].numOps; ++i)
      chunks = std::max(chunks, program.ranks[r].ops[i].chunk + 1);
  std::set<int> mine;
  for (uint32_t i = 0; i < program.ranks[pipelineRank_].numOps; ++i)
    mine.insert(program.ranks[pipelineRank_].ops[i].chunk);
  ncclConfig_t config = nonBlockingConfig();
  for (int c = 0; c < chunks; ++c) {
    int color = mine.count(c) ? pipelineRank_ * chunks + c : NCCL_SPLIT_NOCOLOR;
    ncclComm_t comm = split(color, replica_, config,
                            "NCCL expert-group communicator split (chunk " + std::to_string(c) +
                                ")");
    if (comm)
      expertGroups_[c] = comm;
  }
}

std::shared_ptr<ExpertExchange> NcclTransport::expertExchange(int chunk) {
  auto it = expertGroups_.find(chunk);
  if (it == expertGroups_.end())
    throw CudaError(whoAmI() + " has no expert group for chunk " + std::to_string(chunk));
  return std::make_shared<NcclExpertExchange>(
      it->second, replica_, replicas_, timeoutSeconds_,
      "pipeline rank " + std::to_string(pipelineRank_) + " chunk " + std::to_string(chunk) +
          " on " + whoAmI() + " (expert-parallel replica " + std::to_string(replica_) + " of " +
          std::to_string(replicas_) + ")",
      [this] { abort(); });
}

// One byte each way on every channel, in a single group: the connections are
// made here, together, instead of lazily in whatever order the step reaches
// them. Waited for by polling (not cudaStreamSynchronize), to the deadline.
void NcclTransport::connectChannels() {
  UniqueStream stream = makeStream();
  DeviceMemory bytes = allocateDevice(std::max<size_t>(channels_.size(), 1));
  std::vector<ncclComm_t> comms;
  NcclGroup group;
  size_t slot = 0;
  for (auto &[key, end] : channels_) {
    char *byte = static_cast<char *>(bytes.get()) + slot++;
    bool sender = channelSender(key) == pipelineRank_;
    if (sender)
      PIPERT_NCCL(ncclSend(byte, 1, ncclUint8, end.peer, end.comm, stream), end.comm);
    else
      PIPERT_NCCL(ncclRecv(byte, 1, ncclUint8, end.peer, end.comm, stream), end.comm);
    comms.push_back(end.comm);
  }
  ncclResult_t ended = group.end();
  PIPERT_NCCL(ended, nullptr);
  std::string what = "the first message on each of the " + std::to_string(channels_.size()) +
                     " NCCL channels of " + whoAmI();
  Deadline deadline(timeoutSeconds_);
  awaitCommunicators(comms, deadline, what, kStartHint);
  awaitStream(stream, comms, deadline, what, kStartHint);
}

void NcclTransport::settle(ncclResult_t groupEnd, const std::vector<ncclComm_t> &comms,
                           const std::string &what) {
  if (groupEnd != ncclInProgress)
    return;
  try {
    awaitCommunicators(comms, Deadline(timeoutSeconds_), what + " on " + whoAmI(),
                       "a peer may have died or be running a different program");
  } catch (...) { // a timeout, or an asynchronous error on any communicator
    abort(); // nothing may stay blocked on the peer
    throw;
  }
}

const NcclTransport::Endpoint &NcclTransport::endpoint(uint32_t message) const {
  auto it = channels_.find(messageChannel_.at(message));
  if (it == channels_.end())
    throw CudaError("rank " + std::to_string(rank_) + " is not an end of message " +
                    std::to_string(message) + "'s channel");
  return it->second;
}

void NcclTransport::send(uint32_t id, void *data, size_t bytes, cudaStream_t stream) {
  const Endpoint &end = endpoint(id);
  NcclGroup group;
  PIPERT_NCCL(ncclSend(data, bytes, ncclUint8, end.peer, end.comm, stream), end.comm);
  ncclResult_t ended = group.end();
  PIPERT_NCCL(ended, end.comm);
  settle(ended, {end.comm}, "the ncclSend of message " + std::to_string(id));
  PIPERT_CUDA(cudaFreeAsync(data, stream));
}

size_t NcclTransport::sentBytes(uint32_t id) const {
  throw CudaError("NCCL transport: the size of message " + std::to_string(id) +
                  " was sent by another process and was not measured before the step");
}

void *NcclTransport::receive(uint32_t id, size_t bytes, cudaStream_t stream) {
  const Endpoint &end = endpoint(id);
  void *buffer = nullptr;
  PIPERT_CUDA(cudaMallocAsync(&buffer, bytes, stream));
  NcclGroup group;
  PIPERT_NCCL(ncclRecv(buffer, bytes, ncclUint8, end.peer, end.comm, stream), end.comm);
  ncclResult_t ended = group.end();
  PIPERT_NCCL(ended, end.comm);
  settle(ended, {end.comm}, "the ncclRecv of message " + std::to_string(id));
  return buffer;
}

void NcclTransport::syncGradients(const std::vector<LocalSyncGroup> &groups, double *loss,
                                  cudaStream_t stream) {
  sumLocalCopies(groups, stream);
  std::vector<ncclComm_t> comms{world_};
  NcclGroup group;
  for (const LocalSyncGroup &g : groups) {
    auto it = syncGroups_.find(g.group);
    if (it == syncGroups_.end())
      throw CudaError("rank " + std::to_string(rank_) + " is not in gradient-sync group " +
                      std::to_string(g.group));
    for (const DeviceGradient &grad : g.copies[0])
      PIPERT_NCCL(ncclAllReduce(grad.data, grad.data, grad.rows * grad.cols, ncclFloat, ncclSum,
                                it->second, stream),
                  it->second);
    comms.push_back(it->second);
  }
  PIPERT_NCCL(ncclAllReduce(loss, loss, 1, ncclDouble, ncclSum, world_, stream), world_);
  ncclResult_t ended = group.end();
  PIPERT_NCCL(ended, nullptr);
  settle(ended, comms, "the gradient and loss all-reduces");
  copyFirstToOthers(groups, stream);
}

// A second group: the first's sums must be complete before they are summed
// over the replicas (one stream orders the two).
void NcclTransport::syncReplicas(const std::map<int, std::vector<DeviceGradient>> &byChunk,
                                 cudaStream_t stream) {
  if (replicas_ == 1)
    return;
  std::vector<ncclComm_t> comms;
  NcclGroup group;
  for (const auto &[chunk, gradients] : byChunk) {
    auto it = expertGroups_.find(chunk);
    if (it == expertGroups_.end())
      throw CudaError(whoAmI() + " has no expert group for chunk " + std::to_string(chunk));
    for (const DeviceGradient &grad : gradients)
      if (!grad.expertSharded)
        PIPERT_NCCL(ncclAllReduce(grad.data, grad.data, grad.rows * grad.cols, ncclFloat, ncclSum,
                                  it->second, stream),
                    it->second);
    comms.push_back(it->second);
  }
  ncclResult_t ended = group.end();
  PIPERT_NCCL(ended, nullptr);
  settle(ended, comms, "the all-reduces of gradients over the expert-parallel replicas");
}

void NcclTransport::poll() {
  std::vector<ncclComm_t> comms{world_};
  for (const UniqueComm &comm : owned_)
    comms.push_back(comm);
  try {
    communicatorsReady(comms); // throws on an asynchronous error
  } catch (...) {
    abort(); // every communicator, before any is destroyed
    throw;
  }
}

void NcclTransport::abort() {
  for (UniqueComm &comm : owned_)
    abortComm(comm);
  abortComm(world_);
  forgetCommunicators();
}

void NcclTransport::forgetCommunicators() {
  channels_.clear(); // their communicators are gone
  syncGroups_.clear();
  expertGroups_.clear();
}

// Healthy communicators are destroyed; if any reports an error or unfinished
// work, all are aborted first (destroying one can wait on a dead peer).
NcclTransport::~NcclTransport() {
  std::vector<UniqueComm *> all{&world_};
  for (UniqueComm &comm : owned_)
    all.push_back(&comm);
  releaseCommunicators(all);
  forgetCommunicators();
}

} // namespace pipert::cuda
