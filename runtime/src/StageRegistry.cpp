// The stage provider registry (see StageRegistry.h). A function-local map, so
// registration from other translation units' static initialisers is safe.
#include "pipert/StageRegistry.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace pipert {

static std::map<std::string, StageProvider> &providers() {
  static std::map<std::string, StageProvider> registry;
  return registry;
}

bool registerStageProvider(StageProvider provider) {
  const std::string &name = provider.name;
  if (name.empty() || name == "mlp" || name == "moe" || name == "empty")
    throw std::invalid_argument("stage provider name '" + name + "' is empty or a built-in model");
  if (!provider.makeFloat && !provider.makeDouble)
    throw std::invalid_argument("stage provider '" + name + "' builds no stages");
  if (!providers().emplace(name, std::move(provider)).second)
    throw std::invalid_argument("stage provider '" + name + "' is registered twice");
  return true;
}

const StageProvider *findStageProvider(const std::string &name) {
  auto it = providers().find(name);
  return it == providers().end() ? nullptr : &it->second;
}

std::vector<std::string> stageProviderNames() {
  std::vector<std::string> names;
  for (const auto &[name, provider] : providers())
    names.push_back(name);
  return names; // std::map keeps them sorted
}

template <> const StageMaker<float> &stageMaker<float>(const StageProvider &provider) {
  return provider.makeFloat;
}
template <> const StageMaker<double> &stageMaker<double>(const StageProvider &provider) {
  return provider.makeDouble;
}

} // namespace pipert
