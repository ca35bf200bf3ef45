// MoeStage<T> (see MoeStage.h): validation, the four forward and four backward
// parts, and the deferred weight half.
#include "pipert/MoeStage.h"

#include "pipert/Kernels.h"

#include <stdexcept>

namespace pipert {

namespace {
template <typename T>
std::shared_ptr<AllToAll<T>> orLocal(std::shared_ptr<AllToAll<T>> comm) {
  return comm ? std::move(comm) : std::make_shared<LocalAllToAll<T>>();
}

template <typename T>
const MoeConfig &validated(const MoeConfig &c, const StageInit &init, const AllToAll<T> &comm) {
  const std::string where = "moe stage " + std::to_string(init.stageIndex) + ": ";
  auto positive = [&](int value, const char *name) {
    if (value <= 0)
      throw std::invalid_argument(where + name + " must be positive, got " + std::to_string(value));
  };
  positive(c.hidden, "hidden size");
  positive(c.expertHidden, "expertHidden");
  positive(c.experts, "number of experts");
  positive(c.topK, "topK");
  if (c.topK > c.experts)
    throw std::invalid_argument(where + "topK (" + std::to_string(c.topK) + ") exceeds the number of experts (" +
                                std::to_string(c.experts) + ")");
  positive(comm.size(), "expert-parallel size");
  if (c.experts % comm.size() != 0)
    throw std::invalid_argument(where + std::to_string(c.experts) + " experts are not divisible by the " +
                                "expert-parallel size " + std::to_string(comm.size()));
  if (comm.rank() < 0 || comm.rank() >= comm.size())
    throw std::invalid_argument(where + "expert-parallel rank " + std::to_string(comm.rank()) +
                                " outside [0, " + std::to_string(comm.size()) + ")");
  return c;
}
} // namespace

template <typename T>
MoeStage<T>::MoeStage(const MoeConfig &config, StageInit init, std::shared_ptr<AllToAll<T>> comm)
    : MoeStage(config, init, orLocal(std::move(comm)), 0) {}

template <typename T>
MoeStage<T>::MoeStage(const MoeConfig &config, StageInit init, std::shared_ptr<AllToAll<T>> comm, int)
    : Stage<T>("moe", validated(config, init, *comm).hidden, init), config_(config), comm_(std::move(comm)),
      attention_(config.hidden, config.attention), router_(config.hidden, config.experts, config.topK) {
  const int perRank = config.experts / comm_->size();
  firstExpert_ = comm_->rank() * perRank;
  experts_.reserve(static_cast<size_t>(perRank));
  for (int e = firstExpert_; e < firstExpert_ + perRank; ++e)
    experts_.emplace_back("experts." + std::to_string(e), config.hidden, config.expertHidden);
  attention_.init(init.seed, init.stageIndex);
  router_.init(init.seed, init.stageIndex);
  for (MlpBlock<T> &expert : experts_)
    expert.init(init.seed, init.stageIndex);
}

template <typename T> std::string MoeStage<T>::describe() const {
  return "moe(hidden=" + std::to_string(config_.hidden) + ", experts=" + std::to_string(config_.experts) +
         ", top-" + std::to_string(config_.topK) + ", expert ffn=" + std::to_string(config_.expertHidden) +
         ", ep " + std::to_string(comm_->rank()) + "/" + std::to_string(comm_->size()) +
         (config_.attention ? ", attention)" : ", no attention)");
}

template <typename T> std::vector<Parameter<T>> MoeStage<T>::parameters() {
  std::vector<Parameter<T>> out;
  attention_.appendParameters(out);
  router_.appendParameters(out);
  for (MlpBlock<T> &expert : experts_)
    expert.appendParameters(out, true);
  return out;
}

template <typename T>
void MoeStage<T>::runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) {
  Saved &s = saved_[mb];
  switch (part) {
  case SubOp::Attention:
    attention_.forward(input, s.a, s.attention);
    router_.route(s.a, s.router);
    break;
  case SubOp::Dispatch: {
    const size_t k = static_cast<size_t>(config_.topK);
    Tensor<T> slots(s.a.rows() * k, s.a.cols());
    for (size_t i = 0; i < slots.rows(); ++i)
      std::copy(s.a.row(i / k), s.a.row(i / k) + s.a.cols(), slots.row(i));
    s.exchange.plan(s.router.experts, config_.experts / comm_->size(), comm_->size());
    s.exchange.slotsToExperts(*comm_, slots, s.expertRows);
    break;
  }
  case SubOp::Mlp:
    s.expertOut.resize(experts_.size());
    s.expertSaved.resize(experts_.size());
    for (size_t e = 0; e < experts_.size(); ++e)
      experts_[e].forward(std::move(s.expertRows[e]), s.expertOut[e], s.expertSaved[e]);
    s.expertRows.clear();
    break;
  case SubOp::Combine:
    forwardCombine(s, output);
    break;
  }
}

// y_t = a_t + sum_j g_tj * f_tj, summed in ascending j.
template <typename T> void MoeStage<T>::forwardCombine(Saved &s, Tensor<T> &output) const {
  s.exchange.expertsToSlots(*comm_, s.expertOut, s.slotOut);
  s.expertOut.clear();
  const size_t k = static_cast<size_t>(config_.topK), h = s.a.cols();
  output = s.a;
  for (size_t t = 0; t < output.rows(); ++t)
    for (size_t j = 0; j < k; ++j) {
      const T g = s.router.gates(t, j);
      const T *f = s.slotOut.row(t * k + j);
      for (size_t c = 0; c < h; ++c)
        output(t, c) += g * f[c];
    }
  s.a.release();
}

template <typename T>
void MoeStage<T>::runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                                  WeightGrad when) {
  Saved &s = saved_.at(mb);
  switch (part) {
  case SubOp::Combine:
    backwardCombine(s, gradOutput);
    break;
  case SubOp::Mlp:
    for (size_t e = 0; e < experts_.size(); ++e) {
      Tensor<T> dIn;
      experts_[e].backwardInput(s.expertRows[e], dIn, s.expertSaved[e]);
      s.expertRows[e] = std::move(dIn);
      if (when == WeightGrad::Now)
        experts_[e].backwardWeight(s.expertSaved[e]);
    }
    break;
  case SubOp::Dispatch:
    backwardDispatch(s);
    break;
  case SubOp::Attention:
    router_.backwardInput(s.dGates, s.da, s.router);
    attention_.backwardInput(s.da, gradInput, s.attention);
    s.da.release();
    s.dGates.release();
    if (when == WeightGrad::Now) {
      router_.backwardWeight(s.router);
      attention_.backwardWeight(s.attention);
    }
    break;
  }
}

// dg_tj = dy_t . f_tj; the expert output gradient of slot (t, j) is g_tj * dy_t.
template <typename T> void MoeStage<T>::backwardCombine(Saved &s, const Tensor<T> &gradOutput) {
  const size_t k = static_cast<size_t>(config_.topK), h = gradOutput.cols();
  s.da = gradOutput; // residual
  s.dGates.reset(gradOutput.rows(), k);
  Tensor<T> slotGrad(gradOutput.rows() * k, h);
  for (size_t t = 0; t < gradOutput.rows(); ++t)
    for (size_t j = 0; j < k; ++j) {
      const T g = s.router.gates(t, j);
      const T *f = s.slotOut.row(t * k + j);
      T *df = slotGrad.row(t * k + j);
      T dot = T(0);
      for (size_t c = 0; c < h; ++c) {
        dot += gradOutput(t, c) * f[c];
        df[c] = g * gradOutput(t, c);
      }
      s.dGates(t, j) = dot;
    }
  s.slotOut.release();
  s.exchange.slotsToExperts(*comm_, slotGrad, s.expertRows);
}

// Each token's k expert-input gradients return and add to da, ascending j.
template <typename T> void MoeStage<T>::backwardDispatch(Saved &s) {
  Tensor<T> slotGrad;
  s.exchange.expertsToSlots(*comm_, s.expertRows, slotGrad);
  s.expertRows.clear();
  const size_t k = static_cast<size_t>(config_.topK), h = s.da.cols();
  for (size_t t = 0; t < s.da.rows(); ++t)
    for (size_t j = 0; j < k; ++j) {
      const T *d = slotGrad.row(t * k + j);
      for (size_t c = 0; c < h; ++c)
        s.da(t, c) += d[c];
    }
}

template <typename T> void MoeStage<T>::runBackwardWeight(int mb) {
  Saved &s = saved_.at(mb);
  for (size_t e = 0; e < experts_.size(); ++e)
    experts_[e].backwardWeight(s.expertSaved[e]);
  router_.backwardWeight(s.router);
  attention_.backwardWeight(s.attention);
}

template class MoeStage<float>;
template class MoeStage<double>;

} // namespace pipert
