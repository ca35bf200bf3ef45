// ModuleLoader for TorchScript files (torch.jit.save). The graph executor's
// optimisations are off in every thread that runs a module (see
// TorchStage.cpp's thread set-up): an optimised graph appears only after some
// profiling runs, so two copies of a stage that ran different numbers of
// micro-batches could round differently.
#include "pipert_torch/ModuleLoader.h"

#include <torch/script.h>

#include <set>
#include <stdexcept>

namespace pipert::torchstage {

namespace {

class TorchScriptModule final : public StageModule {
public:
  TorchScriptModule(torch::jit::Module module, ModuleInfo info)
      : module_(std::move(module)), info_(std::move(info)) {}

  const ModuleInfo &info() const override { return info_; }

  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor> &inputs) override {
    std::vector<torch::jit::IValue> args(inputs.begin(), inputs.end());
    torch::jit::IValue result = module_.forward(args);
    std::vector<torch::Tensor> outputs;
    if (result.isTensor()) {
      outputs.push_back(result.toTensor());
    } else if (result.isTuple()) {
      for (const torch::jit::IValue &element : result.toTupleRef().elements()) {
        if (!element.isTensor())
          throw std::invalid_argument("stage " + std::to_string(info_.stageIndex) + " (" + info_.part +
                                      "): the module returned a tuple holding a " +
                                      element.tagKind() + "; only tensors can pass between parts");
        outputs.push_back(element.toTensor());
      }
    } else {
      throw std::invalid_argument("stage " + std::to_string(info_.stageIndex) + " (" + info_.part +
                                  "): the module returned a " + result.tagKind() +
                                  ", expected a tensor or a tuple of tensors");
    }
    return outputs;
  }

  std::vector<std::pair<std::string, torch::Tensor>> parameters() override {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    std::set<const void *> seen;
    for (const auto &named : module_.named_parameters(/*recurse=*/true))
      if (named.value.requires_grad() && seen.insert(named.value.unsafeGetTensorImpl()).second)
        out.emplace_back(named.name, named.value);
    return out;
  }

private:
  torch::jit::Module module_;
  ModuleInfo info_;
};

class TorchScriptLoader final : public ModuleLoader {
public:
  const char *format() const override { return "TorchScript"; }
  const char *extension() const override { return ".pt"; }

  std::unique_ptr<StageModule> load(const std::string &path) const override {
    torch::jit::ExtraFilesMap extra{{"pipec.txt", ""}};
    torch::jit::Module module;
    try {
      module = torch::jit::load(path, torch::kCPU, extra);
    } catch (const c10::Error &e) {
      std::string what = e.what_without_backtrace();
      throw std::invalid_argument("cannot load " + path + " as TorchScript: " +
                                  what.substr(0, what.find('\n')));
    }
    ModuleInfo info = parseModuleInfo(extra["pipec.txt"], path);
    return std::make_unique<TorchScriptModule>(std::move(module), std::move(info));
  }
};

} // namespace

std::unique_ptr<ModuleLoader> torchScriptLoader() { return std::make_unique<TorchScriptLoader>(); }

} // namespace pipert::torchstage
