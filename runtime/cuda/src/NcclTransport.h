// One pipeline rank per process over NCCL. Communicators, all split from the
// world communicator in rounds every rank derives from the same tables:
//   - one two-rank communicator per channel (sender, receiver, kind), as the
//     deadlock check's model has it: a channel's sends and receives are
//     matched in order, and never queue behind another channel's;
//   - one per gradient-sync group of a replicated stage, for ncclAllReduce.
// Every first connection is made at start-up in one group call, so no rank's
// host ever blocks connecting while its peer connects a different channel.
#pragma once

#include "Bootstrap.h"
#include "Transport.h"

#include "pipert/Program.h"

#include <map>
#include <vector>

namespace pipert::cuda {

class NcclTransport final : public Transport {
public:
  NcclTransport(const Program &program, const ProcessGroup &group, double timeoutSeconds);
  ~NcclTransport() override;
  const char *name() const override { return "nccl"; }

  void send(uint32_t id, void *data, size_t bytes, cudaStream_t stream) override;
  bool canReceive(uint32_t) const override { return true; }
  void *receive(uint32_t id, size_t bytes, cudaStream_t stream) override;
  void poll() override;
  void abort() override;

  // Sums `count` floats in place over sync group `group`'s ranks (this rank
  // must be in it). Several calls between begin/endGroup form one NCCL group.
  void beginGroup();
  void allReduce(uint32_t group, float *data, size_t count, cudaStream_t stream);
  void endGroup();
  // Sums one double over every rank (the step's loss).
  void allReduceWorld(double *data, cudaStream_t stream);

private:
  struct Endpoint {
    ncclComm_t comm = nullptr;
    int peer = 0; // the other end's rank in `comm`
  };
  void splitChannels(const Program &program);
  void splitSyncGroups(const Program &program);
  void connectChannels();
  const Endpoint &endpoint(uint32_t message) const;

  int rank_;
  ncclComm_t world_ = nullptr;
  std::vector<ncclComm_t> owned_;        // every communicator, for poll and abort
  std::map<uint64_t, Endpoint> channels_; // channel key -> this rank's end
  std::vector<uint64_t> messageChannel_;  // message id -> channel key
  std::map<uint32_t, ncclComm_t> syncGroups_;
};

} // namespace pipert::cuda
