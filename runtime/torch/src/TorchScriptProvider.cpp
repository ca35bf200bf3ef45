// The stage provider `torchscript`: `--model torchscript --model-path DIR` runs
// the modules pipec_torch_export.py wrote into DIR. Linked whole into programs
// built with `pipec build --stages torchscript`, so this registration runs.
#include "pipert/StageRegistry.h"
#include "pipert_torch/TorchStage.h"

namespace pipert::torchstage {
namespace {

template <typename T> StageMaker<T> maker() {
  return [](const StageRequest &r) {
    return loadTorchStage<T>(*torchScriptLoader(), r.path, r.stageIndex, r.numStages, r.tokens, r.sequenceLength,
                             r.seed);
  };
}

StageProvider torchScriptProvider() {
  StageProvider provider;
  provider.name = "torchscript";
  provider.description = "PyTorch modules exported with runtime/torch/pipec_torch_export.py (TorchScript)";
  provider.makeFloat = maker<float>();
  provider.makeDouble = maker<double>();
  provider.needsPath = true;
  return provider;
}

} // namespace
} // namespace pipert::torchstage

PIPERT_REGISTER_STAGES(pipert::torchstage::torchScriptProvider());
