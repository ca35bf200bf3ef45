// Stages the user brings. A stage provider is a named factory, linked into an
// emitted program, that builds stage s of the user's model: a C++ class written
// against Stage.h (examples/custom_stage/), or exported PyTorch modules loaded
// through LibTorch (runtime/torch/). `--model NAME` selects it at run time and
// `--model-path PATH` hands it its files.
//
// A provider must build identical stages for identical requests: the two
// parameter copies of a DualPipe stage and the reference's copy are built
// separately and must start bit-identical.
#pragma once

#include "pipert/Stage.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pipert {

struct StageRequest {
  int stageIndex = 0;
  int numStages = 1;
  uint64_t seed = 0;     // --seed
  int hidden = 0;        // --hidden
  int tokens = 0;        // rows of one micro-batch: --seq * --micro-batch-size
  int sequenceLength = 0; // --seq
  std::string path;      // --model-path (empty when not given)
};

template <typename T> using StageMaker = std::function<std::unique_ptr<Stage<T>>(const StageRequest &)>;

struct StageProvider {
  std::string name;        // what --model selects; not mlp, moe or empty
  std::string description; // one line for --help and the run's banner
  StageMaker<float> makeFloat;
  StageMaker<double> makeDouble;
  bool needsPath = false;  // --model-path is required
};

// Adds `provider`; returns true so that a namespace-scope static can call it
// before main. Throws std::invalid_argument for an empty or built-in name, a
// name registered twice, or a provider with no makers.
bool registerStageProvider(StageProvider provider);

// The provider called `name`, or null.
const StageProvider *findStageProvider(const std::string &name);

// Registered names, sorted (for messages).
std::vector<std::string> stageProviderNames();

template <typename T> const StageMaker<T> &stageMaker(const StageProvider &provider);

} // namespace pipert

// Registers a provider from a source file linked into the program:
//   PIPERT_REGISTER_STAGES(myProvider());
#define PIPERT_REGISTER_STAGES_CAT2(a, b) a##b
#define PIPERT_REGISTER_STAGES_CAT(a, b) PIPERT_REGISTER_STAGES_CAT2(a, b)
#define PIPERT_REGISTER_STAGES(provider)                                                          \
  static const bool PIPERT_REGISTER_STAGES_CAT(pipertStageProvider_, __LINE__) =               \
      ::pipert::registerStageProvider(provider)
