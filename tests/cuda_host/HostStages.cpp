// The device side the executor calls (GpuStage.h and ExecKernels.cuh), in the
// host simulation: each GPU stage is the CPU runtime's Stage<float> of the
// same spec and parameters, and each kernel the CPU runtime's loop, run
// through enqueue() so that graph capture records them. fp32 only.
#include "HostCuda.h"

#include "ExecKernels.cuh"

#include "pipert/Loss.h"
#include "pipert/Model.h"
#include "pipert/cuda/GpuStage.h"

#include <cstring>
#include <stdexcept>

namespace pipert::cuda {

namespace {

Tensor<float> fromDevice(const void *data, size_t rows, size_t cols) {
  Tensor<float> t(rows, cols);
  std::memcpy(t.data(), data, t.size() * sizeof(float));
  return t;
}

void toDevice(const Tensor<float> &t, void *data) {
  std::memcpy(data, t.data(), t.size() * sizeof(float));
}

class HostStage final : public GpuStage {
public:
  HostStage(Stage<double> &cpu, const StageSpec &spec, size_t tokens)
      : GpuStage(cpu.stageIndex(), spec.hidden(), DType::F32), tokens_(tokens) {
    ModelSpec model;
    model.seed = cpu.seed();
    model.stages.assign(size_t(cpu.stageIndex()) + 1, spec);
    stage_ = makeStage<float>(model, cpu.stageIndex());
    // Copied from `cpu`, as the GPU stages do (they are equal anyway: same seed).
    std::vector<Parameter<double>> from = cpu.parameters();
    std::vector<Parameter<float>> to = stage_->parameters();
    for (size_t p = 0; p < to.size(); ++p)
      for (size_t e = 0; e < to[p].value->size(); ++e)
        (*to[p].value)[e] = float((*from[p].value)[e]);
  }

  void forwardPart(int mb, SubOp part, const void *input, void *output, const Launch &) override {
    hostcuda::enqueue([=] {
      Tensor<float> x = fromDevice(input, tokens_, size_t(hidden())), y;
      stage_->forwardPart(mb, part, x, y);
      if (part == SubOp::Combine)
        toDevice(y, output);
    });
  }
  void backwardPart(int mb, SubOp part, const void *gradOutput, void *gradInput, WeightGrad when,
                    const Launch &) override {
    hostcuda::enqueue([=] {
      Tensor<float> dy = fromDevice(gradOutput, tokens_, size_t(hidden())), dx;
      stage_->backwardPart(mb, part, dy, dx, when);
      if (part == SubOp::Attention)
        toDevice(dx, gradInput);
    });
  }
  void backwardWeight(int mb, const Launch &) override {
    hostcuda::enqueue([=] { stage_->backwardWeight(mb); });
  }
  size_t storedMicroBatches() const override { return stage_->storedMicroBatches(); }
  void zeroGradients(const Launch &) override {
    hostcuda::enqueue([=] { stage_->zeroGradients(); });
  }
  std::vector<DeviceGradient> gradients() override {
    std::vector<DeviceGradient> out;
    for (Parameter<float> &p : stage_->parameters())
      out.push_back({p.name, p.grad->data(), p.grad->rows(), p.grad->cols()});
    return out;
  }

private:
  size_t tokens_;
  std::unique_ptr<Stage<float>> stage_;
};

void requireF32(DType dtype) {
  if (dtype != DType::F32)
    throw std::invalid_argument("the host simulation of the CUDA runtime runs fp32 only");
}

} // namespace

const char *dtypeName(DType dtype) { return dtype == DType::F32 ? "fp32" : "bf16"; }
size_t dtypeBytes(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

std::unique_ptr<GpuStage> makeGpuStage(Stage<double> &cpu, const StageSpec &spec, int tokens,
                                       DType dtype) {
  requireF32(dtype);
  return std::make_unique<HostStage>(cpu, spec, size_t(tokens));
}

void mseLossAndGrad(const void *output, const void *target, void *gradOutput, double *loss,
                    size_t tokens, size_t hidden, DType dtype, cudaStream_t) {
  requireF32(dtype);
  hostcuda::enqueue([=] {
    Tensor<float> y = fromDevice(output, tokens, hidden), t = fromDevice(target, tokens, hidden), dy;
    *loss += mseLoss(y, t);
    mseLossGrad(y, t, dy);
    toDevice(dy, gradOutput);
  });
}

void uploadActivation(const std::vector<double> &host, void *device, DType dtype, cudaStream_t) {
  requireF32(dtype);
  std::vector<float> values(host.begin(), host.end());
  hostcuda::enqueue([=] { std::memcpy(device, values.data(), values.size() * sizeof(float)); });
}

void addInto(float *dst, const float *src, size_t count, cudaStream_t) {
  hostcuda::enqueue([=] {
    for (size_t i = 0; i < count; ++i)
      dst[i] += src[i];
  });
}

void touch(void *word, cudaStream_t) {
  hostcuda::enqueue([=] { ++*static_cast<unsigned *>(word); });
}

} // namespace pipert::cuda
