// runCudaProgram: what an emitted CUDA program's main() does. It sets up the
// ranks this process runs (all of them on one GPU with the in-process
// transport, or its own with NCCL), enqueues each training step from the
// stream programs, waits for it while polling for asynchronous errors and a
// timeout, optionally captures the step into a CUDA graph and replays it, and
// with --check compares the loss and every gradient with the fp64 CPU reference.
#include "pipert/CudaProgram.h"

#include "CudaOptions.h"
#include "InProcessTransport.h"
#include "NcclTransport.h"
#include "RankExecutor.h"
#include "StepRunner.h"

#include "pipert/cuda/CudaCheck.h"

#include <cstdio>

namespace pipert {

using namespace pipert::cuda;

int runCudaProgram(const Program &program, const StreamProgram &streams, int argc, char **argv) {
  CudaOptions options;
  int status = 0;
  if (!parseCudaOptions(argc, argv, options, status))
    return status;
  int devices = 0;
  cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "pipert: no CUDA device (%s); nothing to run\n",
                 probe != cudaSuccess ? cudaGetErrorString(probe) : "none found");
    return 77;
  }
  try {
    StepRunner runner(program, streams, options, devices);
    return runner.run();
  } catch (const StepTimeout &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return 3;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return 2;
  }
}

} // namespace pipert
