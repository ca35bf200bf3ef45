// The command line of an emitted CUDA program.
#pragma once

#include "Launcher.h"

#include "pipert/cuda/GpuStage.h"

#include <cstdint>
#include <string>

namespace pipert::cuda {

enum class TransportKind { InProcess, Nccl };
enum class ModelKind { Mlp, Moe, Empty };

struct CudaOptions {
  int steps = 1;
  int hidden = 16;         // (defaults: pipert/SharedOptions.h)
  int seq = 8;             // tokens per micro-batch (one sequence)
  ModelKind model = ModelKind::Mlp;
  DType dtype = DType::F32;
  TransportKind transport = TransportKind::InProcess; // nccl under a launcher of several
  bool transportGiven = false;
  LaunchFlags launch;      // --rank, --world-size, --local-rank, --master-addr, --master-port
  bool graphs = false;     // --cuda-graphs: capture the step once, replay it
  bool serialPairs = false; // --serial-pairs: run overlap pairs' halves one after the other
  int ep = 1;              // --ep: pipeline replicas sharding the MoE experts (nccl, world P x ep)
  bool check = false;
  double tolerance = -1;
  std::string tracePath;
  uint64_t seed = 1;
  double timeoutSeconds = 60;
};

// Parses argv; on error or --help prints and returns false with `status` set.
bool parseCudaOptions(int argc, char **argv, CudaOptions &options, int &status);

} // namespace pipert::cuda
