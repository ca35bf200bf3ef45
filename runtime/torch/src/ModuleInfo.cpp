// pipec.txt, the exporter's record beside each module: plain "key=value" lines
// (no JSON parser in the runtime). Unknown keys are ignored so that a newer
// exporter's files still load; missing required keys are errors.
#include "pipert_torch/ModuleLoader.h"

#include <sstream>
#include <stdexcept>

namespace pipert::torchstage {

namespace {

int parseInt(const std::string &key, const std::string &value, const std::string &file) {
  try {
    size_t used = 0;
    long long v = std::stoll(value, &used);
    if (used == value.size() && v >= -1 && v <= (1LL << 30))
      return int(v);
  } catch (const std::exception &) {
  }
  throw std::invalid_argument(file + ": pipec.txt: " + key + "=" + value + " is not a small integer");
}

} // namespace

ModuleInfo parseModuleInfo(const std::string &text, const std::string &file) {
  ModuleInfo info;
  std::istringstream lines(text);
  std::string line;
  bool sawFormat = false;
  while (std::getline(lines, line)) {
    size_t eq = line.find('=');
    if (line.empty() || eq == std::string::npos)
      continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "format") {
      if (value != "1")
        throw std::invalid_argument(file + ": exported with format " + value +
                                    ", this runtime reads format 1: export it again");
      sawFormat = true;
    } else if (key == "stage") {
      info.stageIndex = parseInt(key, value, file);
    } else if (key == "stages") {
      info.numStages = parseInt(key, value, file);
    } else if (key == "part") {
      info.part = value;
    } else if (key == "dtype") {
      info.dtype = value;
    } else if (key == "input_kind") {
      info.tokenIds = value == "token_ids";
    } else if (key == "input_width") {
      info.inputWidth = parseInt(key, value, file);
    } else if (key == "output_width") {
      info.outputWidth = parseInt(key, value, file);
    } else if (key == "input_shape") {
      std::istringstream dims(value);
      std::string dim;
      while (std::getline(dims, dim, ','))
        info.inputShape.push_back(parseInt(key, dim, file));
    }
  }
  if (!sawFormat || info.stageIndex < 0 || info.numStages <= 0 || info.part.empty() ||
      (info.dtype != "float32" && info.dtype != "float64"))
    throw std::invalid_argument(file + ": no complete pipec.txt record (format, stage, stages, part, "
                                "dtype): export the module with runtime/torch/pipec_torch_export.py");
  return info;
}

} // namespace pipert::torchstage
