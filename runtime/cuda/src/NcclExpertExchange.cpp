#include "NcclExpertExchange.h"

#include "NcclGroup.h"
#include "NcclWait.h"

#include "pipert/cuda/CudaCheck.h"

namespace pipert::cuda {

// A peer's pieces go as one message when they are together at both ends, else
// piece by piece: NCCL matches a peer's sends and receives in order, so both
// ends must cut the bytes alike (every participant passes the same layouts).
void NcclExpertExchange::allToAll(const void *send, Layout sendLayout, void *recv,
                                  Layout recvLayout, size_t pieces, size_t pieceBytes,
                                  cudaStream_t stream) {
  const bool whole = pieces == 1 || (sendLayout == Layout::PeerMajor && recvLayout == Layout::PeerMajor);
  const size_t calls = whole ? 1 : pieces, bytes = whole ? pieces * pieceBytes : pieceBytes;
  const char *from = static_cast<const char *>(send);
  char *to = static_cast<char *>(recv);
  NcclGroup group;
  for (int p = 0; p < size_; ++p)
    for (size_t i = 0; i < calls; ++i) {
      PIPERT_NCCL(ncclSend(from + pieceOffset(sendLayout, p, i, size_, pieces) * pieceBytes, bytes,
                           ncclUint8, p, comm_, stream),
                  comm_);
      PIPERT_NCCL(ncclRecv(to + pieceOffset(recvLayout, p, i, size_, pieces) * pieceBytes, bytes,
                           ncclUint8, p, comm_, stream),
                  comm_);
    }
  ncclResult_t ended = group.end();
  PIPERT_NCCL(ended, comm_);
  if (ended != ncclInProgress)
    return;
  try {
    awaitCommunicators({comm_}, Deadline(timeoutSeconds_), "the expert all-to-all of " + what_,
                       "a peer of the expert group may have died or be running a different program");
  } catch (...) { // a timeout, or an asynchronous error
    abortAll_();
    throw;
  }
}

} // namespace pipert::cuda
