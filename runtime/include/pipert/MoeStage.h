// MoeStage<T>: a mixture-of-experts stage with expert parallelism.
//   a = Attention(x)                           (AttentionBlock.h)
//   (S_t, g_t) = Router(a_t)                   (Router.h: softmax, top-k, renormalized)
//   y_t = a_t + sum_j g_tj * Expert_{S_tj}(a_t) (each expert Linear-GELU-Linear)
// Sub-operations, as in DeepSeek-V3's overlap:
//   Attention: attention block + router (compute)
//   Dispatch : all-to-all of each (token, choice) to its expert's owner
//   Mlp      : the local experts (compute)
//   Combine  : all-to-all back, gate-weighted sum, residual
// The backward runs the mirror image; the gradient reaches the router through
// the gate values, with the top-k selection held fixed (see Router.h).
//
// The E experts are sharded over the AllToAll group: participant r of size n
// holds experts [r*E/n, (r+1)*E/n). Attention and router weights are
// replicated (Parameter::expertSharded = false). An expert's initial weights
// depend only on (seed, stage index, global expert index), not on the sharding.
#pragma once

#include "pipert/AllToAll.h"
#include "pipert/AttentionBlock.h"
#include "pipert/MlpBlock.h"
#include "pipert/Router.h"
#include "pipert/Stage.h"
#include "pipert/TokenExchange.h"

#include <map>
#include <memory>

namespace pipert {

struct MoeConfig {
  int hidden = 0;       // h
  int expertHidden = 0; // each expert's inner width
  int experts = 0;      // E, across the whole expert-parallel group
  int topK = 2;         // experts per token
  bool attention = true;
};

template <typename T>
class MoeStage final : public Stage<T> {
public:
  // comm: the expert-parallel group; null means a LocalAllToAll (one participant).
  // Throws std::invalid_argument for non-positive sizes, topK outside [1, E],
  // or E not divisible by the group size.
  MoeStage(const MoeConfig &config, StageInit init, std::shared_ptr<AllToAll<T>> comm = nullptr);

  std::string describe() const override;
  std::vector<Parameter<T>> parameters() override;
  int firstLocalExpert() const { return firstExpert_; }
  int localExperts() const { return static_cast<int>(experts_.size()); }

protected:
  void runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) override;
  void runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                       WeightGrad when) override;
  void runBackwardWeight(int mb) override;
  void releaseMicroBatch(int mb) override { saved_.erase(mb); }
  void storedTensors(int mb, std::vector<Tensor<T> *> &out) override {
    Saved &s = saved_.at(mb);
    s.attention.list(out);
    s.router.list(out);
    for (auto *group : {&s.expertRows, &s.expertOut})
      for (Tensor<T> &t : *group)
        out.push_back(&t);
    for (MlpSaved<T> &e : s.expertSaved)
      e.list(out);
    for (Tensor<T> *t : {&s.a, &s.slotOut, &s.dGates, &s.da})
      out.push_back(t);
  }

private:
  struct Saved {
    AttentionSaved<T> attention;
    RouterSaved<T> router;
    TokenExchange<T> exchange;
    Tensor<T> a;                        // attention output: residual and expert input
    std::vector<Tensor<T>> expertRows;  // per local expert: input (fwd), output grad then input grad (bwd)
    std::vector<Tensor<T>> expertOut;   // per local expert: output, until Combine
    std::vector<MlpSaved<T>> expertSaved;
    Tensor<T> slotOut;                  // (tokens*k) x h expert outputs, for the gate gradient
    Tensor<T> dGates;                   // tokens x k
    Tensor<T> da;                       // gradient at a
  };
  MoeStage(const MoeConfig &config, StageInit init, std::shared_ptr<AllToAll<T>> comm, int); // comm non-null
  void forwardCombine(Saved &s, Tensor<T> &output) const;
  void backwardCombine(Saved &s, const Tensor<T> &gradOutput);
  void backwardDispatch(Saved &s);

  MoeConfig config_;
  std::shared_ptr<AllToAll<T>> comm_;
  int firstExpert_ = 0;
  AttentionBlock<T> attention_;
  Router<T> router_;
  std::vector<MlpBlock<T>> experts_; // local shard
  std::map<int, Saved> saved_;
};

extern template class MoeStage<float>;
extern template class MoeStage<double>;

} // namespace pipert
