// One pipeline rank per process over NCCL. Communicators, all split from the
// world communicator in rounds every rank derives from the same tables:
//   - one two-rank communicator per channel (sender, receiver, kind), as the
//     deadlock check's model has it: a channel's sends and receives are
//     matched in order, and never queue behind another channel's;
//   - one per gradient-sync group of a replicated stage, for ncclAllReduce;
//   - with expert parallelism (N pipeline replicas), one per expert group: the
//     (rank, chunk) slot in every replica, for the MoE all-to-alls and for
//     summing the replicated weights' gradients over the replicas.
// World rank g runs pipeline rank g % P of replica g / P (world = P x N):
// replica e's channels and sync groups are its own, split apart by color.
// Every first connection is made at start-up in one group call, so no rank's
// host ever blocks connecting while its peer connects a different channel.
//
// Never a hang in set-up: every communicator is non-blocking, so init, each
// split and each group call return at once (ncclInProgress) and the host polls
// ncclCommGetAsyncError against the --timeout deadline (NcclWait.h). A wait
// that times out aborts every communicator (ncclCommAbort) and throws
// TimeoutError naming what it waited for; so does an asynchronous error on any
// communicator (poll, or a wait): every one is aborted before any is
// destroyed, since destroying one can block on a peer that died. Every group
// call is an NcclGroup, ended even when an exception leaves it.
#pragma once

#include "Bootstrap.h"
#include "CudaHandles.h"
#include "Transport.h"

#include "pipert/Program.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pipert::cuda {

class NcclTransport final : public Transport {
public:
  // `replicas`: the pipeline replicas of expert parallelism (--ep), 1 without.
  NcclTransport(const Program &program, const ProcessGroup &group, double timeoutSeconds,
                int replicas = 1);
  ~NcclTransport() override;
  const char *name() const override { return "nccl"; }
  // The expert group of this rank's chunk `chunk` (needs replicas > 1).
  std::shared_ptr<ExpertExchange> expertExchange(int chunk);

  void send(uint32_t id, void *data, size_t bytes, cudaStream_t stream) override;
  bool canReceive(uint32_t) const override { return true; }
  // The peer's send is in another process: StepRunner::sizeTransfers
  // measures BPipe's transfer messages before any step, so nothing asks.
  size_t sentBytes(uint32_t id) const override;
  void *receive(uint32_t id, size_t bytes, cudaStream_t stream) override;
  // Sums each group's local copies, all-reduces the sum over the group's
  // ranks, and the loss over the world, in one NCCL group.
  void syncGradients(const std::vector<LocalSyncGroup> &groups, double *loss,
                     cudaStream_t stream) override;
  void syncReplicas(const std::map<int, std::vector<DeviceGradient>> &byChunk,
                    cudaStream_t stream) override;
  void poll() override;
  void abort() override;

private:
  struct Endpoint {
    ncclComm_t comm = nullptr;
    int peer = 0; // the other end's rank in `comm`
  };
  void initWorld(const ncclUniqueId &id);
  void splitChannels(const Program &program);
  void splitSyncGroups(const Program &program);
  void splitExpertGroups(const Program &program);
  // One round of ncclCommSplit; returns this rank's new communicator or null.
  ncclComm_t split(int color, int key, ncclConfig_t &config, const std::string &what);
  void connectChannels();
  // After a group call on `comms`: waits (polling, to the deadline) until NCCL
  // has taken it, when it answered ncclInProgress.
  void settle(ncclResult_t groupEnd, const std::vector<ncclComm_t> &comms,
              const std::string &what);
  const Endpoint &endpoint(uint32_t message) const;
  std::string whoAmI() const; // "rank 3 (world 8)"
  void forgetCommunicators();  // the maps into communicators that are gone

  int rank_, worldSize_;
  int pipelineRank_, replica_, replicas_;
  double timeoutSeconds_;
  UniqueComm world_;
  std::vector<UniqueComm> owned_;         // split communicators, for poll and abort
  std::map<uint64_t, Endpoint> channels_; // channel key -> this rank's end
  std::vector<uint64_t> messageChannel_;  // message id -> channel key
  std::map<uint32_t, ncclComm_t> syncGroups_;
  std::map<int, ncclComm_t> expertGroups_; // by chunk
};

} // namespace pipert::cuda
