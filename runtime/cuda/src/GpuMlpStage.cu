// The dense stage on the GPU (DenseStage.h without attention), with the pieces
// of GpuMlpStage.h it is built from. Per micro-batch:
//   Attention: a = x (a copy: the executor may reuse x's buffer)
//   Dispatch : nothing (no all-to-all in a dense stage)
//   Mlp      : m = fc2(gelu(fc1(a)))
//   Combine  : y = a + m
// Backward: Combine keeps dm = dy and starts da = dy; Mlp adds du W1^T into da
// (and the weight half when WeightGrad::Now); Attention writes dx = da.
#include "GpuMlpStage.h"

#include <map>
#include <stdexcept>
#include <type_traits>

namespace pipert::cuda {

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

// ---- DeviceWeight ----

template <typename AT>
DeviceWeight<AT>::DeviceWeight(const std::vector<const Tensor<double> *> &cpu, size_t rows, size_t cols,
                               bool gemmOperand)
    : rows_(rows), cols_(cols), copies_(cpu.size()) {
  const size_t n = copies_ * copyElements();
  std::vector<float> host(n);
  for (size_t c = 0; c < copies_; ++c)
    for (size_t i = 0; i < copyElements(); ++i)
      host[c * copyElements() + i] = static_cast<float>((*cpu[c])[i]);
  try {
    PIPERT_CUDA(cudaMalloc(&value_, n * sizeof(float)));
    PIPERT_CUDA(cudaMemcpy(value_, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    PIPERT_CUDA(cudaMalloc(&grad_, n * sizeof(float)));
    PIPERT_CUDA(cudaMemset(grad_, 0, n * sizeof(float)));
    if constexpr (std::is_same_v<AT, float>) {
      operand_ = value_;
    } else if (gemmOperand) { // the bf16 copy rounds the fp32 value, as a refresh after an update would
      std::vector<AT> low(n);
      for (size_t i = 0; i < n; ++i)
        low[i] = __float2bfloat16(host[i]);
      PIPERT_CUDA(cudaMalloc(&operand_, n * sizeof(AT)));
      ownsOperand_ = true;
      PIPERT_CUDA(cudaMemcpy(operand_, low.data(), n * sizeof(AT), cudaMemcpyHostToDevice));
    }
  } catch (...) {
    release(); // the destructor does not run for an unfinished object
    throw;
  }
}

template <typename AT> DeviceWeight<AT>::~DeviceWeight() { release(); }

template <typename AT> void DeviceWeight<AT>::release() noexcept {
  if (ownsOperand_)
    freeQuietly(operand_);
  operand_ = nullptr;
  ownsOperand_ = false;
  freeQuietly(value_);
  freeQuietly(grad_);
}

template <typename AT> void DeviceWeight<AT>::zeroGradient(cudaStream_t stream) {
  PIPERT_CUDA(cudaMemsetAsync(grad_, 0, copies_ * copyElements() * sizeof(float), stream));
}

// ---- GpuMlp ----

template <typename AT>
GpuMlp<AT>::GpuMlp(int hidden, int ffn, int blocks, const std::vector<Parameter<double>> &cpu, size_t first)
    : hidden_(hidden), ffn_(ffn), blocks_(blocks) {
  const size_t h = static_cast<size_t>(hidden), f = static_cast<size_t>(ffn);
  const size_t count = 4 * static_cast<size_t>(blocks);
  if (cpu.size() < first + count)
    throw std::invalid_argument("GPU MLP: the CPU stage has " + std::to_string(cpu.size()) +
                                " parameters, expected at least " + std::to_string(first + count));
  // What MlpBlock::appendParameters lists per block: name suffix and shape.
  const std::string suffix[4] = {".fc1.weight", ".fc1.bias", ".fc2.weight", ".fc2.bias"};
  const size_t rows[4] = {h, 1, f, 1}, cols[4] = {f, f, h, h};
  std::vector<const Tensor<double> *> kind[4];
  for (size_t i = 0; i < count; ++i) {
    const Parameter<double> &p = cpu[first + i];
    const size_t which = i % 4;
    if (!endsWith(p.name, suffix[which]) || !p.value || p.value->rows() != rows[which] ||
        p.value->cols() != cols[which] || !p.grad)
      throw std::invalid_argument("GPU MLP: CPU parameter " + std::to_string(first + i) + " is '" + p.name + "' (" +
                                  (p.value ? p.value->shapeString() : std::string("no value")) +
                                  "), expected '*" + suffix[which] + "' of " + std::to_string(rows[which]) + "x" +
                                  std::to_string(cols[which]));
    kind[which].push_back(p.value);
    gradients_.push_back({p.name, nullptr, rows[which], cols[which]});
  }
  w1_ = std::make_unique<DeviceWeight<AT>>(kind[0], h, f, true);
  b1_ = std::make_unique<DeviceWeight<AT>>(kind[1], 1, f, false);
  w2_ = std::make_unique<DeviceWeight<AT>>(kind[2], f, h, true);
  b2_ = std::make_unique<DeviceWeight<AT>>(kind[3], 1, h, false);
  DeviceWeight<AT> *weights[4] = {w1_.get(), b1_.get(), w2_.get(), b2_.get()};
  for (size_t i = 0; i < count; ++i)
    gradients_[i].data = weights[i % 4]->grad(i / 4);
}

template <typename AT>
void GpuMlp<AT>::forward(int rows, const AT *x, float *u, AT *v, float *m, const Launch &at) const {
  const cudaDataType_t type = cudaDataTypeOf<AT>();
  const long long R = rows, h = hidden_, f = ffn_;
  gemm(at.blas, type, rows, ffn_, hidden_, {x, false, R * h}, {w1_->operand(), false, h * f}, 0.0f, u, R * f,
       blocks_);
  biasGelu(u, b1_->value(), v, rows, ffn_, blocks_, at.stream);
  gemm(at.blas, type, rows, hidden_, ffn_, {v, false, R * f}, {w2_->operand(), false, f * h}, 0.0f, m, R * h,
       blocks_);
  addBias(m, b2_->value(), rows, hidden_, blocks_, at.stream);
}

template <typename AT>
void GpuMlp<AT>::backwardInput(int rows, const AT *dm, const float *u, AT *du, float *dx, float dxBeta,
                               const Launch &at) const {
  const cudaDataType_t type = cudaDataTypeOf<AT>();
  const long long R = rows, h = hidden_, f = ffn_;
  float *dv = allocOn<float>(static_cast<size_t>(blocks_) * R * f, at.stream); // scratch of this call
  gemm(at.blas, type, rows, ffn_, hidden_, {dm, false, R * h}, {w2_->operand(), true, f * h}, 0.0f, dv, R * f,
       blocks_);
  geluBackward(u, dv, du, static_cast<size_t>(blocks_) * R * f, at.stream);
  freeOn(dv, at.stream);
  gemm(at.blas, type, rows, hidden_, ffn_, {du, false, R * f}, {w1_->operand(), true, h * f}, dxBeta, dx, R * h,
       blocks_);
}

template <typename AT>
void GpuMlp<AT>::backwardWeight(int rows, const AT *x, const AT *v, const AT *dm, const AT *du, const Launch &at) {
  const cudaDataType_t type = cudaDataTypeOf<AT>();
  const long long R = rows, h = hidden_, f = ffn_;
  // beta = 1: the micro-batch's full product is formed in fp32, then added once.
  gemm(at.blas, type, ffn_, hidden_, rows, {v, true, R * f}, {dm, false, R * h}, 1.0f, w2_->grad(), f * h, blocks_);
  addColumnSums(dm, b2_->grad(), rows, hidden_, blocks_, at.stream);
  gemm(at.blas, type, hidden_, ffn_, rows, {x, true, R * h}, {du, false, R * f}, 1.0f, w1_->grad(), h * f, blocks_);
  addColumnSums(du, b1_->grad(), rows, ffn_, blocks_, at.stream);
}

template <typename AT> void GpuMlp<AT>::zeroGradients(cudaStream_t stream) {
  w1_->zeroGradient(stream);
  b1_->zeroGradient(stream);
  w2_->zeroGradient(stream);
  b2_->zeroGradient(stream);
}

// ---- TrackedGpuStage ----

TrackedGpuStage::TrackedGpuStage(const char *kind, int stageIndex, int hidden, const MicroBatchRows &rows,
                                 DType dtype)
    : GpuStage(stageIndex, hidden, dtype), rows_(rows),
      tracker_("GPU stage " + std::to_string(stageIndex) + " (" + kind + ", " + dtypeName(dtype) + ")") {
  if (rows.tokens <= 0)
    throw std::invalid_argument(tracker_.owner() + ": tokens per micro-batch must be positive, got " +
                                std::to_string(rows.tokens));
}

namespace {
void requirePointer(const void *p, const char *what, const std::string &owner, int mb) {
  if (!p)
    throw std::invalid_argument(owner + ", micro-batch " + std::to_string(mb) + ": " + what + " is null");
}
} // namespace

void TrackedGpuStage::forwardPart(int mb, SubOp part, const void *input, void *output, const Launch &at) {
  if (part == SubOp::Attention)
    requirePointer(input, "the forward input", tracker_.owner(), mb);
  if (part == SubOp::Combine)
    requirePointer(output, "the forward output", tracker_.owner(), mb);
  tracker_.forwardPart(mb, part, static_cast<size_t>(tokens(mb)));
  runForwardPart(mb, part, input, output, at);
}

void TrackedGpuStage::backwardPart(int mb, SubOp part, const void *gradOutput, void *gradInput, WeightGrad when,
                                   const Launch &at) {
  if (part == SubOp::Combine)
    requirePointer(gradOutput, "the output gradient", tracker_.owner(), mb);
  if (part == SubOp::Attention)
    requirePointer(gradInput, "the input gradient", tracker_.owner(), mb);
  const bool last = tracker_.backwardPart(mb, part, when);
  runBackwardPart(mb, part, gradOutput, gradInput, when, at);
  if (last && when == WeightGrad::Now) {
    releaseMicroBatch(mb, at.stream);
    tracker_.finish(mb);
  }
}

void TrackedGpuStage::discard(int mb, const Launch &at) {
  releaseMicroBatch(mb, at.stream);
  tracker_.finish(mb);
}

std::vector<StoredBuffer> TrackedGpuStage::takeStored(int mb, const Launch &) {
  tracker_.offload(mb); // throws before anything moves when mb cannot be offloaded
  return runTakeStored(mb);
}

void TrackedGpuStage::putStored(int mb, std::vector<StoredBuffer> buffers, const Launch &) {
  tracker_.reload(mb);
  runPutStored(mb, buffers);
}

void TrackedGpuStage::backwardWeight(int mb, const Launch &at) {
  tracker_.backwardWeight(mb);
  runBackwardWeight(mb, at);
  releaseMicroBatch(mb, at.stream);
  tracker_.finish(mb);
}

// ---- the dense stage ----

namespace {

template <typename AT>
class GpuDenseStage final : public TrackedGpuStage {
public:
  GpuDenseStage(Stage<double> &cpu, const DenseConfig &config, const MicroBatchRows &rows, DType dtype)
      : TrackedGpuStage("dense", cpu.stageIndex(), config.hidden, rows, dtype), ffn_(config.ffnHidden),
        mlp_(config.hidden, config.ffnHidden, 1, checkedParameters(cpu), 0) {}

  ~GpuDenseStage() override {
    for (auto &entry : saved_)
      entry.second.forEach([](auto *&p) { freeQuietly(p); });
  }

  void zeroGradients(const Launch &at) override { mlp_.zeroGradients(at.stream); }
  std::vector<DeviceGradient> gradients() override { return mlp_.gradients(); }

private:
  // A micro-batch's device state; each buffer lives from the part that
  // allocates it to the part named.
  struct Saved {
    AT *a = nullptr;     // stage input = MLP input (Attention fwd -> W)
    float *u = nullptr;  // fc1 output before GELU (Mlp fwd -> Mlp bwd)
    AT *v = nullptr;     // GELU output (Mlp fwd -> W)
    float *m = nullptr;  // MLP output (Mlp fwd -> Combine fwd)
    AT *dm = nullptr;    // output gradient = MLP output gradient (Combine bwd -> W)
    float *da = nullptr; // gradient at a (Combine bwd -> Attention bwd)
    AT *du = nullptr;    // gradient at u (Mlp bwd -> W)
    template <typename F> void forEach(F &&f) {
      f(a);
      f(u);
      f(v);
      f(m);
      f(dm);
      f(da);
      f(du);
    }
  };

  static std::vector<Parameter<double>> checkedParameters(Stage<double> &cpu) {
    std::vector<Parameter<double>> params = cpu.parameters();
    if (params.size() != 4)
      throw std::invalid_argument("GPU dense stage " + std::to_string(cpu.stageIndex()) + ": the CPU stage " +
                                  cpu.describe() + " has " + std::to_string(params.size()) +
                                  " parameters, expected the MLP's 4 (no attention)");
    return params;
  }

  // Elements of micro-batch mb's activations (rows x hidden) and inner ones (rows x ffn).
  size_t activation(int mb) const { return static_cast<size_t>(tokens(mb)) * static_cast<size_t>(hidden()); }
  size_t inner(int mb) const { return static_cast<size_t>(tokens(mb)) * static_cast<size_t>(ffn_); }

  void runForwardPart(int mb, SubOp part, const void *input, void *output, const Launch &at) override {
    const cudaStream_t s = at.stream;
    switch (part) {
    case SubOp::Attention: { // no attention: a = x
      Saved &st = saved_[mb];
      st.a = allocOn<AT>(activation(mb), s);
      PIPERT_CUDA(cudaMemcpyAsync(st.a, input, activation(mb) * sizeof(AT), cudaMemcpyDeviceToDevice, s));
      break;
    }
    case SubOp::Dispatch:
      break;
    case SubOp::Mlp: {
      Saved &st = saved_.at(mb);
      st.u = allocOn<float>(inner(mb), s);
      st.v = allocOn<AT>(inner(mb), s);
      st.m = allocOn<float>(activation(mb), s);
      mlp_.forward(tokens(mb), st.a, st.u, st.v, st.m, at);
      break;
    }
    case SubOp::Combine: {
      Saved &st = saved_.at(mb);
      residualAdd(st.a, st.m, static_cast<AT *>(output), activation(mb), s);
      freeOn(st.m, s); // a stays: it is the MLP input the W half needs
      break;
    }
    }
  }

  void runBackwardPart(int mb, SubOp part, const void *gradOutput, void *gradInput, WeightGrad when,
                       const Launch &at) override {
    const cudaStream_t s = at.stream;
    Saved &st = saved_.at(mb);
    switch (part) {
    case SubOp::Combine: { // both branches of the residual receive dy
      const AT *dy = static_cast<const AT *>(gradOutput);
      st.dm = allocOn<AT>(activation(mb), s);
      PIPERT_CUDA(cudaMemcpyAsync(st.dm, dy, activation(mb) * sizeof(AT), cudaMemcpyDeviceToDevice, s));
      st.da = allocOn<float>(activation(mb), s);
      convert(dy, st.da, activation(mb), s);
      break;
    }
    case SubOp::Mlp:
      st.du = allocOn<AT>(inner(mb), s);
      mlp_.backwardInput(tokens(mb), st.dm, st.u, st.du, st.da, 1.0f, at); // da = dy + du W1^T
      freeOn(st.u, s);
      if (when == WeightGrad::Now)
        mlp_.backwardWeight(tokens(mb), st.a, st.v, st.dm, st.du, at);
      break;
    case SubOp::Dispatch:
      break;
    case SubOp::Attention: // no attention: dx = da
      convert(st.da, static_cast<AT *>(gradInput), activation(mb), s);
      freeOn(st.da, s);
      break;
    }
  }

  void runBackwardWeight(int mb, const Launch &at) override {
    Saved &st = saved_.at(mb);
    mlp_.backwardWeight(tokens(mb), st.a, st.v, st.dm, st.du, at);
  }

  void releaseMicroBatch(int mb, cudaStream_t stream) override { releaseSaved(saved_, mb, stream); }

  // Sizes of Saved's buffers in forEach's order (after a complete forward
  // only a, u and v are set).
  size_t savedBytes(int mb, int slot) const {
    switch (slot) {
    case 0: return activation(mb) * sizeof(AT);  // a
    case 1: return inner(mb) * sizeof(float);    // u
    case 2: return inner(mb) * sizeof(AT);       // v
    case 3: return activation(mb) * sizeof(float); // m
    case 4: return activation(mb) * sizeof(AT);  // dm
    case 5: return activation(mb) * sizeof(float); // da
    case 6: return inner(mb) * sizeof(AT);       // du
    }
    return 0;
  }
  std::vector<StoredBuffer> runTakeStored(int mb) override {
    return takeSaved(saved_, mb, [this, mb](int slot) { return savedBytes(mb, slot); }, owner());
  }
  void runPutStored(int mb, const std::vector<StoredBuffer> &buffers) override {
    putSaved(saved_, mb, buffers, owner());
  }

  int ffn_;
  GpuMlp<AT> mlp_;
  std::map<int, Saved> saved_;
};

} // namespace

std::unique_ptr<GpuStage> makeGpuDenseStage(Stage<double> &cpu, const DenseConfig &config, const MicroBatchRows &rows,
                                            DType dtype) {
  const std::string where = "GPU dense stage " + std::to_string(cpu.stageIndex()) + ": ";
  if (config.attention)
    throw std::invalid_argument(where + "attention is not supported on the GPU; use DenseConfig{attention=false}");
  if (config.hidden <= 0 || config.ffnHidden <= 0 || config.hidden != cpu.hidden())
    throw std::invalid_argument(where + "sizes hidden=" + std::to_string(config.hidden) + ", ffn=" +
                                std::to_string(config.ffnHidden) + " do not fit the CPU stage " + cpu.describe());
  if (dtype == DType::F32)
    return std::make_unique<GpuDenseStage<float>>(cpu, config, rows, dtype);
  return std::make_unique<GpuDenseStage<__nv_bfloat16>>(cpu, config, rows, dtype);
}

template class DeviceWeight<float>;
template class DeviceWeight<__nv_bfloat16>;
template class GpuMlp<float>;
template class GpuMlp<__nv_bfloat16>;

} // namespace pipert::cuda
