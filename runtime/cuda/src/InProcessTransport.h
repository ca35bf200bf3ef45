// Every rank in this process on one GPU: a send records an event after its
// data is ready; the receive waits for that event on the receiving channel
// stream and copies device to device into a fresh buffer, then frees the
// sender's buffer, all stream-ordered. The host must enqueue the send before
// the receive (a CUDA wait on an event not yet recorded does not wait), which
// canReceive tells the executor.
#pragma once

#include "CudaHandles.h"
#include "Transport.h"

#include <vector>

namespace pipert::cuda {

class InProcessTransport final : public Transport {
public:
  explicit InProcessTransport(uint32_t numMessages);
  const char *name() const override { return "in-process"; }
  void send(uint32_t id, void *data, size_t bytes, cudaStream_t stream) override;
  bool canReceive(uint32_t id) const override { return pending_[id].sent; }
  size_t sentBytes(uint32_t id) const override;
  void *receive(uint32_t id, size_t bytes, cudaStream_t stream) override;
  void beginStep() override;
  // Every copy is in this process: summed into the first and copied back.
  void syncGradients(const std::vector<LocalSyncGroup> &groups, double *loss,
                     cudaStream_t stream) override;

private:
  struct Pending {
    void *data = nullptr; // the sender's buffer, until the receive frees it
    size_t bytes = 0;
    bool sent = false;
  };
  std::vector<UniqueEvent> sent_;
  std::vector<Pending> pending_;
};

} // namespace pipert::cuda
