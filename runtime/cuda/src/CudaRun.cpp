// runCudaProgram: what an emitted CUDA program's main() does: parse the
// options, set what must be set before the first CUDA call, exit 77 without a
// device, and hand over to StepRunner (the ranks this process runs, the steps,
// graphs, the check), turning its failures into exit statuses.
#include "pipert/CudaProgram.h"

#include "CudaOptions.h"
#include "StepRunner.h"

#include "pipert/ProgramEncoding.h"
#include "pipert/ExitStatus.h"
#include "pipert/ProgramValidation.h"
#include "pipert/cuda/CudaCheck.h"

#include <cstdio>
#include <cstdlib>

namespace pipert {

using namespace pipert::cuda;

namespace {

// Settings that must be in place before the first CUDA call; a value the user
// exported wins.
void configureEnvironment(const CudaOptions &options) {
  // A rank has more streams (compute, expert, one per channel) than CUDA's
  // default 8 hardware queues: with fewer, unrelated streams serialize, and a
  // stream may queue behind a receive kernel that spins until its peer sends.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  if (options.transport == TransportKind::Nccl) {
    // Lazy kernel loading may synchronize the context while NCCL receive
    // kernels spin waiting for a peer: load every kernel up front.
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    // Send and receive buffers of a captured step are graph memory, which NCCL
    // need not register: it copies through its own buffers instead.
    if (options.graphs)
      setenv("NCCL_GRAPH_REGISTER", "0", 0);
  }
}

// The name of the first Evict/Hold/Return/Load in the program, or null. Both
// transports run them; with --ep > 1 the probe that sizes a transfer message
// over NCCL (StepRunner::sizeTransfers) would need the expert exchange.
const char *firstTransfer(const Program &program) {
  for (int32_t r = 0; r < program.numRanks; ++r)
    for (uint32_t i = 0; i < program.ranks[r].numOps; ++i) {
      OpCode kind = program.ranks[r].ops[i].kind;
      if (isMemoryOp(kind) && kind != OpCode::Offload && kind != OpCode::Reload)
        return opCodeName(kind);
    }
  return nullptr;
}

} // namespace

int runCudaProgram(const Program &program, const StreamProgram &streams, int argc, char **argv) {
  CudaOptions options;
  int status = 0;
  if (!parseCudaOptions(argc, argv, options, status))
    return status;
  // Before the device probe: a bad table is exit 2 on any machine.
  try {
    validateProgram(program, streams);
  } catch (const InvalidProgram &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return kExitUsage;
  }
  const char *transfer = firstTransfer(program);
  if (transfer && options.ep > 1) {
    std::fprintf(stderr,
                 "pipert: error: this program moves activations between ranks (%s); BPipe's "
                 "transfers do not run with expert parallelism yet (--ep %d): run it with --ep 1\n",
                 transfer, options.ep);
    return kExitUsage;
  }
  configureEnvironment(options);
  int devices = 0;
  cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "pipert: no CUDA device (%s); nothing to run\n",
                 probe != cudaSuccess ? cudaGetErrorString(probe) : "none found");
    return kExitNoDevice;
  }
  // The exit statuses --help lists: a timeout (3) and a device or library
  // error (4) apart from a bad setting or environment (2).
  try {
    StepRunner runner(program, streams, options, devices);
    return runner.run();
  } catch (const TimeoutError &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return kExitTimeout;
  } catch (const CudaError &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return kExitDeviceError;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return kExitUsage;
  }
}

int runEncodedCudaProgram(const char *text, size_t size, int argc, char **argv) {
  ProgramData data;
  int status = startEncodedProgram(text, size, argc, argv, data, "emit it with --target cuda");
  if (status >= 0)
    return status;
  ProgramView view(data);
  return runCudaProgram(view.program(), view.streams(), argc, argv);
}

} // namespace pipert
