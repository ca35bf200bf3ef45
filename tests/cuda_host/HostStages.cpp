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
#include <memory>
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
  HostStage(Stage<double> &cpu, const StageSpec &spec, const MicroBatchRows &rows,
            std::shared_ptr<ExpertExchange> experts)
      : GpuStage(cpu.stageIndex(), spec.hidden(), DType::F32), rows_(rows) {
    const size_t tokens = size_t(rows.most());
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
    storedFloats_ = storedBound(model, experts ? size_t(experts->size()) : 1);
  }

  void forwardPart(int mb, SubOp part, const void *input, void *output, const Launch &at) override {
    hostcuda::enqueue([=] {
      if (comm_)
        comm_->setStream(at.stream);
      Tensor<float> x = fromDevice(input, rows(mb), size_t(hidden())), y;
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
      Tensor<float> dy = fromDevice(gradOutput, rows(mb), size_t(hidden())), dx;
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
  // Offload: the CPU stage's stored tensors of mb, packed into one device
  // buffer of a fixed size (sizes must be known when the work is enqueued,
  // which under capture is before the stage has run): [count, (rows, cols)
  // per tensor, data of each in order], floats. Reload unpacks them and frees
  // the buffer on the Reload's stream.
  std::vector<StoredBuffer> takeStored(int mb, const Launch &at) override {
    void *packed = nullptr;
    if (cudaMallocAsync(&packed, storedFloats_ * sizeof(float), at.stream) != cudaSuccess)
      throw std::runtime_error("host stage: cannot allocate an offload buffer");
    size_t capacity = storedFloats_;
    int index = stageIndex();
    hostcuda::enqueue([=] {
      std::vector<Tensor<float>> tensors = stage_->takeStored(mb);
      float *out = static_cast<float *>(packed);
      size_t need = 1 + 2 * tensors.size();
      for (const Tensor<float> &t : tensors)
        need += t.size();
      if (need > capacity)
        throw std::logic_error("host stage " + std::to_string(index) + ", micro-batch " +
                               std::to_string(mb) + ": " + std::to_string(need) +
                               " floats stored, more than the bound of " + std::to_string(capacity));
      size_t pos = 0;
      out[pos++] = float(tensors.size());
      for (const Tensor<float> &t : tensors) {
        out[pos++] = float(t.rows());
        out[pos++] = float(t.cols());
      }
      for (const Tensor<float> &t : tensors) {
        std::copy(t.data(), t.data() + t.size(), out + pos);
        pos += t.size();
      }
    });
    return {{packed, storedFloats_ * sizeof(float), 0}};
  }
  void putStored(int mb, std::vector<StoredBuffer> buffers, const Launch &at) override {
    if (buffers.size() != 1 || buffers[0].bytes != storedFloats_ * sizeof(float) || buffers[0].slot != 0)
      throw std::logic_error("host stage " + std::to_string(stageIndex()) +
                             ": a reload gives back other buffers than the offload took");
    const float *in = static_cast<const float *>(buffers[0].data);
    hostcuda::enqueue([=] {
      size_t count = size_t(in[0]), pos = 1 + 2 * count;
      std::vector<Tensor<float>> tensors(count);
      for (size_t k = 0; k < count; ++k) {
        tensors[k].reset(size_t(in[1 + 2 * k]), size_t(in[2 + 2 * k]));
        std::copy(in + pos, in + pos + tensors[k].size(), tensors[k].data());
        pos += tensors[k].size();
      }
      stage_->putStored(mb, std::move(tensors));
    });
    if (cudaFreeAsync(buffers[0].data, at.stream) != cudaSuccess)
      throw std::runtime_error("host stage: cannot free a reload buffer");
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

  // The most floats takeStored packs: a dry forward of the largest
  // micro-batch on a scratch copy with every expert local tells the tensors' count and total
  // size (an MoE stage routes tokens x topK rows whatever the data); a stage
  // of an expert group of n may receive up to n times as many rows.
  size_t storedBound(const ModelSpec &model, size_t participants) const {
    std::unique_ptr<Stage<float>> scratch = makeStage<float>(model, stageIndex(), nullptr);
    Tensor<float> x(size_t(rows_.most()), size_t(hidden())), y;
    scratch->forward(0, x, y);
    std::vector<Tensor<float>> tensors = scratch->takeStored(0);
    size_t total = 0;
    for (const Tensor<float> &t : tensors)
      total += t.size();
    return 1 + 2 * tensors.size() + participants * total;
  }

  size_t rows(int mb) const { return size_t(rows_.of(mb)); }

  MicroBatchRows rows_;
  size_t storedFloats_ = 0;
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

std::unique_ptr<GpuStage> makeGpuStage(Stage<double> &cpu, const StageSpec &spec, const MicroBatchRows &rows,
                                       DType dtype, std::shared_ptr<ExpertExchange> experts) {
  requireF32(dtype);
  return std::make_unique<HostStage>(cpu, spec, rows, std::move(experts));
}

// As the GPU kernel: the gradient scaled by 2 w / n rounded to fp32 once.
void mseLossAndGrad(const void *output, const void *target, void *gradOutput, double *loss,
                    size_t tokens, size_t hidden, DType dtype, cudaStream_t, double weight) {
  requireF32(dtype);
  hostcuda::enqueue([=] {
    Tensor<float> y = fromDevice(output, tokens, hidden), t = fromDevice(target, tokens, hidden), dy;
    *loss += mseLoss(y, t) * weight;
    mseLossGrad(y, t, dy);
    if (weight != 1.0)
      for (size_t i = 0; i < dy.size(); ++i)
        dy[i] = float(double(dy[i]) * weight);
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
