// Polled waits on NCCL and CUDA work. Communicators are non-blocking
// (ncclConfig_t::blocking = 0): an init, a split or a group call may return
// ncclInProgress, and the host must poll ncclCommGetAsyncError until the
// communicator leaves that state. These waits poll, back off, check every
// communicator involved for an asynchronous error, and stop at a deadline.
#pragma once

#include "Deadline.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>
#include <string>
#include <vector>

namespace pipert::cuda {

// Whether every communicator has finished its pending work (none is
// ncclInProgress). Throws CudaError when one reports an error.
bool communicatorsReady(const std::vector<ncclComm_t> &comms);

// Polls `ready` (sleeping a little longer each time, up to 10 ms) until it
// returns true, checking `comms` for asynchronous errors in between. At the
// deadline throws TimeoutError: "timed out after T s waiting for WHAT: HINT".
// Aborting the communicators is the caller's part.
void waitPolling(const std::function<bool()> &ready, const std::vector<ncclComm_t> &comms,
                 const Deadline &deadline, const std::string &what, const std::string &hint);

// Waits until every communicator is ready (after an init, a split or a group call).
void awaitCommunicators(const std::vector<ncclComm_t> &comms, const Deadline &deadline,
                        const std::string &what, const std::string &hint);

// Waits until `stream` has run everything enqueued on it, polling `comms` too.
void awaitStream(cudaStream_t stream, const std::vector<ncclComm_t> &comms,
                 const Deadline &deadline, const std::string &what, const std::string &hint);

} // namespace pipert::cuda
