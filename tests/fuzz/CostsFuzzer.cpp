// libFuzzer target: any bytes as a `--costs` JSON file, then each accepted cost
// through the parser of `--cost NAME[STAGE]=V` as the user would write it.
// Whatever the bytes, the reader returns costs or an error: no crash, no
// exhausted stack (deep nesting), no unbounded memory.
#include "cost/CostInput.h"

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace pipec;
  std::string error;
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto costs = parseCostsJson(text, "fuzz.json", error);
  if (!costs) {
    if (error.empty())
      std::abort(); // a refusal must say why
    return 0;
  }
  for (const CostOverride &cost : *costs) {
    if (!std::isfinite(cost.value) || cost.value < 0 || !isKnownCost(cost.name))
      std::abort(); // the reader lets through only what the cost model accepts
    std::string flag = cost.name + (cost.stage >= 0 ? fmt::format("[{}]", cost.stage) : "") +
                       fmt::format("={}", cost.value);
    if (!parseCostOverride(flag, error))
      std::abort(); // what the file accepts, the flag accepts too
  }
  return 0;
}
