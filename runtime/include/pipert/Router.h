// Router<T>: the MoE gate. Per token t with input x_t:
//   z_t = x_t Wr                      (h -> E logits, no bias)
//   p_t = softmax(z_t)                (over all E experts)
//   S_t = top-k indices of p_t        (ties: lower expert index)
//   g_tj = p_t[S_tj] / sum_j' p_t[S_tj']   (renormalized over the k chosen)
// Backward treats the selection S as a fixed mask (it is piecewise constant,
// so this is the exact gradient wherever no tie is crossed). The renormalized
// gates equal a softmax over the chosen logits alone, so
//   dz_t[S_tj] = g_tj (dg_tj - sum_j' g_tj' dg_tj'),  dz_t[e] = 0 otherwise,
// and the gradient reaches Wr and x through the gate values.
#pragma once

#include "pipert/Linear.h"

#include <vector>

namespace pipert {

template <typename T>
struct RouterSaved {
  Tensor<T> x;              // router input (for W)
  std::vector<int> experts; // tokens x k, row-major: the chosen expert of (t, j)
  Tensor<T> gates;          // tokens x k
  Tensor<T> dz;             // tokens x E, for W
  // Its tensors, in order (what an offload moves; the choices stay).
  void list(std::vector<Tensor<T> *> &out) {
    for (Tensor<T> *t : {&x, &gates, &dz})
      out.push_back(t);
  }
};

template <typename T>
class Router {
public:
  Router(int hidden, int experts, int topK);
  void init(uint64_t seed, int stageIndex);
  int topK() const { return topK_; }

  // Fills saved.experts and saved.gates.
  void route(const Tensor<T> &x, RouterSaved<T> &saved) const;
  // dGates: tokens x k. Adds the gradient w.r.t. x into dx (same shape as x).
  void backwardInput(const Tensor<T> &dGates, Tensor<T> &dx, RouterSaved<T> &saved) const;
  void backwardWeight(RouterSaved<T> &saved);

  void appendParameters(std::vector<Parameter<T>> &out);

private:
  int experts_;
  int topK_;
  Linear<T> gate_;
};

extern template class Router<float>;
extern template class Router<double>;

} // namespace pipert
