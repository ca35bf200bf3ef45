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
// Expert parallelism (an ExpertExchange of N participants, participant p
// holding experts [p E/N, (p+1) E/N)): the buffers are the same E x capacity
// rows, but on the experts' side they are (local expert, source participant,
// capacity) -- each local expert's N * T rows together, so its GEMMs stay one
// block. Dispatch sends each participant its experts' buffers and Combine
// brings the outputs back (backward: Combine sends the output gradients,
// Dispatch brings the input gradients back); on the stream of the part, the
// expert stream in an overlap pair.
//
// Capacity: how many slots each expert receives is data-dependent, but a step
// may be captured into a CUDA graph, so no size may come back to the host.
// Every expert therefore gets a fixed buffer of `capacity` = T rows (enough: a
// token picks an expert at most once); its row positions are computed on the
// device, unused rows are zero, and the expert GEMMs run over all T rows. That
// wastes a factor E/k in expert GEMM work and expert-buffer memory against the
// T*k rows actually routed -- the price of static shapes. Zero input rows and
// zero output-gradient rows keep the waste out of the weight gradients: every
// unused row contributes exactly 0 to W1, b1, W2 and b2. The all-to-alls move
// these fixed buffers too (E/k times the routed bytes) instead of exchanging
// counts first: a count the host must read would end graph capture and stall
// the enqueuing thread at every Dispatch.
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
  GpuMoeStage(Stage<double> &cpu, const MoeConfig &config, const MicroBatchRows &rows, DType dtype,
              const std::shared_ptr<ExpertExchange> &exchange)
      : GpuMoeStage(checkedParameters(cpu, config, exchange ? exchange->size() : 1), cpu.stageIndex(), config,
                    rows, dtype, exchange) {}

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
    for (DeviceGradient g : experts_.gradients()) {
      g.expertSharded = true;
      out.push_back(std::move(g));
    }
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
    AT *xe = nullptr;         // expert inputs (experts' side), h wide (Dispatch fwd -> W)
    float *u = nullptr;       // expert fc1 outputs, f wide (Mlp fwd -> Mlp bwd)
    AT *v = nullptr;          // GELU outputs, f wide (Mlp fwd -> W)
    float *f = nullptr;       // expert outputs, h wide (Mlp fwd -> Combine bwd, for the gate gradient;
                              // from Combine fwd on the source's side)
    float *da = nullptr;      // T x h gradient at a (Combine bwd -> Attention bwd)
    float *dGates = nullptr;  // T x k (Combine bwd -> Attention bwd)
    AT *dm = nullptr;         // expert output gradients g * dy (experts' side), h wide (Combine bwd -> W)
    AT *du = nullptr;         // gradients at u, f wide (Mlp bwd -> W)
    float *dxe = nullptr;     // expert input gradients (experts' side), h wide (Mlp bwd -> Dispatch bwd)
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

  GpuMoeStage(const std::vector<Parameter<double>> &params, int stageIndex, const MoeConfig &config,
              const MicroBatchRows &rows, DType dtype, const std::shared_ptr<ExpertExchange> &exchange)
      : TrackedGpuStage("moe", stageIndex, config.hidden, rows, dtype), expertCount_(config.experts),
        k_(config.topK), ffn_(config.expertHidden), participants_(exchange ? exchange->size() : 1),
        exchange_(exchange), routerName_(params[0].name),
        router_({params[0].value}, static_cast<size_t>(config.hidden), static_cast<size_t>(config.experts), true),
        experts_(config.hidden, config.expertHidden, config.experts / participants_, params, 1) {}

  // router.gate.weight (h x E), then the local experts' MLP parameters
  // (checked by GpuMlp); anything else means attention or a different stage.
  static std::vector<Parameter<double>> checkedParameters(Stage<double> &cpu, const MoeConfig &config,
                                                          int participants) {
    std::vector<Parameter<double>> params = cpu.parameters();
    const int local = config.experts / participants;
    const size_t expected = 1 + 4 * static_cast<size_t>(local);
    const std::string where = "GPU moe stage " + std::to_string(cpu.stageIndex()) + ": ";
    if (params.size() != expected)
      throw std::invalid_argument(where + "the CPU stage " + cpu.describe() + " has " +
                                  std::to_string(params.size()) + " parameters, expected " +
                                  std::to_string(expected) + " (router and " + std::to_string(local) +
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

  // Micro-batch mb's tokens T (rows), its slots T x k, its expert buffers'
  // rows E x capacity (capacity T).
  size_t T(int mb) const { return static_cast<size_t>(tokens(mb)); }
  size_t h() const { return static_cast<size_t>(hidden()); }
  size_t slots(int mb) const { return T(mb) * static_cast<size_t>(k_); }
  size_t expertRows(int mb) const { return static_cast<size_t>(expertCount_) * T(mb); }
  // Rows of each local expert's block on the experts' side (N sources x capacity).
  int blockRows(int mb) const { return participants_ * tokens(mb); }

  // Source side (expert, capacity) -> experts' side (local expert, source,
  // capacity), and back; the identity without expert parallelism. The
  // buffer given goes (freed on `s`); the one returned replaces it.
  template <typename E> E *toExperts(int mb, E *rows, cudaStream_t s) { return exchanged(mb, rows, true, s); }
  template <typename E> E *toSources(int mb, E *rows, cudaStream_t s) { return exchanged(mb, rows, false, s); }
  template <typename E> E *exchanged(int mb, E *rows, bool toExperts, cudaStream_t s) {
    if (!exchange_)
      return rows;
    using L = ExpertExchange::Layout;
    E *out = allocOn<E>(expertRows(mb) * h(), s);
    exchange_->allToAll(rows, toExperts ? L::PeerMajor : L::PieceMajor, out,
                        toExperts ? L::PieceMajor : L::PeerMajor,
                        static_cast<size_t>(expertCount_ / participants_), T(mb) * h() * sizeof(E), s);
    freeOn(rows, s);
    return out;
  }

  void runForwardPart(int mb, SubOp part, const void *input, void *output, const Launch &at) override {
    const cudaStream_t s = at.stream;
    switch (part) {
    case SubOp::Attention: { // no attention: a = x; then the router
      Saved &st = saved_[mb];
      st.a = allocOn<AT>(T(mb) * h(), s);
      PIPERT_CUDA(cudaMemcpyAsync(st.a, input, T(mb) * h() * sizeof(AT), cudaMemcpyDeviceToDevice, s));
      float *logits = allocOn<float>(T(mb) * static_cast<size_t>(expertCount_), s);
      gemm(at.blas, cudaDataTypeOf<AT>(), tokens(mb), expertCount_, hidden(), {st.a, false, 0},
           {router_.operand(), false, 0}, 0.0f, logits, 0);
      st.chosen = allocOn<int>(slots(mb), s);
      st.gates = allocOn<float>(slots(mb), s);
      routeTopK(logits, tokens(mb), expertCount_, k_, st.chosen, st.gates, s);
      freeOn(logits, s);
      break;
    }
    case SubOp::Dispatch: {
      Saved &st = saved_.at(mb);
      st.slotRow = allocOn<int>(slots(mb), s);
      st.rowSlot = allocOn<int>(expertRows(mb), s);
      planExpertRows(st.chosen, tokens(mb), k_, expertCount_, tokens(mb), st.slotRow, st.rowSlot, s);
      AT *xe = allocOn<AT>(expertRows(mb) * h(), s);
      gatherExpertInputs(st.a, st.rowSlot, k_, xe, expertRows(mb), h(), s);
      st.xe = toExperts(mb, xe, s);
      break;
    }
    case SubOp::Mlp: {
      Saved &st = saved_.at(mb);
      const size_t inner = expertRows(mb) * static_cast<size_t>(ffn_);
      st.u = allocOn<float>(inner, s);
      st.v = allocOn<AT>(inner, s);
      st.f = allocOn<float>(expertRows(mb) * h(), s);
      experts_.forward(blockRows(mb), st.xe, st.u, st.v, st.f, at);
      break;
    }
    case SubOp::Combine: {
      Saved &st = saved_.at(mb);
      st.f = toSources(mb, st.f, s);
      combineExpertOutputs(st.a, st.f, st.slotRow, st.gates, static_cast<AT *>(output), tokens(mb), k_, h(), s);
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
      st.da = allocOn<float>(T(mb) * h(), s); // the residual branch
      convert(dy, st.da, T(mb) * h(), s);
      st.dGates = allocOn<float>(slots(mb), s); // dg_tj = dy_t . f_tj
      gateGradients(dy, st.f, st.slotRow, st.dGates, tokens(mb), k_, h(), s);
      AT *dm = allocOn<AT>(expertRows(mb) * h(), s); // g_tj dy_t into the slot's expert row
      scatterExpertGradients(dy, st.gates, st.rowSlot, k_, dm, expertRows(mb), h(), s);
      st.dm = toExperts(mb, dm, s);
      freeOn(st.f, s);
      freeOn(st.rowSlot, s);
      break;
    }
    case SubOp::Mlp:
      st.du = allocOn<AT>(expertRows(mb) * static_cast<size_t>(ffn_), s);
      st.dxe = allocOn<float>(expertRows(mb) * h(), s);
      experts_.backwardInput(blockRows(mb), st.dm, st.u, st.du, st.dxe, 0.0f, at);
      freeOn(st.u, s);
      if (when == WeightGrad::Now)
        experts_.backwardWeight(blockRows(mb), st.xe, st.v, st.dm, st.du, at);
      break;
    case SubOp::Dispatch: // each token's k expert-input gradients return, ascending j
      st.dxe = toSources(mb, st.dxe, s);
      addExpertInputGradients(st.dxe, st.slotRow, st.da, tokens(mb), k_, h(), s);
      freeOn(st.dxe, s);
      freeOn(st.slotRow, s);
      break;
    case SubOp::Attention: // the router, then no attention: dx = da
      st.dz = allocOn<AT>(T(mb) * static_cast<size_t>(expertCount_), s);
      routerLogitGradients(st.gates, st.dGates, st.chosen, st.dz, tokens(mb), expertCount_, k_, s);
      gemm(at.blas, cudaDataTypeOf<AT>(), tokens(mb), hidden(), expertCount_, {st.dz, false, 0},
           {router_.operand(), true, 0}, 1.0f, st.da, 0); // da += dz Wr^T
      convert(st.da, static_cast<AT *>(gradInput), T(mb) * h(), s);
      freeOn(st.da, s);
      freeOn(st.dGates, s);
      freeOn(st.gates, s);
      freeOn(st.chosen, s);
      if (when == WeightGrad::Now)
        routerWeightGrad(mb, st, at);
      break;
    }
  }

  // Wr += a^T dz.
  void routerWeightGrad(int mb, const Saved &st, const Launch &at) {
    gemm(at.blas, cudaDataTypeOf<AT>(), hidden(), expertCount_, tokens(mb), {st.a, true, 0}, {st.dz, false, 0}, 1.0f,
         router_.grad(), 0);
  }

  void runBackwardWeight(int mb, const Launch &at) override {
    Saved &st = saved_.at(mb);
    experts_.backwardWeight(blockRows(mb), st.xe, st.v, st.dm, st.du, at);
    routerWeightGrad(mb, st, at);
  }

  void releaseMicroBatch(int mb, cudaStream_t stream) override { releaseSaved(saved_, mb, stream); }

  // Sizes of Saved's buffers in forEach's order (expert buffers are E x
  // capacity rows on either side of the exchange).
  size_t savedBytes(int mb, int slot) const {
    const size_t rows = expertRows(mb), ffn = static_cast<size_t>(ffn_);
    const size_t logits = T(mb) * static_cast<size_t>(expertCount_);
    switch (slot) {
    case 0: return T(mb) * h() * sizeof(AT);     // a
    case 1: return slots(mb) * sizeof(int);      // chosen
    case 2: return slots(mb) * sizeof(float);    // gates
    case 3: return slots(mb) * sizeof(int);      // slotRow
    case 4: return rows * sizeof(int);         // rowSlot
    case 5: return rows * h() * sizeof(AT);    // xe
    case 6: return rows * ffn * sizeof(float); // u
    case 7: return rows * ffn * sizeof(AT);    // v
    case 8: return rows * h() * sizeof(float); // f
    case 9: return T(mb) * h() * sizeof(float);  // da
    case 10: return slots(mb) * sizeof(float);   // dGates
    case 11: return rows * h() * sizeof(AT);   // dm
    case 12: return rows * ffn * sizeof(AT);   // du
    case 13: return rows * h() * sizeof(float); // dxe
    case 14: return logits * sizeof(AT);       // dz
    }
    return 0;
  }
  std::vector<StoredBuffer> runTakeStored(int mb) override {
    return takeSaved(saved_, mb, [this, mb](int slot) { return savedBytes(mb, slot); }, owner());
  }
  void runPutStored(int mb, const std::vector<StoredBuffer> &buffers) override {
    putSaved(saved_, mb, buffers, owner());
  }

  int expertCount_, k_, ffn_;
  int participants_; // of the expert group; 1 without expert parallelism
  std::shared_ptr<ExpertExchange> exchange_;
  std::string routerName_;
  DeviceWeight<AT> router_;
  GpuMlp<AT> experts_;
  std::map<int, Saved> saved_;
};

} // namespace

std::unique_ptr<GpuStage> makeGpuMoeStage(Stage<double> &cpu, const MoeConfig &config, const MicroBatchRows &rows, DType dtype,
                                          std::shared_ptr<ExpertExchange> experts) {
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
  const int participants = experts ? experts->size() : 1, participant = experts ? experts->rank() : 0;
  if (participants <= 0 || config.experts % participants != 0 || participant < 0 || participant >= participants)
    throw std::invalid_argument(where + std::to_string(config.experts) + " experts cannot be sharded as participant " +
                                std::to_string(participant) + " of " + std::to_string(participants));
  const int local = config.experts / participants;
  if (moe->localExperts() != local || moe->firstLocalExpert() != participant * local)
    throw std::invalid_argument(where + "the CPU stage " + cpu.describe() + " holds experts " +
                                std::to_string(moe->firstLocalExpert()) + ".." +
                                std::to_string(moe->firstLocalExpert() + moe->localExperts() - 1) +
                                ", but participant " + std::to_string(participant) + " of " +
                                std::to_string(participants) + " holds " + std::to_string(participant * local) +
                                ".." + std::to_string(participant * local + local - 1));
  const int most = rows.most(); // the largest micro-batch's tokens
  if (most > 0 && static_cast<long long>(config.experts) * most * participants > INT_MAX)
    throw std::invalid_argument(where + std::to_string(config.experts) + " experts x " + std::to_string(most) +
                                " tokens of expert capacity exceed the int row index");
  if (dtype == DType::F32)
    return std::make_unique<GpuMoeStage<float>>(cpu, config, rows, dtype, experts);
  return std::make_unique<GpuMoeStage<__nv_bfloat16>>(cpu, config, rows, dtype, experts);
}

} // namespace pipert::cuda
