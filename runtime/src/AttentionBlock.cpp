// AttentionBlock<T> (see AttentionBlock.h). Backward of p = softmax(s):
// ds = p * (dp - rowsum(dp * p)); masked entries have p = 0 and so get no
// gradient.
#include "pipert/AttentionBlock.h"

#include "pipert/Kernels.h"

#include <cmath>
#include <limits>

namespace pipert {

template <typename T>
AttentionBlock<T>::AttentionBlock(int hidden, bool enabled)
    : enabled_(enabled), scale_(static_cast<T>(1.0 / std::sqrt(static_cast<double>(hidden)))),
      wq_("attention.wq", hidden, hidden, false), wk_("attention.wk", hidden, hidden, false),
      wv_("attention.wv", hidden, hidden, false), wo_("attention.wo", hidden, hidden, false) {}

template <typename T> void AttentionBlock<T>::init(uint64_t seed, int stageIndex) {
  for (Linear<T> *l : {&wq_, &wk_, &wv_, &wo_})
    l->init(seed, stageIndex);
}

template <typename T>
void AttentionBlock<T>::forward(const Tensor<T> &x, Tensor<T> &y, AttentionSaved<T> &saved) const {
  if (!enabled_) {
    y = x;
    return;
  }
  saved.x = x;
  wq_.forward(x, saved.q);
  wk_.forward(x, saved.k);
  wv_.forward(x, saved.v);
  Tensor<T> scores;
  matmulTransB(saved.q, saved.k, scores);
  for (size_t i = 0; i < scores.rows(); ++i)
    for (size_t j = 0; j < scores.cols(); ++j)
      scores(i, j) = j > i ? -std::numeric_limits<T>::infinity() : scores(i, j) * scale_;
  softmaxRows(scores, saved.p);
  matmul(saved.p, saved.v, saved.o);
  wo_.forward(saved.o, y);
  addInPlace(y, x);
}

template <typename T>
void AttentionBlock<T>::backwardInput(const Tensor<T> &dy, Tensor<T> &dx, AttentionSaved<T> &saved) const {
  if (!enabled_) {
    dx = dy;
    return;
  }
  saved.dy = dy;
  Tensor<T> dO, dP, dS, term;
  wo_.backwardInput(dy, dO);
  matmulTransB(dO, saved.v, dP);
  matmulTransA(saved.p, dO, saved.dv);
  softmaxRowsBackward(saved.p, dP, dS);
  for (size_t i = 0; i < dS.size(); ++i)
    dS[i] *= scale_;
  matmul(dS, saved.k, saved.dq);
  matmulTransA(dS, saved.q, saved.dk);

  dx = dy; // residual
  wq_.backwardInput(saved.dq, term);
  addInPlace(dx, term);
  wk_.backwardInput(saved.dk, term);
  addInPlace(dx, term);
  wv_.backwardInput(saved.dv, term);
  addInPlace(dx, term);
  for (Tensor<T> *t : {&saved.q, &saved.k, &saved.v, &saved.p})
    t->release();
}

template <typename T> void AttentionBlock<T>::backwardWeight(AttentionSaved<T> &saved) {
  if (enabled_) {
    wq_.accumulateWeightGrad(saved.x, saved.dq);
    wk_.accumulateWeightGrad(saved.x, saved.dk);
    wv_.accumulateWeightGrad(saved.x, saved.dv);
    wo_.accumulateWeightGrad(saved.o, saved.dy);
  }
  saved = AttentionSaved<T>();
}

template <typename T> void AttentionBlock<T>::appendParameters(std::vector<Parameter<T>> &out) {
  if (!enabled_)
    return;
  for (Linear<T> *l : {&wq_, &wk_, &wv_, &wo_})
    l->appendParameters(out, false);
}

template class AttentionBlock<float>;
template class AttentionBlock<double>;

} // namespace pipert
