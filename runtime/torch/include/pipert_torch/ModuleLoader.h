// The one place that knows how exported modules are stored. A TorchStage talks
// to a StageModule (run, list parameters, read what the exporter recorded) and
// never to TorchScript itself, so that a loader of torch.export programs can
// replace torchScriptLoader() without touching the stage: TorchScript ships in
// torch 2.15 but is deprecated.
#pragma once

#include <torch/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pipert::torchstage {

// What pipec_torch_export.py records beside each module (pipec.txt inside the file).
struct ModuleInfo {
  int stageIndex = -1;
  int numStages = 0;
  std::string part;           // "whole", or attention / dispatch / mlp / combine
  std::string dtype;          // "float32" or "float64": the parameters' and activations' dtype
  std::vector<int64_t> inputShape; // first part: the module's input, batch dimension -1
  bool tokenIds = false;      // first part: the runtime's column of ids enters as int64
  int inputWidth = 0;         // first part: columns of the runtime's input
  int outputWidth = 0;        // last part: columns of the runtime's output
};

class StageModule {
public:
  virtual ~StageModule() = default;
  virtual const ModuleInfo &info() const = 0;
  // A tuple result is flattened; the next part takes its elements as arguments.
  virtual std::vector<torch::Tensor> forward(const std::vector<torch::Tensor> &inputs) = 0;
  // Trainable parameters, each once (tied weights appear under their first name).
  virtual std::vector<std::pair<std::string, torch::Tensor>> parameters() = 0;
};

class ModuleLoader {
public:
  virtual ~ModuleLoader() = default;
  virtual const char *format() const = 0;    // for messages: "TorchScript"
  virtual const char *extension() const = 0; // ".pt"
  // Throws std::invalid_argument naming the file for one that cannot be loaded.
  virtual std::unique_ptr<StageModule> load(const std::string &path) const = 0;
};

std::unique_ptr<ModuleLoader> torchScriptLoader();

// Parses pipec.txt ("key=value" lines); throws std::invalid_argument naming `file`.
ModuleInfo parseModuleInfo(const std::string &text, const std::string &file);

} // namespace pipert::torchstage
