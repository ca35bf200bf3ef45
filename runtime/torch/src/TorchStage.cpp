// TorchStage<T> (see TorchStage.h).
#include "pipert_torch/TorchStage.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace pipert::torchstage {

namespace {

template <typename T> torch::ScalarType scalarType() {
  return sizeof(T) == sizeof(double) ? torch::kFloat64 : torch::kFloat32;
}

// Once per thread that runs a module: one intra-op thread (the pipeline runs a
// thread per rank and stream already, and a fixed count keeps reductions
// bit-reproducible; $PIPERT_TORCH_THREADS overrides it), and the graph
// executor's optimisations off (TorchScriptLoader.cpp says why). Both settings
// are per thread in LibTorch.
void prepareThread() {
  thread_local bool ready = false;
  if (ready)
    return;
  ready = true;
  int threads = 1;
  if (const char *text = std::getenv("PIPERT_TORCH_THREADS"))
    threads = std::max(1, std::atoi(text));
  at::set_num_threads(threads);
  torch::jit::setGraphExecutorOptimize(false);
}

template <typename T> torch::Tensor toTorch(const Tensor<T> &t) {
  return torch::from_blob(const_cast<T *>(t.data()), {int64_t(t.rows()), int64_t(t.cols())}, scalarType<T>())
      .clone();
}

template <typename T> void copyInto(const torch::Tensor &src, Tensor<T> &dst) {
  torch::Tensor c = src.detach().contiguous();
  dst.reset(size_t(c.size(0)), size_t(c.size(1)));
  std::memcpy(dst.data(), c.data_ptr<T>(), dst.size() * sizeof(T));
}

template <typename T> torch::Tensor viewOf(Tensor<T> &t, c10::IntArrayRef sizes) {
  return torch::from_blob(t.data(), sizes, scalarType<T>());
}

// Output i of a part with its incoming gradient, when both take part in autograd.
void differentiable(const std::vector<torch::Tensor> &outputs, const std::vector<torch::Tensor> &gradOutputs,
                    std::vector<torch::Tensor> &outs, std::vector<torch::Tensor> &grads) {
  for (size_t i = 0; i < outputs.size() && i < gradOutputs.size(); ++i)
    if (outputs[i].requires_grad() && gradOutputs[i].defined()) {
      outs.push_back(outputs[i]);
      grads.push_back(gradOutputs[i]);
    }
}

} // namespace

template <typename T>
TorchStage<T>::TorchStage(std::vector<std::unique_ptr<StageModule>> modules, StageInit init)
    : Stage<T>("torch", modules.front()->info().inputWidth, modules.back()->info().outputWidth, init),
      modules_(std::move(modules)) {
  paramsOf_.resize(modules_.size());
  for (size_t k = 0; k < modules_.size(); ++k)
    for (auto &[name, param] : modules_[k]->parameters()) {
      if (param.scalar_type() != scalarType<T>())
        throw std::invalid_argument(where(-1, k) + ": parameter " + name + " is " +
                                    std::string(c10::toString(param.scalar_type())) +
                                    ", the run's dtype is " + c10::toString(scalarType<T>()));
      Bound &b = params_.emplace_back();
      b.name = modules_.size() == 1 ? name : modules_[k]->info().part + "." + name;
      b.module = k;
      size_t rows = param.dim() > 0 ? size_t(param.size(0)) : 1;
      size_t cols = rows > 0 ? size_t(param.numel()) / rows : 0;
      b.value.reset(rows, cols);
      b.grad.reset(rows, cols);
      std::memcpy(b.value.data(), param.detach().contiguous().template data_ptr<T>(), b.value.size() * sizeof(T));
      b.param = param;
      b.gradView = viewOf(b.grad, param.sizes());
      paramsOf_[k].push_back(params_.size() - 1);
    }
  bindParameters();
}

// Points every module parameter at its runtime tensor; again if the runtime
// ever reallocated one (assignment of a whole Tensor<T>).
template <typename T> void TorchStage<T>::bindParameters() {
  torch::NoGradGuard noGrad;
  for (Bound &b : params_) {
    if (b.param.data_ptr() != static_cast<void *>(b.value.data()))
      b.param.set_(viewOf(b.value, b.param.sizes()));
    if (b.gradView.data_ptr() != static_cast<void *>(b.grad.data()))
      b.gradView = viewOf(b.grad, b.param.sizes());
  }
}

template <typename T> std::string TorchStage<T>::where(int mb, size_t k) const {
  std::string text = "stage " + std::to_string(this->stageIndex());
  if (modules_.size() > 1)
    text += " (" + modules_[k]->info().part + ")";
  if (mb >= 0)
    text += ", micro-batch " + std::to_string(mb);
  return text;
}

template <typename T> std::string TorchStage<T>::describe() const {
  size_t values = 0;
  for (const Bound &b : params_)
    values += b.value.size();
  return std::string("torch(") + (modules_.size() == 1 ? "whole module" : "4 parts") + ", " +
         std::to_string(params_.size()) + " parameters, " + std::to_string(values) + " values)";
}

template <typename T> std::vector<Parameter<T>> TorchStage<T>::parameters() {
  std::vector<Parameter<T>> out;
  for (Bound &b : params_)
    out.push_back(Parameter<T>{b.name, &b.value, &b.grad, false});
  return out;
}

template <typename T>
void TorchStage<T>::runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) {
  if (modules_.size() == 1) {
    if (part == SubOp::Attention)
      forwardModule(mb, 0, input, output);
    return;
  }
  forwardModule(mb, size_t(forwardPosition(part)), input, output);
}

template <typename T>
void TorchStage<T>::runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                                    WeightGrad when) {
  if (modules_.size() == 1) {
    if (part == SubOp::Combine)
      backwardModule(mb, 0, gradOutput, gradInput, when);
    return;
  }
  backwardModule(mb, size_t(forwardPosition(part)), gradOutput, gradInput, when);
}

template <typename T>
void TorchStage<T>::forwardModule(int mb, size_t k, const Tensor<T> &input, Tensor<T> &output) {
  prepareThread();
  MicroBatch &state = live_[mb];
  if (state.empty())
    state.resize(modules_.size());
  PartState &ps = state[k];
  const ModuleInfo &info = modules_[k]->info();
  std::vector<torch::Tensor> args;
  try {
    if (k == 0) {
      bindParameters();
      torch::Tensor x = toTorch(input);
      if (this->stageIndex() > 0 && !info.tokenIds)
        x.requires_grad_(true);
      ps.inputs = {x};
      args = {(info.tokenIds ? x.to(torch::kLong) : x).reshape(info.inputShape)};
    } else {
      for (const torch::Tensor &t : state[k - 1].outputs) {
        torch::Tensor leaf = t.detach();
        if (leaf.is_floating_point())
          leaf.requires_grad_(true);
        ps.inputs.push_back(leaf);
      }
      args = ps.inputs;
    }
    ps.outputs = modules_[k]->forward(args);
  } catch (const c10::Error &e) {
    std::string what = e.what_without_backtrace();
    throw std::runtime_error(where(mb, k) + ": forward failed: " + what.substr(0, what.find('\n')));
  }
  if (k + 1 < modules_.size())
    return;
  const int width = this->outputWidth();
  if (ps.outputs.size() != 1)
    throw std::runtime_error(where(mb, k) + ": the module returned " + std::to_string(ps.outputs.size()) +
                             " tensors; the last part must return one");
  torch::Tensor y = ps.outputs[0];
  const int64_t rows = state[0].inputs[0].size(0);
  if (y.scalar_type() != scalarType<T>() || y.numel() != rows * width)
    throw std::runtime_error(where(mb, k) + ": the module returned " + c10::toString(y.scalar_type()) +
                             " " + c10::str(y.sizes()) + ", expected " + c10::toString(scalarType<T>()) +
                             " holding " + std::to_string(rows) + " x " + std::to_string(width) + " values");
  ps.outputs[0] = y.reshape({rows, width});
  copyInto(ps.outputs[0], output);
}

template <typename T>
void TorchStage<T>::addWeightGrads(size_t k, const std::vector<torch::Tensor> &grads, size_t first) {
  torch::NoGradGuard noGrad;
  for (size_t j = 0; j < paramsOf_[k].size(); ++j)
    if (grads[first + j].defined())
      params_[paramsOf_[k][j]].gradView.add_(grads[first + j]);
}

template <typename T>
void TorchStage<T>::backwardModule(int mb, size_t k, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                                   WeightGrad when) {
  prepareThread();
  MicroBatch &state = live_.at(mb);
  PartState &ps = state[k];
  ps.gradOutputs = k + 1 == modules_.size() ? std::vector<torch::Tensor>{toTorch(gradOutput)}
                                            : state[k + 1].gradInputs;
  std::vector<torch::Tensor> outs, grads, wrt;
  differentiable(ps.outputs, ps.gradOutputs, outs, grads);
  for (const torch::Tensor &x : ps.inputs)
    if (x.requires_grad())
      wrt.push_back(x);
  const size_t numInputs = wrt.size();
  if (when == WeightGrad::Now)
    for (size_t i : paramsOf_[k])
      wrt.push_back(params_[i].param);
  std::vector<torch::Tensor> result;
  try {
    if (!outs.empty() && !wrt.empty())
      result = torch::autograd::grad(outs, wrt, grads, /*retain_graph=*/when == WeightGrad::Deferred,
                                     /*create_graph=*/false, /*allow_unused=*/true);
  } catch (const c10::Error &e) {
    std::string what = e.what_without_backtrace();
    throw std::runtime_error(where(mb, k) + ": backward failed: " + what.substr(0, what.find('\n')));
  }
  result.resize(wrt.size());
  ps.gradInputs.clear();
  size_t next = 0;
  for (const torch::Tensor &x : ps.inputs)
    ps.gradInputs.push_back(x.requires_grad() ? result[next++] : torch::Tensor());
  if (when == WeightGrad::Now)
    addWeightGrads(k, result, numInputs);
  if (k != 0)
    return;
  if (!ps.gradInputs.empty() && ps.gradInputs[0].defined())
    copyInto(ps.gradInputs[0], gradInput);
  else
    gradInput.reset(size_t(ps.inputs[0].size(0)), size_t(this->inputWidth()));
}

template <typename T> void TorchStage<T>::runBackwardWeight(int mb) {
  prepareThread();
  MicroBatch &state = live_.at(mb);
  for (size_t k = 0; k < modules_.size(); ++k) {
    PartState &ps = state[k];
    std::vector<torch::Tensor> outs, grads, wrt;
    differentiable(ps.outputs, ps.gradOutputs, outs, grads);
    for (size_t i : paramsOf_[k])
      wrt.push_back(params_[i].param);
    if (outs.empty() || wrt.empty())
      continue;
    try {
      addWeightGrads(k, torch::autograd::grad(outs, wrt, grads, /*retain_graph=*/false,
                                              /*create_graph=*/false, /*allow_unused=*/true),
                     0);
    } catch (const c10::Error &e) {
      std::string what = e.what_without_backtrace();
      throw std::runtime_error(where(mb, k) + ": weight gradient failed: " + what.substr(0, what.find('\n')));
    }
  }
}

template <typename T> void TorchStage<T>::releaseMicroBatch(int mb) { live_.erase(mb); }

template class TorchStage<float>;
template class TorchStage<double>;

} // namespace pipert::torchstage
