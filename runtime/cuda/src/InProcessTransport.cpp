#include "InProcessTransport.h"

#include "GradientSync.h"

#include "pipert/cuda/CudaCheck.h"

namespace pipert::cuda {

InProcessTransport::InProcessTransport(uint32_t numMessages) : pending_(numMessages) {
  sent_.reserve(numMessages);
  for (uint32_t id = 0; id < numMessages; ++id)
    sent_.push_back(makeEvent());
}

void InProcessTransport::beginStep() {
  for (Pending &p : pending_)
    p = Pending();
}

void InProcessTransport::send(uint32_t id, void *data, size_t bytes, cudaStream_t stream) {
  PIPERT_CUDA(cudaEventRecord(sent_[id], stream));
  pending_[id] = {data, bytes, true};
}

size_t InProcessTransport::sentBytes(uint32_t id) const {
  if (!pending_[id].sent)
    throw CudaError("in-process transport: the size of message " + std::to_string(id) +
                    " is asked before it was sent");
  return pending_[id].bytes;
}

void *InProcessTransport::receive(uint32_t id, size_t bytes, cudaStream_t stream) {
  Pending &p = pending_[id];
  if (!p.sent || !p.data || p.bytes != bytes)
    throw CudaError("in-process transport: message " + std::to_string(id) +
                    (!p.sent   ? " was received before it was sent"
                     : !p.data ? " was received twice"
                               : " has the wrong size"));
  void *buffer = nullptr;
  PIPERT_CUDA(cudaStreamWaitEvent(stream, sent_[id], 0));
  PIPERT_CUDA(cudaMallocAsync(&buffer, bytes, stream));
  PIPERT_CUDA(cudaMemcpyAsync(buffer, p.data, bytes, cudaMemcpyDeviceToDevice, stream));
  PIPERT_CUDA(cudaFreeAsync(p.data, stream));
  p.data = nullptr;
  return buffer;
}

void InProcessTransport::syncGradients(const std::vector<LocalSyncGroup> &groups, double *,
                                       cudaStream_t stream) {
  sumLocalCopies(groups, stream);
  copyFirstToOthers(groups, stream);
}

} // namespace pipert::cuda
