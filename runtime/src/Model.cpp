// makeStage and friends (see Model.h).
#include "pipert/Model.h"

#include <stdexcept>

namespace pipert {

ModelSpec builtinModel(int stages, uint64_t seed, int hidden, bool moe, bool attention) {
  ModelSpec model;
  model.seed = seed;
  for (int s = 0; s < stages; ++s) {
    StageSpec spec;
    if (moe) {
      spec.kind = StageKind::Moe;
      spec.moe = MoeConfig{hidden, 2 * hidden, 4, 2, attention};
    } else {
      spec.dense = DenseConfig{hidden, 4 * hidden, attention};
    }
    model.stages.push_back(spec);
  }
  return model;
}

ModelSpec providedModel(const StageProvider &provider, int stages, StageRequest request) {
  ModelSpec model;
  model.seed = request.seed;
  model.provider = &provider;
  model.request = std::move(request);
  model.request.numStages = stages;
  return model;
}

// What the runtime relies on in a stage's parameters: the reference check,
// gradient sync and checkpoints pair copies by name and step them in place.
template <typename T> static void checkParameters(const std::string &who, Stage<T> &stage) {
  std::vector<Parameter<T>> params = stage.parameters();
  for (size_t p = 0; p < params.size(); ++p) {
    const Parameter<T> &param = params[p];
    std::string what = who + ": parameter " + std::to_string(p) + " ('" + param.name + "')";
    if (param.name.empty())
      throw std::invalid_argument(what + " has no name");
    if (!param.value || !param.grad)
      throw std::invalid_argument(what + " has no value or no gradient tensor");
    if (!param.grad->sameShape(*param.value))
      throw std::invalid_argument(what + " is " + param.value->shapeString() + " but its gradient is " +
                                  param.grad->shapeString());
    if (param.expertSharded)
      throw std::invalid_argument(what + " is marked expert-sharded; only the built-in MoE stages shard");
    for (size_t q = 0; q < p; ++q)
      if (params[q].name == param.name)
        throw std::invalid_argument(what + " has the name of parameter " + std::to_string(q));
  }
}

// A user stage, checked for what the executors rely on.
template <typename T>
static std::unique_ptr<Stage<T>> makeProvidedStage(const ModelSpec &model, int stageIndex) {
  const StageProvider &provider = *model.provider;
  const std::string who = "stage provider '" + provider.name + "'";
  const StageMaker<T> &make = stageMaker<T>(provider);
  if (!make)
    throw std::invalid_argument(who + " has no " + (sizeof(T) == 4 ? "fp32" : "fp64") + " stages");
  StageRequest request = model.request;
  request.stageIndex = stageIndex;
  std::unique_ptr<Stage<T>> stage = make(request);
  if (!stage)
    throw std::invalid_argument(who + " built no stage " + std::to_string(stageIndex) + " (null)");
  if (stage->stageIndex() != stageIndex)
    throw std::invalid_argument(who + " built stage " + std::to_string(stage->stageIndex()) +
                                " when asked for stage " + std::to_string(stageIndex));
  checkParameters(who + ", stage " + std::to_string(stageIndex), *stage);
  return stage;
}

template <typename T>
std::unique_ptr<Stage<T>> makeStage(const ModelSpec &model, int stageIndex, std::shared_ptr<AllToAll<T>> comm) {
  if (stageIndex < 0 || stageIndex >= model.numStages())
    throw std::invalid_argument("stage index " + std::to_string(stageIndex) + " outside a model of " +
                                std::to_string(model.numStages()) + " stages");
  if (model.provider)
    return makeProvidedStage<T>(model, stageIndex);
  const StageSpec &spec = model.stages[static_cast<size_t>(stageIndex)];
  const StageInit init{model.seed, stageIndex};
  if (spec.kind == StageKind::Dense)
    return std::make_unique<DenseStage<T>>(spec.dense, init);
  return std::make_unique<MoeStage<T>>(spec.moe, init, std::move(comm));
}

template <typename T> std::vector<std::unique_ptr<Stage<T>>> makeAllStages(const ModelSpec &model) {
  std::vector<std::unique_ptr<Stage<T>>> stages;
  for (int s = 0; s < model.numStages(); ++s)
    stages.push_back(makeStage<T>(model, s));
  return stages;
}

template <typename T> std::vector<Stage<T> *> stagePointers(const std::vector<std::unique_ptr<Stage<T>>> &stages) {
  std::vector<Stage<T> *> out;
  for (const auto &s : stages)
    out.push_back(s.get());
  return out;
}

#define PIPERT_INSTANTIATE_MODEL(T)                                                                \
  template std::unique_ptr<Stage<T>> makeStage<T>(const ModelSpec &, int, std::shared_ptr<AllToAll<T>>); \
  template std::vector<std::unique_ptr<Stage<T>>> makeAllStages<T>(const ModelSpec &);            \
  template std::vector<Stage<T> *> stagePointers<T>(const std::vector<std::unique_ptr<Stage<T>>> &);

PIPERT_INSTANTIATE_MODEL(float)
PIPERT_INSTANTIATE_MODEL(double)

} // namespace pipert
