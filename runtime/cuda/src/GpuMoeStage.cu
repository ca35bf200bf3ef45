// The MoE stage on the GPU (MoeStage.h, no attention, E experts local). Per
// micro-batch of T tokens, k choices each:
//   Attention: a = x; logits = a Wr; softmax, top-k, renormalized gates (Router.h)
//   Dispatch : each (token, choice) slot gets a row in its expert's buffer; the
//              expert inputs are gathered from a
//   Mlp      : the E experts, as batched GEMMs over their buffers
//   Combine  : y_t = a_t + sum_j g_tj f_tj (ascending j)
// Backward mirrors it; the gradient reaches the router through the gates with
// the selection held fixed, and dx = dy + sum_j (expert input gradients) +
// dz Wr^T, summed in that order as the CPU stage does.
//
// Capacity: how many slots each expert receives is data-dependent, but a step
// may be captured into a CUDA graph, so no size may come back to the host.
// Every expert therefore gets a fixed buffer of `capacity` = T rows (enough: a
// token picks an expert at most once); its row positions are computed on the
// device, unused rows are zero, and the expert GEMMs run over all T rows. That
// wastes a factor E/k in expert GEMM work and expert-buffer memory against the
// T*k rows actually routed -- the price of static shapes. Zero input rows and
// zero output-gradient rows keep the waste out of the weight gradients: every
// unused row contributes exactly 0 to W1, b1, W2 and b2.
#include "GpuMoeStage.h"

#include "GpuMlpStage.h"

#include "pipert/MoeStage.h"

#include <climits>
#include <map>
#include <stdexcept>

namespace pipert::cuda {

namespace {

template <typename AT>
class GpuMoeStage final : public TrackedGpuStage {
public:
  GpuMoeStage(Stage<double> &cpu, const MoeConfig &config, int tokens, DType dtype)
      : GpuMoeStage(checkedParameters(cpu, config), cpu.stageIndex(), config, tokens, dtype) {}

  ~GpuMoeStage() override {
    for (auto &entry : saved_)
      entry.second.forEach([](auto *&p) { freeQuietly(p); });
  }

  void zeroGradients(const Launch &at) override {
    router_.zeroGradient(at.stream);
    experts_.zeroGradients(at.stream);
  }

  std::vector<DeviceGradient> gradients() override {
    std::vector<DeviceGradient> out{{routerName_, router_.grad(), router_.rows(), router_.cols()}};
    const std::vector<DeviceGradient> &mlp = experts_.gradients();
    out.insert(out.end(), mlp.begin(), mlp.end());
    return out;
  }

private:
  // A micro-batch's device state; each buffer lives from the part that
  // allocates it to the part named. Expert buffers are E x capacity rows.
  struct Saved {
    AT *a = nullptr;          // stage input: residual, router and expert source (Attention fwd -> W)
    int *chosen = nullptr;    // T x k expert of each slot (Attention fwd -> Attention bwd)
    float *gates = nullptr;   // T x k (Attention fwd -> Attention bwd)
    int *slotRow = nullptr;   // T x k expert row of each slot (Dispatch fwd -> Dispatch bwd)
    int *rowSlot = nullptr;   // E x capacity slot of each expert row, -1 unused (Dispatch fwd -> Combine bwd)
    AT *xe = nullptr;         // expert inputs, h wide (Dispatch fwd -> W)
    float *u = nullptr;       // expert fc1 outputs, f wide (Mlp fwd -> Mlp bwd)
    AT *v = nullptr;          // GELU outputs, f wide (Mlp fwd -> W)
    float *f = nullptr;       // expert outputs, h wide (Mlp fwd -> Combine bwd, for the gate gradient)
    float *da = nullptr;      // T x h gradient at a (Combine bwd -> Attention bwd)
    float *dGates = nullptr;  // T x k (Combine bwd -> Attention bwd)
    AT *dm = nullptr;         // expert output gradients g * dy, h wide (Combine bwd -> W)
    AT *du = nullptr;         // gradients at u, f wide (Mlp bwd -> W)
    float *dxe = nullptr;     // expert input gradients, h wide (Mlp bwd -> Dispatch bwd)
    AT *dz = nullptr;         // T x E router logit gradients (Attention bwd -> W)
    template <typename F> void forEach(F &&fn) {
      fn(a);
      fn(chosen);
      fn(gates);
      fn(slotRow);
      fn(rowSlot);
      fn(xe);
      fn(u);
      fn(v);
      fn(f);
      fn(da);
      fn(dGates);
      fn(dm);
      fn(du);
      fn(dxe);
      fn(dz);
    }
  };

  GpuMoeStage(const std::vector<Parameter<double>> &params, int stageIndex, const MoeConfig &config, int tokens,
              DType dtype)
      : TrackedGpuStage("moe", stageIndex, config.hidden, tokens, dtype), expertCount_(config.experts),
        k_(config.topK), ffn_(config.expertHidden), routerName_(params[0].name),
        router_({params[0].value}, static_cast<size_t>(config.hidden), static_cast<size_t>(config.experts), true),
        experts_(config.hidden, config.expertHidden, config.experts, tokens, params, 1) {}

  // router.gate.weight (h x E), then the experts' MLP parameters (checked by
  // GpuMlp); anything else means attention or a different stage.
  static std::vector<Parameter<double>> checkedParameters(Stage<double> &cpu, const MoeConfig &config) {
    std::vector<Parameter<double>> params = cpu.parameters();
    const size_t expected = 1 + 4 * static_cast<size_t>(config.experts);
    const std::string where = "GPU moe stage " + std::to_string(cpu.stageIndex()) + ": ";
    if (params.size() != expected)
      throw std::invalid_argument(where + "the CPU stage " + cpu.describe() + " has " +
                                  std::to_string(params.size()) + " parameters, expected " +
                                  std::to_string(expected) + " (router and " + std::to_string(config.experts) +
                                  " experts, no attention)");
    const Parameter<double> &router = params[0];
    if (router.name != "router.gate.weight" || !router.value ||
        router.value->rows() != static_cast<size_t>(config.hidden) ||
        router.value->cols() != static_cast<size_t>(config.experts))
      throw std::invalid_argument(where + "the first CPU parameter is '" + router.name + "' (" +
                                  (router.value ? router.value->shapeString() : std::string("no value")) +
                                  "), expected router.gate.weight of " + std::to_string(config.hidden) + "x" +
                                  std::to_string(config.experts));
    return params;
  }

  size_t T() const { return static_cast<size_t>(tokens()); }
  size_t h() const { return static_cast<size_t>(hidden()); }
  size_t slots() const { return T() * static_cast<size_t>(k_); }
  size_t expertRows() const { return static_cast<size_t>(expertCount_) * T(); } // E x capacity

  void runForwardPart(int mb, SubOp part, const void *input, void *output, const Launch &at) override {
    const cudaStream_t s = at.stream;
    switch (part) {
    case SubOp::Attention: { // no attention: a = x; then the router
      Saved &st = saved_[mb];
      st.a = allocOn<AT>(T() * h(), s);
      PIPERT_CUDA(cudaMemcpyAsync(st.a, input, T() * h() * sizeof(AT), cudaMemcpyDeviceToDevice, s));
      float *logits = allocOn<float>(T() * static_cast<size_t>(expertCount_), s);
      gemm(at.blas, cudaDataTypeOf<AT>(), tokens(), expertCount_, hidden(), {st.a, false, 0},
           {router_.operand(), false, 0}, 0.0f, logits, 0);
      st.chosen = allocOn<int>(slots(), s);
      st.gates = allocOn<float>(slots(), s);
      routeTopK(logits, tokens(), expertCount_, k_, st.chosen, st.gates, s);
      freeOn(logits, s);
      break;
    }
    case SubOp::Dispatch: {
      Saved &st = saved_.at(mb);
      st.slotRow = allocOn<int>(slots(), s);
      st.rowSlot = allocOn<int>(expertRows(), s);
      planExpertRows(st.chosen, tokens(), k_, expertCount_, tokens(), st.slotRow, st.rowSlot, s);
      st.xe = allocOn<AT>(expertRows() * h(), s);
      gatherExpertInputs(st.a, st.rowSlot, k_, st.xe, expertRows(), h(), s);
      break;
    }
    case SubOp::Mlp: {
      Saved &st = saved_.at(mb);
      const size_t inner = expertRows() * static_cast<size_t>(ffn_);
      st.u = allocOn<float>(inner, s);
      st.v = allocOn<AT>(inner, s);
      st.f = allocOn<float>(expertRows() * h(), s);
      experts_.forward(st.xe, st.u, st.v, st.f, at);
      break;
    }
    case SubOp::Combine: {
      Saved &st = saved_.at(mb);
      combineExpertOutputs(st.a, st.f, st.slotRow, st.gates, static_cast<AT *>(output), tokens(), k_, h(), s);
      break; // f stays for the gate gradient
    }
    }
  }

  void runBackwardPart(int mb, SubOp part, const void *gradOutput, void *gradInput, WeightGrad when,
                       const Launch &at) override {
    const cudaStream_t s = at.stream;
    Saved &st = saved_.at(mb);
    switch (part) {
    case SubOp::Combine: {
      const AT *dy = static_cast<const AT *>(gradOutput);
      st.da = allocOn<float>(T() * h(), s); // the residual branch
      convert(dy, st.da, T() * h(), s);
      st.dGates = allocOn<float>(slots(), s); // dg_tj = dy_t . f_tj
      gateGradients(dy, st.f, st.slotRow, st.dGates, tokens(), k_, h(), s);
      st.dm = allocOn<AT>(expertRows() * h(), s); // g_tj dy_t into the slot's expert row
      scatterExpertGradients(dy, st.gates, st.rowSlot, k_, st.dm, expertRows(), h(), s);
      freeOn(st.f, s);
      freeOn(st.rowSlot, s);
      break;
    }
    case SubOp::Mlp:
      st.du = allocOn<AT>(expertRows() * static_cast<size_t>(ffn_), s);
      st.dxe = allocOn<float>(expertRows() * h(), s);
      experts_.backwardInput(st.dm, st.u, st.du, st.dxe, 0.0f, at);
      freeOn(st.u, s);
      if (when == WeightGrad::Now)
        experts_.backwardWeight(st.xe, st.v, st.dm, st.du, at);
      break;
    case SubOp::Dispatch: // each token's k expert-input gradients return, ascending j
      addExpertInputGradients(st.dxe, st.slotRow, st.da, tokens(), k_, h(), s);
      freeOn(st.dxe, s);
      freeOn(st.slotRow, s);
      break;
    case SubOp::Attention: // the router, then no attention: dx = da
      st.dz = allocOn<AT>(T() * static_cast<size_t>(expertCount_), s);
      routerLogitGradients(st.gates, st.dGates, st.chosen, st.dz, tokens(), expertCount_, k_, s);
      gemm(at.blas, cudaDataTypeOf<AT>(), tokens(), hidden(), expertCount_, {st.dz, false, 0},
           {router_.operand(), true, 0}, 1.0f, st.da, 0); // da += dz Wr^T
      convert(st.da, static_cast<AT *>(gradInput), T() * h(), s);
      freeOn(st.da, s);
      freeOn(st.dGates, s);
      freeOn(st.gates, s);
      freeOn(st.chosen, s);
      if (when == WeightGrad::Now)
        routerWeightGrad(st, at);
      break;
    }
  }

  // Wr += a^T dz.
  void routerWeightGrad(const Saved &st, const Launch &at) {
    gemm(at.blas, cudaDataTypeOf<AT>(), hidden(), expertCount_, tokens(), {st.a, true, 0}, {st.dz, false, 0}, 1.0f,
         router_.grad(), 0);
  }

  void runBackwardWeight(int mb, const Launch &at) override {
    Saved &st = saved_.at(mb);
    experts_.backwardWeight(st.xe, st.v, st.dm, st.du, at);
    routerWeightGrad(st, at);
  }

  void releaseMicroBatch(int mb, cudaStream_t stream) override { releaseSaved(saved_, mb, stream); }

  int expertCount_, k_, ffn_;
  std::string routerName_;
  DeviceWeight<AT> router_;
  GpuMlp<AT> experts_;
  std::map<int, Saved> saved_;
};

} // namespace

std::unique_ptr<GpuStage> makeGpuMoeStage(Stage<double> &cpu, const MoeConfig &config, int tokens, DType dtype) {
  const std::string where = "GPU moe stage " + std::to_string(cpu.stageIndex()) + ": ";
  if (config.attention)
    throw std::invalid_argument(where + "attention is not supported on the GPU; use MoeConfig{attention=false}");
  const auto *moe = dynamic_cast<const MoeStage<double> *>(&cpu);
  if (!moe)
    throw std::invalid_argument(where + "the CPU stage " + cpu.describe() + " is not an MoE stage");
  if (config.hidden <= 0 || config.expertHidden <= 0 || config.experts <= 0 || config.topK <= 0 ||
      config.topK > config.experts || config.hidden != cpu.hidden())
    throw std::invalid_argument(where + "sizes hidden=" + std::to_string(config.hidden) + ", experts=" +
                                std::to_string(config.experts) + ", top-" + std::to_string(config.topK) +
                                ", expert ffn=" + std::to_string(config.expertHidden) +
                                " do not fit the CPU stage " + cpu.describe());
  if (moe->localExperts() != config.experts || moe->firstLocalExpert() != 0)
    throw std::invalid_argument(where + "expert parallelism is not supported on the GPU: the CPU stage " +
                                cpu.describe() + " holds " + std::to_string(moe->localExperts()) + " of " +
                                std::to_string(config.experts) + " experts");
  if (tokens > 0 && static_cast<long long>(config.experts) * tokens > INT_MAX)
    throw std::invalid_argument(where + std::to_string(config.experts) + " experts x " + std::to_string(tokens) +
                                " tokens of expert capacity exceed the int row index");
  if (dtype == DType::F32)
    return std::make_unique<GpuMoeStage<float>>(cpu, config, tokens, dtype);
  return std::make_unique<GpuMoeStage<__nv_bfloat16>>(cpu, config, tokens, dtype);
}

} // namespace pipert::cuda
