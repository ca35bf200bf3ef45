#include "frontend/InputTranslator.h"

#include <mutex>
#include <utility>
#include <vector>

namespace pipec {

namespace {

// Registered once at start-up, read by every compilation (some on worker threads).
struct Registry {
  std::mutex mutex;
  std::vector<std::pair<std::string, InputTranslator>> translators;
};

Registry &registry() {
  static Registry instance;
  return instance;
}

} // namespace

void registerInputTranslator(llvm::StringRef extension, InputTranslator translate) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().translators.emplace_back(extension.lower(), translate);
}

InputTranslator inputTranslatorFor(llvm::StringRef path) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  for (const auto &[extension, translate] : registry().translators)
    if (path.endswith_insensitive(extension))
      return translate;
  return nullptr;
}

} // namespace pipec
