// Stages the user brings. A stage provider is a named factory, linked into an
// emitted program, that builds stage s of the user's model: a C++ class written
// against Stage.h or SimpleStage.h (examples/custom_stage/, linked with `pipec
// build --stage-source FILE.cpp`), or exported PyTorch modules loaded through
// LibTorch (runtime/torch/). `--model NAME` selects it at run time and
// `--model-path PATH` hands it its files.
//
//   std::unique_ptr<Stage<double>> makeMine(const StageRequest &r) { ... r.init() ... }
//   StageProvider mine() { return {"mine", "my model", makeMine<float>, makeMine<double>}; }
//   PIPERT_REGISTER_STAGES(mine());
//
// A provider must build identical stages for identical requests: the two
// parameter copies of a DualPipe stage and the reference's copy are built
// separately and must start bit-identical. The stages it builds are checked
// (makeStage in Model.h): the index asked for, parameters with unique names and
// gradients shaped like their values. A maker may throw std::invalid_argument
// (a bad --model-path, a width it cannot take): the program prints the message
// and exits 2. Stage s's output width must be stage s+1's input width; with the
// runtime's data, stage 0 takes and the last stage gives --hidden columns.
#pragma once

#include "pipert/Stage.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace pipert {

struct StageRequest {
  int stageIndex = 0;
  int numStages = 1;
  uint64_t seed = 0;      // --seed
  int hidden = 0;         // --hidden
  int tokens = 0;         // rows of one micro-batch: --seq * --micro-batch-size
  int sequenceLength = 0; // --seq
  std::string path;       // --model-path (empty when not given)

  // What the stage's initial parameters may depend on (Stage.h's StageInit).
  StageInit init() const { return StageInit{seed, stageIndex}; }
};

template <typename T> using StageMaker = std::function<std::unique_ptr<Stage<T>>(const StageRequest &)>;

struct StageProvider {
  std::string name;        // what --model selects: letters, digits, '_', '-', '.'; not mlp, moe or empty
  std::string description; // one line for the run's messages
  StageMaker<float> makeFloat;   // --dtype fp32 (may be empty: the provider has no fp32 stages)
  StageMaker<double> makeDouble; // --dtype fp64 (likewise)
  bool needsPath = false;  // --model-path is required
};

// Adds `provider` and returns true. Throws std::invalid_argument for an empty,
// malformed or built-in name, a name registered twice, or a provider with no
// makers.
bool registerStageProvider(StageProvider provider);

// What PIPERT_REGISTER_STAGES calls before main: registers `provider`, or, where
// registerStageProvider would throw (an exception there would end the program
// before main could report it), records the message for
// stageRegistrationErrors(). Returns whether it was registered.
bool registerStageProviderAtStartup(StageProvider provider) noexcept;

// The messages of registrations that failed, in order; a program with any
// refuses to run (exit 2, naming them).
std::vector<std::string> stageRegistrationErrors();

// The provider called `name`, or null.
const StageProvider *findStageProvider(const std::string &name);

// Registered names, sorted (for messages).
std::vector<std::string> stageProviderNames();

template <typename T> const StageMaker<T> &stageMaker(const StageProvider &provider) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "stages are fp32 or fp64");
  if constexpr (std::is_same_v<T, float>)
    return provider.makeFloat;
  else
    return provider.makeDouble;
}

} // namespace pipert

// Registers a provider from a source file linked into the program, at namespace
// scope (the file must be linked as an object, as `pipec build --stage-source`
// does, not from an archive, where an unreferenced file is dropped):
//   PIPERT_REGISTER_STAGES(myProvider());
#define PIPERT_REGISTER_STAGES_CAT2(a, b) a##b
#define PIPERT_REGISTER_STAGES_CAT(a, b) PIPERT_REGISTER_STAGES_CAT2(a, b)
#define PIPERT_REGISTER_STAGES(provider)                                                          \
  static const bool PIPERT_REGISTER_STAGES_CAT(pipertStageProvider_, __LINE__) =               \
      ::pipert::registerStageProviderAtStartup(provider)
