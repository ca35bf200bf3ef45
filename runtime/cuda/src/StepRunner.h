// The training loop of a CUDA program: builds the ranks, runs the steps (eager,
// or captured once into a CUDA graph and replayed), times them, and checks the
// result. StepRunner.cpp runs steps; StepResults.cpp reads back and checks
// what they leave. CudaRun.cpp is the entry point.
#pragma once

#include "CudaHandles.h"
#include "CudaOptions.h"
#include "Deadline.h"
#include "NcclTransport.h"
#include "RankExecutor.h"

#include "pipert/Batch.h"
#include "pipert/Gradients.h"
#include "pipert/Model.h"
#include "pipert/Trace.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

namespace pipert::cuda {

class StepRunner {
public:
  StepRunner(const Program &program, const StreamProgram &streams, const CudaOptions &options,
             int devices);
  int run(); // the exit status

private:
  struct StepTimes {
    double hostMicros = 0; // enqueue (eager) or graph launch
    double totalMicros = 0; // launch to completion
  };

  ModelSpec modelSpec() const;
  BatchSpec batchSpec() const; // every replica's micro-batches, with the schedule's sizes
  void buildRanks();
  void sizeTransfers();
  void uploadData();
  void enqueueStep(bool timing, bool measure = true);
  StepTimes eagerStep(bool timing);
  StepTimes graphStep();
  void waitForStep(const char *what);
  void syncGradients();
  double loss();
  GradientSet<double> gradients();
  int check(double loss, const GradientSet<double> &gradients);
  std::vector<OpTiming> timings();
  int64_t totalOps() const;
  std::string whichRank() const;
  void printGradientSquares();
  bool reportActivations() const;

  // Declared in the order they are made, so they go in reverse: the ranks
  // before the transport and the streams their work runs on.
  const Program &program_;
  const StreamProgram &streams_;
  const CudaOptions &options_;
  ProcessGroup group_;
  bool nccl_;
  // This process's pipeline rank and expert-parallel replica (NCCL: world
  // rank g is pipeline rank g % P of replica g / P).
  int pipelineRank_ = 0, replica_ = 0;
  int device_ = 0; // this process's CUDA device
  cudaMemPool_t pool_ = nullptr; // the device's default pool
  UniqueStream origin_;
  UniqueEvent fork_, done_, stepStart_;
  std::vector<DeviceMemory> data_; // inputs and targets, referenced by shared_
  StepInputs shared_;
  std::unique_ptr<Transport> transport_;
  NcclTransport *ncclTransport_ = nullptr; // transport_, when it is NCCL
  std::vector<std::unique_ptr<RankExecutor>> ranks_;
  UniqueGraphExec graph_;
  std::vector<int64_t> eagerPeaks_; // per entry of ranks_: the most activations an eager step stored
  bool peaksMatch_ = true;
};

} // namespace pipert::cuda
