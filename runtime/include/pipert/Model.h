// ModelSpec and makeStage: one description of the whole model, from which the
// reference and every rank of an emitted program build their stage objects.
// Building stage s twice (two parameter copies of a DualPipe stage, or the
// reference's copy) gives identical weights: both use StageInit{seed, s}.
#pragma once

#include "pipert/AllToAll.h"
#include "pipert/DenseStage.h"
#include "pipert/MoeStage.h"
#include "pipert/StageRegistry.h"

#include <memory>
#include <vector>

namespace pipert {

enum class StageKind { Dense, Moe };

struct StageSpec {
  StageKind kind = StageKind::Dense;
  DenseConfig dense; // used when kind == Dense
  MoeConfig moe;     // used when kind == Moe
  int hidden() const { return kind == StageKind::Dense ? dense.hidden : moe.hidden; }
};

struct ModelSpec {
  uint64_t seed = 0;
  std::vector<StageSpec> stages; // stage s is stages[s]
  // A user's model (StageRegistry.h): when set, every stage comes from the
  // provider, asked with `request` and the stage's index; `stages` is unused.
  const StageProvider *provider = nullptr;
  StageRequest request;
  int numStages() const { return provider ? request.numStages : static_cast<int>(stages.size()); }
};

// The built-in model of emitted programs (CPU and CUDA alike): `stages` stages,
// each dense (attention optional, MLP 4h wide) or MoE (attention optional, 4
// experts 2h wide, top-2 routing), all of hidden size h.
ModelSpec builtinModel(int stages, uint64_t seed, int hidden, bool moe, bool attention);

// `stages` stages from `provider` (request.stageIndex is set per stage).
ModelSpec providedModel(const StageProvider &provider, int stages, StageRequest request);

// Stage `stageIndex` of `model`; comm is used by MoE stages (null: local).
// Throws std::invalid_argument for an index outside the model or a bad config,
// and for a provider's stage that is missing, has another index, or lists
// parameters without a unique name or with a gradient shaped unlike its value.
template <typename T>
std::unique_ptr<Stage<T>> makeStage(const ModelSpec &model, int stageIndex,
                                    std::shared_ptr<AllToAll<T>> comm = nullptr);

// Every stage, each with a single-participant all-to-all (the reference's view).
template <typename T>
std::vector<std::unique_ptr<Stage<T>>> makeAllStages(const ModelSpec &model);

// Non-owning view, as Reference takes it.
template <typename T>
std::vector<Stage<T> *> stagePointers(const std::vector<std::unique_ptr<Stage<T>>> &stages);

} // namespace pipert
