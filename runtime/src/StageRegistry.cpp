// The stage provider registry (see StageRegistry.h). Function-local statics,
// so registration from other translation units' static initialisers is safe
// whatever their order.
#include "pipert/StageRegistry.h"

#include <cctype>
#include <map>
#include <stdexcept>

namespace pipert {

static std::map<std::string, StageProvider> &providers() {
  static std::map<std::string, StageProvider> registry;
  return registry;
}

static std::vector<std::string> &registrationErrors() {
  static std::vector<std::string> errors;
  return errors;
}

// A name that reads as one word on a command line and in messages.
static bool wellFormedName(const std::string &name) {
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return false;
  return !name.empty();
}

bool registerStageProvider(StageProvider provider) {
  const std::string &name = provider.name;
  if (name.empty())
    throw std::invalid_argument("a stage provider has an empty name");
  if (name == "mlp" || name == "moe" || name == "empty")
    throw std::invalid_argument("stage provider name '" + name + "' is a built-in model's");
  if (!wellFormedName(name))
    throw std::invalid_argument("stage provider name '" + name +
                                "' may hold only letters, digits, '_', '-' and '.'");
  if (!provider.makeFloat && !provider.makeDouble)
    throw std::invalid_argument("stage provider '" + name + "' builds no stages (no fp32 or fp64 maker)");
  if (providers().count(name))
    throw std::invalid_argument("stage provider '" + name + "' is registered twice");
  providers().emplace(name, std::move(provider));
  return true;
}

bool registerStageProviderAtStartup(StageProvider provider) noexcept {
  try {
    return registerStageProvider(std::move(provider));
  } catch (const std::exception &e) {
    try {
      registrationErrors().push_back(e.what());
    } catch (...) { // out of memory before main: nothing better to do
    }
    return false;
  }
}

std::vector<std::string> stageRegistrationErrors() { return registrationErrors(); }

const StageProvider *findStageProvider(const std::string &name) {
  auto it = providers().find(name);
  return it == providers().end() ? nullptr : &it->second;
}

std::vector<std::string> stageProviderNames() {
  std::vector<std::string> names;
  for (const auto &entry : providers())
    names.push_back(entry.first);
  return names; // std::map keeps them sorted
}

} // namespace pipert
