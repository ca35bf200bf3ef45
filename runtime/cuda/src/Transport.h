// How a rank's point-to-point messages travel. The executor hands a transport
// each Send and Receive command on the channel's stream; the transport enqueues
// the transfer there, stream-ordered, so the host never waits on the GPU.
//   InProcessTransport: every rank in this process on one GPU (NCCL refuses
//     two ranks on one device); a receive is a device-to-device copy ordered
//     after the send by an event.
//   NcclTransport: one rank per process; each channel is its own two-rank
//     communicator, every send and receive an ncclSend/ncclRecv in a group.
// After a step the transport also sums a replicated stage's gradients over its
// copies (DualPipe, Chimera): in-process every copy is local; over NCCL the
// copies on other ranks are summed with an all-reduce.
#pragma once

#include "pipert/cuda/GpuStage.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipert::cuda {

// A gradient-sync group's copies held in this process: copies[k][p] is
// parameter p's gradient in the k-th local copy (all copies shaped alike).
struct LocalSyncGroup {
  uint32_t group = 0; // index into Program::syncGroups
  std::vector<std::vector<DeviceGradient>> copies;
};

class Transport {
public:
  virtual ~Transport() = default;
  virtual const char *name() const = 0;
  // Message `id` leaves `data` (bytes long, allocated stream-ordered); the
  // transport owns it from now on and frees it once it is sent.
  virtual void send(uint32_t id, void *data, size_t bytes, cudaStream_t stream) = 0;
  // Whether the receive of `id` can be enqueued: the host has enqueued its send
  // (in-process), or always (NCCL: the peer's stream handles it).
  virtual bool canReceive(uint32_t id) const = 0;
  // The byte size of message `id` as its send gave it (BPipe's transfer
  // messages: the packed stored buffers, which only the sender's stage
  // knows). Only a transport that has seen the send can tell.
  virtual size_t sentBytes(uint32_t id) const = 0;
  // A fresh buffer (stream-ordered) that holds message `id` once `stream` gets there.
  virtual void *receive(uint32_t id, size_t bytes, cudaStream_t stream) = 0;
  // Called before every step (in-process: forget the previous step's sends).
  virtual void beginStep() {}
  // Enqueued on `stream` after a step's work: every copy of each group's
  // stages ends with the sum over all copies, wherever they run, and `loss`
  // (this process's share, on the device) with the whole step's loss.
  virtual void syncGradients(const std::vector<LocalSyncGroup> &groups, double *loss,
                             cudaStream_t stream) = 0;
  // With expert parallelism, enqueued after syncGradients: each local stage's
  // gradients (by chunk), experts' excepted, summed over that (rank, chunk)
  // slot in every pipeline replica. One replica: nothing to do.
  virtual void syncReplicas(const std::map<int, std::vector<DeviceGradient>> &, cudaStream_t) {}
  // Throws CudaError when the transport saw an asynchronous failure.
  virtual void poll() {}
  // Makes any blocked transfer fail instead of hanging (ncclCommAbort).
  virtual void abort() {}
};

} // namespace pipert::cuda
