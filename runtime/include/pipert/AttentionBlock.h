// AttentionBlock<T>: the "attention" sub-operation of both built-in stages.
// A micro-batch of b tokens is one sequence; the block is single-head causal
// self-attention with a residual and no LayerNorm:
//   q = x Wq, k = x Wk, v = x Wv                       (h x h each, no bias)
//   p = softmax(q k^T / sqrt(h), causal mask)         (b x b)
//   y = x + (p v) Wo
// Real token mixing (a wrong token order or a mixed-up micro-batch changes the
// numbers) at toy cost, with four weight matrices for the W half to handle.
// Disabled (config `attention = false`), the block is the identity with no
// parameters -- DeepSeek's DualPipe example, which has no attention at all.
#pragma once

#include "pipert/Linear.h"

#include <vector>

namespace pipert {

template <typename T>
struct AttentionSaved {
  Tensor<T> x, q, k, v, p, o; // forward
  Tensor<T> dy, dq, dk, dv;   // for W: gradients at the four projections' outputs
  // Every tensor above, in order (what an offload moves, Stage::storedTensors).
  void list(std::vector<Tensor<T> *> &out) {
    for (Tensor<T> *t : {&x, &q, &k, &v, &p, &o, &dy, &dq, &dk, &dv})
      out.push_back(t);
  }
};

template <typename T>
class AttentionBlock {
public:
  AttentionBlock(int hidden, bool enabled);
  bool enabled() const { return enabled_; }
  void init(uint64_t seed, int stageIndex);

  void forward(const Tensor<T> &x, Tensor<T> &y, AttentionSaved<T> &saved) const;
  // dx from dy; keeps what backwardWeight needs and frees q, k, v, p.
  void backwardInput(const Tensor<T> &dy, Tensor<T> &dx, AttentionSaved<T> &saved) const;
  void backwardWeight(AttentionSaved<T> &saved);

  void appendParameters(std::vector<Parameter<T>> &out);

private:
  bool enabled_;
  T scale_; // 1 / sqrt(h)
  Linear<T> wq_, wk_, wv_, wo_;
};

extern template class AttentionBlock<float>;
extern template class AttentionBlock<double>;

} // namespace pipert
