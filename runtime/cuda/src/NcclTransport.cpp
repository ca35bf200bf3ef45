#include "NcclTransport.h"

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

} // namespace

NcclTransport::NcclTransport(const Program &program, const ProcessGroup &group,
                             double timeoutSeconds)
    : rank_(group.rank) {
  if (group.worldSize != program.numRanks)
    throw std::runtime_error("WORLD_SIZE is " + std::to_string(group.worldSize) + " but " +
                             program.name + " has " + std::to_string(program.numRanks) +
                             " ranks: run one process per rank");
  ncclUniqueId id = exchangeUniqueId(group, timeoutSeconds);
  PIPERT_NCCL(ncclCommInitRank(&world_, group.worldSize, id, group.rank), nullptr);
  owned_.push_back(world_);
  forgetUniqueId(group); // every rank has joined, so every rank has read it
  splitChannels(program);
  splitSyncGroups(program);
  connectChannels();
}

NcclTransport::~NcclTransport() {
  for (ncclComm_t comm : owned_)
    ncclCommDestroy(comm); // no check: destructors must not throw
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
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.minCTAs = 1;
  config.maxCTAs = 2;
  for (const std::vector<size_t> &round : splitRounds(members)) {
    int color = NCCL_SPLIT_NOCOLOR, key = 0;
    for (size_t item : round)
      if (members[item][0] == rank_ || members[item][1] == rank_) {
        color = int(item);
        key = members[item][0] == rank_ ? 0 : 1; // the sender is rank 0 of the channel
      }
    ncclComm_t comm = nullptr;
    PIPERT_NCCL(ncclCommSplit(world_, color, key, &comm, &config), world_);
    if (color != NCCL_SPLIT_NOCOLOR) {
      owned_.push_back(comm);
      channels_[keys[size_t(color)]] = {comm, 1 - key};
    }
  }
}

void NcclTransport::splitSyncGroups(const Program &program) {
  std::vector<std::vector<int>> members;
  for (uint32_t g = 0; g < program.numSyncGroups; ++g) {
    const SyncGroupTable &group = program.syncGroups[g];
    std::set<int> ranks(group.ranks, group.ranks + group.size);
    members.emplace_back(ranks.begin(), ranks.end());
  }
  for (const std::vector<size_t> &round : splitRounds(members)) {
    int color = NCCL_SPLIT_NOCOLOR;
    for (size_t item : round)
      if (std::count(members[item].begin(), members[item].end(), rank_))
        color = int(item);
    ncclComm_t comm = nullptr;
    PIPERT_NCCL(ncclCommSplit(world_, color, rank_, &comm, nullptr), world_);
    if (color != NCCL_SPLIT_NOCOLOR) {
      owned_.push_back(comm);
      syncGroups_[uint32_t(color)] = comm;
    }
  }
}

// One byte each way on every channel, in a single group: the connections are
// made here, together, instead of lazily in whatever order the step reaches them.
void NcclTransport::connectChannels() {
  cudaStream_t stream;
  PIPERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  char *bytes = nullptr;
  PIPERT_CUDA(cudaMalloc(&bytes, std::max<size_t>(channels_.size(), 1)));
  PIPERT_NCCL(ncclGroupStart(), nullptr);
  size_t slot = 0;
  for (auto &[key, end] : channels_) {
    bool sender = int(key >> 33) == rank_;
    if (sender)
      PIPERT_NCCL(ncclSend(bytes + slot, 1, ncclUint8, end.peer, end.comm, stream), end.comm);
    else
      PIPERT_NCCL(ncclRecv(bytes + slot, 1, ncclUint8, end.peer, end.comm, stream), end.comm);
    ++slot;
  }
  PIPERT_NCCL(ncclGroupEnd(), nullptr);
  PIPERT_CUDA(cudaStreamSynchronize(stream));
  PIPERT_CUDA(cudaFree(bytes));
  PIPERT_CUDA(cudaStreamDestroy(stream));
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
  PIPERT_NCCL(ncclGroupStart(), nullptr);
  PIPERT_NCCL(ncclSend(data, bytes, ncclUint8, end.peer, end.comm, stream), end.comm);
  PIPERT_NCCL(ncclGroupEnd(), end.comm);
  PIPERT_CUDA(cudaFreeAsync(data, stream));
}

void *NcclTransport::receive(uint32_t id, size_t bytes, cudaStream_t stream) {
  const Endpoint &end = endpoint(id);
  void *buffer = nullptr;
  PIPERT_CUDA(cudaMallocAsync(&buffer, bytes, stream));
  PIPERT_NCCL(ncclGroupStart(), nullptr);
  PIPERT_NCCL(ncclRecv(buffer, bytes, ncclUint8, end.peer, end.comm, stream), end.comm);
  PIPERT_NCCL(ncclGroupEnd(), end.comm);
  return buffer;
}

void NcclTransport::beginGroup() { PIPERT_NCCL(ncclGroupStart(), nullptr); }
void NcclTransport::endGroup() { PIPERT_NCCL(ncclGroupEnd(), nullptr); }

void NcclTransport::allReduce(uint32_t group, float *data, size_t count, cudaStream_t stream) {
  auto it = syncGroups_.find(group);
  if (it == syncGroups_.end())
    throw CudaError("rank " + std::to_string(rank_) + " is not in gradient-sync group " +
                    std::to_string(group));
  PIPERT_NCCL(ncclAllReduce(data, data, count, ncclFloat, ncclSum, it->second, stream), it->second);
}

void NcclTransport::allReduceWorld(double *data, cudaStream_t stream) {
  PIPERT_NCCL(ncclAllReduce(data, data, 1, ncclDouble, ncclSum, world_, stream), world_);
}

void NcclTransport::poll() {
  for (ncclComm_t comm : owned_) {
    ncclResult_t state = ncclSuccess;
    PIPERT_NCCL(ncclCommGetAsyncError(comm, &state), comm);
    if (state != ncclSuccess && state != ncclInProgress)
      throwNcclError("an asynchronous NCCL operation", state, comm, __FILE__, __LINE__);
  }
}

void NcclTransport::abort() {
  for (ncclComm_t comm : owned_)
    ncclCommAbort(comm);
  owned_.clear(); // aborted communicators must not be destroyed as well
}

} // namespace pipert::cuda
