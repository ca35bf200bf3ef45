// The expert-parallel all-to-all over NCCL: one communicator per expert group
// (split from the world by NcclTransport), every exchange one group of
// ncclSend/ncclRecv calls enqueued on the caller's stream -- the expert stream
// in an overlap pair, so the transfer runs under the other half's compute.
// Fixed sizes (see ExpertExchange.h): no counts are exchanged first.
#pragma once

#include "pipert/cuda/ExpertExchange.h"

#include <nccl.h>

#include <functional>
#include <string>

namespace pipert::cuda {

class NcclExpertExchange final : public ExpertExchange {
public:
  // `comm` (owned elsewhere, outliving this) has one rank per participant;
  // `what` names the group in errors. A group call NCCL has not taken within
  // timeoutSeconds calls `abortAll` (nothing may stay blocked on a peer) and
  // throws TimeoutError.
  NcclExpertExchange(ncclComm_t comm, int rank, int size, double timeoutSeconds, std::string what,
                     std::function<void()> abortAll)
      : comm_(comm), rank_(rank), size_(size), timeoutSeconds_(timeoutSeconds),
        what_(std::move(what)), abortAll_(std::move(abortAll)) {}

  int size() const override { return size_; }
  int rank() const override { return rank_; }
  void allToAll(const void *send, Layout sendLayout, void *recv, Layout recvLayout, size_t pieces,
                size_t pieceBytes, cudaStream_t stream) override;

private:
  ncclComm_t comm_;
  int rank_, size_;
  double timeoutSeconds_;
  std::string what_;
  std::function<void()> abortAll_;
};

} // namespace pipert::cuda
