// sharedProgramOptions (see pipert/SharedOptions.h).
#include "pipert/SharedOptions.h"

#include <cmath>
#include <cstring>

namespace pipert {

std::vector<OptionSpec> sharedProgramOptions() {
  using K = OptionKind;
  return {
      {"steps", K::Integer, "N", "1", 1, 1000000, "training steps to run"},
      {"hidden", K::Integer, "H", "16", 1, 65536, "hidden size"},
      {"seq", K::Integer, "S", "8", 1, 1 << 20, "tokens per sequence"},
      {"model", K::Text, "mlp|moe|empty|NAME", "mlp", 0, 0,
       "stage type; empty: ops do no work, to time the runtime itself;\n"
       "NAME: a stage provider linked into the program (the user's model)"},
      {"model-path", K::Text, "PATH", nullptr, 0, 0, "files of the stage provider (e.g. exported modules)"},
      {"check", K::Flag, "", nullptr, 0, 0,
       "compare the loss and every gradient with a single-device reference"},
      {"tolerance", K::Number, "X", nullptr, 0, INFINITY,
       "relative error --check allows (default per dtype: 1e-4 fp32,\n1e-10 fp64, 5e-2 bf16)"},
      {"trace", K::Text, "FILE", nullptr, 0, 0,
       "write a Chrome/Perfetto trace of the last step, drawn as\n`pipec sim --trace` draws it: a slice per op, an arrow per message"},
      {"seed", K::Integer, "N", "1", 0, 4611686018427387904.0, "initialization and data seed"},
      {"timeout", K::Number, "SECONDS", "60", 0, kMaxTimeoutSeconds,
       "watchdog: give up when a rank (or, on CUDA, a step) makes no\nprogress for this long"},
  };
}

std::vector<OptionSpec> withOwnOptions(const std::vector<OptionSpec> &own) {
  std::vector<OptionSpec> table = sharedProgramOptions();
  auto afterModel = table.begin();
  while (afterModel != table.end() && std::strcmp(afterModel->name, "model-path") != 0)
    ++afterModel;
  table.insert(afterModel + 1, own.begin(), own.end());
  return table;
}

} // namespace pipert
