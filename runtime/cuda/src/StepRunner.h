// The training loop of a CUDA program: builds the ranks, runs the steps (eager,
// or captured once into a CUDA graph and replayed), times them, and checks the
// result. StepRunner.cpp runs steps; StepResults.cpp reads back and checks
// what they leave. CudaRun.cpp is the entry point.
#pragma once

#include "CudaOptions.h"
#include "NcclTransport.h"
#include "RankExecutor.h"

#include "pipert/Gradients.h"
#include "pipert/Model.h"
#include "pipert/Trace.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

namespace pipert::cuda {

// A step that made no progress within --timeout (after ncclCommAbort).
struct StepTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class StepRunner {
public:
  StepRunner(const Program &program, const StreamProgram &streams, const CudaOptions &options,
             int devices);
  ~StepRunner();
  int run(); // the exit status

private:
  struct StepTimes {
    double hostMicros = 0; // enqueue (eager) or graph launch
    double totalMicros = 0; // launch to completion
  };

  ModelSpec modelSpec() const;
  void buildRanks();
  void uploadData();
  void enqueueStep(bool timing);
  StepTimes eagerStep(bool timing);
  StepTimes graphStep();
  void waitForStep(const char *what);
  void syncGradients();
  double loss();
  GradientSet<double> gradients();
  int check(double loss, const GradientSet<double> &gradients);
  std::vector<OpTiming> timings();
  int64_t totalOps() const;

  const Program &program_;
  const StreamProgram &streams_;
  const CudaOptions &options_;
  ProcessGroup group_;
  bool nccl_;
  StepInputs shared_;
  std::unique_ptr<Transport> transport_;
  NcclTransport *ncclTransport_ = nullptr; // transport_ when it is NCCL
  std::vector<std::unique_ptr<RankExecutor>> ranks_;
  cudaMemPool_t pool_ = nullptr; // the device's default pool
  cudaStream_t origin_ = nullptr;
  cudaEvent_t fork_ = nullptr, done_ = nullptr, stepStart_ = nullptr;
  cudaGraphExec_t graph_ = nullptr;
};

} // namespace pipert::cuda
