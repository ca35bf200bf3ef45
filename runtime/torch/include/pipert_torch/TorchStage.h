// TorchStage<T>: a pipeline stage whose computation is a user's PyTorch module
// (or the four parts of one: attention, dispatch, mlp, combine), run through
// LibTorch with autograd.
//   F  runs the module(s) with autograd on and keeps, per micro-batch, each
//      part's inputs and outputs (the graph hangs off them);
//   I  is the gradient with respect to the stage input only, graph kept;
//   W  is the gradient with respect to the parameters, added to the runtime's
//      gradient tensors; the graph and saved tensors are then released;
//   B  is both in one backward pass, releasing the graph.
// Parts: each part's floating inputs are fresh leaves, so the backward runs
// part by part, Combine first, as Stage.h's protocol orders it. A whole module
// runs in the Attention step of the forward and the Combine step of the
// backward, as SimpleStage does.
//
// Parameters: the runtime's Tensor<T> value of each parameter IS the module's
// parameter storage (the module's tensor is re-pointed at it at load), so the
// optimizer, checkpoints and gradient sync act on the module directly. The
// first stage computes no input gradient (nothing upstream needs it): its
// gradInput is zeros.
#pragma once

#include "pipert/Stage.h"
#include "pipert_torch/ModuleLoader.h"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pipert::torchstage {

template <typename T>
class TorchStage final : public Stage<T> {
public:
  // `modules`: one whole module, or the four parts in forward order.
  TorchStage(std::vector<std::unique_ptr<StageModule>> modules, StageInit init);

  std::string describe() const override;
  std::vector<Parameter<T>> parameters() override;

private:
  struct Bound {
    std::string name;
    Tensor<T> value, grad;
    torch::Tensor param;    // the module's parameter, stored in `value`
    torch::Tensor gradView; // `grad` as a torch tensor
    size_t module = 0;
  };
  struct PartState {
    std::vector<torch::Tensor> inputs, outputs, gradOutputs, gradInputs;
  };
  using MicroBatch = std::vector<PartState>; // one per module

  void runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) override;
  void runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                       WeightGrad when) override;
  void runBackwardWeight(int mb) override;
  void releaseMicroBatch(int mb) override;

  void forwardModule(int mb, size_t k, const Tensor<T> &input, Tensor<T> &output);
  void backwardModule(int mb, size_t k, const Tensor<T> &gradOutput, Tensor<T> &gradInput, WeightGrad when);
  void addWeightGrads(size_t k, const std::vector<torch::Tensor> &grads, size_t first);
  void bindParameters();
  std::string where(int mb, size_t k) const;

  // Declared before modules_: the modules' parameters point into these.
  std::deque<Bound> params_;
  std::vector<std::vector<size_t>> paramsOf_; // module -> indices into params_
  std::vector<std::unique_ptr<StageModule>> modules_;
  std::map<int, MicroBatch> live_;
};

extern template class TorchStage<float>;
extern template class TorchStage<double>;

// Loads stage `stageIndex` of `numStages` from `dir` with `loader`: DIR/stage_<s>.pt,
// else the four DIR/stage_<s>.<part>.pt. Throws std::invalid_argument for a
// missing directory or file, a file of another stage count, stage or dtype, or
// a module exported for another sequence length than `sequenceLength` (--seq).
template <typename T>
std::unique_ptr<Stage<T>> loadTorchStage(const ModuleLoader &loader, const std::string &dir, int stageIndex,
                                         int numStages, int tokens, int sequenceLength, uint64_t seed);

} // namespace pipert::torchstage
