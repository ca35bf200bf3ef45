#include "InProcessTransport.h"

#include "pipert/cuda/CudaCheck.h"

namespace pipert::cuda {

InProcessTransport::InProcessTransport(uint32_t numMessages)
    : sent_(numMessages, nullptr), pending_(numMessages) {
  for (cudaEvent_t &event : sent_)
    PIPERT_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
}

InProcessTransport::~InProcessTransport() {
  for (cudaEvent_t event : sent_)
    if (event)
      cudaEventDestroy(event); // no check: destructors must not throw
}

void InProcessTransport::beginStep() {
  for (Pending &p : pending_)
    p = Pending();
}

void InProcessTransport::send(uint32_t id, void *data, size_t bytes, cudaStream_t stream) {
  PIPERT_CUDA(cudaEventRecord(sent_[id], stream));
  pending_[id] = {data, bytes, true};
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

} // namespace pipert::cuda
