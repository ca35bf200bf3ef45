#include "NcclWait.h"

#include "pipert/cuda/CudaCheck.h"

#include <algorithm>
#include <thread>

namespace pipert::cuda {

bool communicatorsReady(const std::vector<ncclComm_t> &comms) {
  bool ready = true;
  for (ncclComm_t comm : comms) {
    if (!comm)
      continue;
    ncclResult_t state = ncclSuccess;
    PIPERT_NCCL(ncclCommGetAsyncError(comm, &state), comm);
    if (state == ncclInProgress)
      ready = false;
    else if (state != ncclSuccess)
      throwNcclError("an asynchronous NCCL operation", state, comm, __FILE__, __LINE__);
  }
  return ready;
}

void waitPolling(const std::function<bool()> &ready, const std::vector<ncclComm_t> &comms,
                 const Deadline &deadline, const std::string &what, const std::string &hint) {
  // Short waits stay short; long ones cost little: 20 us doubling to 10 ms.
  std::chrono::microseconds pause(20);
  for (;;) {
    if (ready())
      return;
    communicatorsReady(comms); // throws on an asynchronous error
    if (deadline.passed())
      throw TimeoutError(deadline.timedOut(what) + (hint.empty() ? "" : ": " + hint));
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

void awaitCommunicators(const std::vector<ncclComm_t> &comms, const Deadline &deadline,
                        const std::string &what, const std::string &hint) {
  waitPolling([&] { return communicatorsReady(comms); }, {}, deadline, what, hint);
}

void awaitStream(cudaStream_t stream, const std::vector<ncclComm_t> &comms,
                 const Deadline &deadline, const std::string &what, const std::string &hint) {
  waitPolling(
      [&] {
        cudaError_t state = cudaStreamQuery(stream);
        if (state != cudaSuccess && state != cudaErrorNotReady)
          throwCudaError("cudaStreamQuery", state, __FILE__, __LINE__);
        return state == cudaSuccess;
      },
      comms, deadline, what, hint);
}

} // namespace pipert::cuda
