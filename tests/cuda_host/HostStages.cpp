// The device side the executor calls (GpuStage.h and ExecKernels.cuh), in the
// host simulation: each GPU stage is the CPU runtime's Stage<float> of the
// same spec and parameters, and each kernel the CPU runtime's loop, run
// through enqueue() so that graph capture records them. fp32 only. An MoE
// stage of an expert group exchanges its tokens through the executor's
// ExpertExchange (over the host NCCL), as the GPU stage does.
#include "HostCuda.h"

#include "ExecKernels.cuh"

#include "pipert/Loss.h"
#include "pipert/Model.h"
#include "pipert/cuda/GpuStage.h"

#include <algorithm>
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

// The CPU stage's all-to-all over an ExpertExchange, with fixed sizes as on
// the GPU: each block travels padded to `capacity` rows (every slot of the
// source), as [rows, tags, tag per row..., row data...] in floats (a tag, a
// local expert index, is exact in a float).
class ExchangeAllToAll final : public AllToAll<float> {
public:
  ExchangeAllToAll(std::shared_ptr<ExpertExchange> exchange, size_t capacity, size_t hidden)
      : exchange_(std::move(exchange)), capacity_(capacity), hidden_(hidden) {}
  int size() const override { return exchange_->size(); }
  int rank() const override { return exchange_->rank(); }
  void setStream(cudaStream_t stream) { stream_ = stream; }

  std::vector<TokenBlock<float>> exchange(std::vector<TokenBlock<float>> outgoing) override {
    const size_t block = 2 + capacity_ * (1 + hidden_), n = size_t(size());
    std::vector<float> send(n * block, 0.0f), recv(n * block, 0.0f);
    for (size_t p = 0; p < n; ++p) {
      const TokenBlock<float> &b = outgoing[p];
      if (b.rows.rows() > capacity_ || (b.rows.rows() && b.rows.cols() != hidden_))
        throw std::logic_error("host all-to-all: a block of " + b.rows.shapeString() + " over capacity");
      float *out = &send[p * block];
      out[0] = float(b.rows.rows());
      out[1] = float(b.tags.size());
      std::copy(b.tags.begin(), b.tags.end(), out + 2);
      std::copy(b.rows.data(), b.rows.data() + b.rows.size(), out + 2 + capacity_);
    }
    using L = ExpertExchange::Layout;
    exchange_->allToAll(send.data(), L::PeerMajor, recv.data(), L::PeerMajor, 1, block * sizeof(float), stream_);
    std::vector<TokenBlock<float>> incoming(n);
    for (size_t p = 0; p < n; ++p) {
      const float *in = &recv[p * block];
      size_t rows = size_t(in[0]), tags = size_t(in[1]);
      incoming[p].rows.reset(rows, hidden_);
      std::copy(in + 2 + capacity_, in + 2 + capacity_ + rows * hidden_, incoming[p].rows.data());
      for (size_t t = 0; t < tags; ++t)
        incoming[p].tags.push_back(int(in[2 + t]));
    }
    return incoming;
  }

private:
  std::shared_ptr<ExpertExchange> exchange_;
  size_t capacity_, hidden_;
  cudaStream_t stream_ = nullptr;
};

class HostStage final : public GpuStage {
public:
  HostStage(Stage<double> &cpu, const StageSpec &spec, size_t tokens,
            std::shared_ptr<ExpertExchange> experts)
      : GpuStage(cpu.stageIndex(), spec.hidden(), DType::F32), tokens_(tokens) {
    ModelSpec model;
    model.seed = cpu.seed();
    model.stages.assign(size_t(cpu.stageIndex()) + 1, spec);
    if (experts && spec.kind == StageKind::Moe)
      comm_ = std::make_shared<ExchangeAllToAll>(
          std::move(experts), tokens * size_t(spec.moe.topK), size_t(spec.hidden()));
    stage_ = makeStage<float>(model, cpu.stageIndex(), comm_);
    // Copied from `cpu`, as the GPU stages do (they are equal anyway: same seed).
    std::vector<Parameter<double>> from = cpu.parameters();
    std::vector<Parameter<float>> to = stage_->parameters();
    for (size_t p = 0; p < to.size(); ++p)
      for (size_t e = 0; e < to[p].value->size(); ++e)
        (*to[p].value)[e] = float((*from[p].value)[e]);
  }

  void forwardPart(int mb, SubOp part, const void *input, void *output, const Launch &at) override {
    hostcuda::enqueue([=] {
      if (comm_)
        comm_->setStream(at.stream);
      Tensor<float> x = fromDevice(input, tokens_, size_t(hidden())), y;
      stage_->forwardPart(mb, part, x, y);
      if (part == SubOp::Combine)
        toDevice(y, output);
    });
  }
  void backwardPart(int mb, SubOp part, const void *gradOutput, void *gradInput, WeightGrad when,
                    const Launch &at) override {
    hostcuda::enqueue([=] {
      if (comm_)
        comm_->setStream(at.stream);
      Tensor<float> dy = fromDevice(gradOutput, tokens_, size_t(hidden())), dx;
      stage_->backwardPart(mb, part, dy, dx, when);
      if (part == SubOp::Attention)
        toDevice(dx, gradInput);
    });
  }
  void backwardWeight(int mb, const Launch &) override {
    hostcuda::enqueue([=] { stage_->backwardWeight(mb); });
  }
  void discard(int mb, const Launch &) override {
    hostcuda::enqueue([=] { stage_->discard(mb); });
  }
  size_t storedMicroBatches() const override { return stage_->storedMicroBatches(); }
  void zeroGradients(const Launch &) override {
    hostcuda::enqueue([=] { stage_->zeroGradients(); });
  }
  std::vector<DeviceGradient> gradients() override {
    std::vector<DeviceGradient> out;
    for (Parameter<float> &p : stage_->parameters())
      out.push_back({p.name, p.grad->data(), p.grad->rows(), p.grad->cols(), p.expertSharded});
    return out;
  }

private:
  size_t tokens_;
  std::shared_ptr<ExchangeAllToAll> comm_; // an MoE stage's expert group, if any
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
                                       DType dtype, std::shared_ptr<ExpertExchange> experts) {
  requireF32(dtype);
  return std::make_unique<HostStage>(cpu, spec, size_t(tokens), std::move(experts));
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
