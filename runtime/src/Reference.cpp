// Reference<T> (see Reference.h).
#include "pipert/Reference.h"

#include "pipert/Loss.h"

#include <algorithm>
#include <stdexcept>

namespace pipert {

template <typename T> Reference<T>::Reference(std::vector<Stage<T> *> stages) : stages_(std::move(stages)) {
  if (stages_.empty())
    throw std::invalid_argument("reference: no stages");
  for (size_t s = 0; s < stages_.size(); ++s) {
    if (!stages_[s])
      throw std::invalid_argument("reference: stage " + std::to_string(s) + " is null");
    if (stages_[s]->stageIndex() != static_cast<int>(s))
      throw std::invalid_argument("reference: position " + std::to_string(s) + " holds stage " +
                                  std::to_string(stages_[s]->stageIndex()));
    if (s > 0 && stages_[s]->inputWidth() != stages_[s - 1]->outputWidth())
      throw std::invalid_argument("reference: stage " + std::to_string(s) + " takes " +
                                  std::to_string(stages_[s]->inputWidth()) + " columns, stage " +
                                  std::to_string(s - 1) + " gives " +
                                  std::to_string(stages_[s - 1]->outputWidth()));
  }
}

template <typename T> void Reference<T>::checkBatch(const BatchSpec &batch) const {
  validateBatch(batch);
  if (batch.loss == LossKind::CrossEntropy && stages_[0]->inputWidth() != 1)
    throw std::invalid_argument("reference: cross-entropy batches are token ids (1 column), stage 0 takes " +
                                std::to_string(stages_[0]->inputWidth()) + " columns");
  if (batch.loss == LossKind::Mse && batch.hidden != stages_[0]->inputWidth())
    throw std::invalid_argument("reference: batch hidden size " + std::to_string(batch.hidden) +
                                " differs from the model's " + std::to_string(stages_[0]->inputWidth()));
  if (batch.loss == LossKind::CrossEntropy && batch.vocab > stages_.back()->outputWidth())
    throw std::invalid_argument("reference: a vocabulary of " + std::to_string(batch.vocab) +
                                " tokens, but the last stage gives " +
                                std::to_string(stages_.back()->outputWidth()) + " logits");
}

template <typename T> Tensor<T> Reference<T>::forwardAll(int mb, const Tensor<T> &input) {
  Tensor<T> x = input, y;
  for (Stage<T> *stage : stages_) {
    stage->forward(mb, x, y);
    std::swap(x, y);
  }
  return x;
}

template <typename T> ReferenceResult<T> Reference<T>::run(const BatchSpec &batch, int first, int count) {
  checkBatch(batch);
  if (first < 0 || count < 0 || first + count > batch.microBatches)
    throw std::invalid_argument("reference: micro-batches [" + std::to_string(first) + ", " +
                                std::to_string(first + count) + ") outside [0, " +
                                std::to_string(batch.microBatches) + ")");
  for (Stage<T> *stage : stages_)
    stage->zeroGradients();
  ReferenceResult<T> result;
  if (batch.sizes) {
    runWholeBatch(batch, first, count, result);
    for (Stage<T> *stage : stages_)
      result.gradients.push_back(snapshotGradients(*stage));
    return result;
  }
  for (int mb = first; mb < first + count; ++mb) {
    const Tensor<T> output = forwardAll(mb, microBatchInput<T>(batch, mb));
    const Tensor<T> target = microBatchTarget<T>(batch, mb);
    Tensor<T> grad, gradIn;
    result.microBatchLosses.push_back(lossAndGrad(batch.loss, output, target, grad));
    result.loss += result.microBatchLosses.back();
    for (size_t s = stages_.size(); s-- > 0;) {
      stages_[s]->backward(mb, grad, gradIn);
      std::swap(grad, gradIn);
    }
  }
  for (Stage<T> *stage : stages_)
    result.gradients.push_back(snapshotGradients(*stage));
  return result;
}

// Micro-batches of declared sizes: the loss over the whole batch at once, the
// mean over all its tokens (times the micro-batch count, the scale equal
// micro-batches' summed means have), not the micro-batches' own losses. Each
// micro-batch's forward runs on its own rows (attention stays within it); the
// outputs are joined, one loss and gradient taken, and the gradient split
// back by rows for the backwards.
template <typename T>
void Reference<T>::runWholeBatch(const BatchSpec &batch, int first, int count, ReferenceResult<T> &result) {
  std::vector<Tensor<T>> outputs;
  size_t rows = 0, targetRows = 0, cols = 0, targetCols = 0;
  std::vector<Tensor<T>> targets;
  for (int mb = first; mb < first + count; ++mb) {
    outputs.push_back(forwardAll(mb, microBatchInput<T>(batch, mb)));
    targets.push_back(microBatchTarget<T>(batch, mb));
    rows += outputs.back().rows();
    targetRows += targets.back().rows();
    cols = outputs.back().cols();
    targetCols = targets.back().cols();
  }
  auto join = [](const std::vector<Tensor<T>> &parts, size_t rows, size_t cols) {
    Tensor<T> whole(rows, cols);
    size_t at = 0;
    for (const Tensor<T> &part : parts) {
      std::copy(part.data(), part.data() + part.size(), whole.data() + at);
      at += part.size();
    }
    return whole;
  };
  Tensor<T> grad;
  double mean = lossAndGrad(batch.loss, join(outputs, rows, cols), join(targets, targetRows, targetCols), grad);
  result.loss = mean * double(count);
  size_t at = 0;
  for (int mb = first; mb < first + count; ++mb) {
    const Tensor<T> &out = outputs[size_t(mb - first)];
    Tensor<T> part(out.rows(), out.cols()), gradIn;
    for (size_t e = 0; e < part.size(); ++e)
      part[e] = T(double(grad[at + e]) * double(count));
    at += part.size();
    result.microBatchLosses.push_back(lossOnly(batch.loss, out, targets[size_t(mb - first)]) *
                                      batch.lossWeight(mb));
    for (size_t s = stages_.size(); s-- > 0;) {
      stages_[s]->backward(mb, part, gradIn);
      std::swap(part, gradIn);
    }
  }
}

template <typename T> double Reference<T>::loss(const BatchSpec &batch) {
  checkBatch(batch);
  double total = 0;
  for (int mb = 0; mb < batch.microBatches; ++mb) {
    total += lossOnly(batch.loss, forwardAll(mb, microBatchInput<T>(batch, mb)), microBatchTarget<T>(batch, mb)) *
             batch.lossWeight(mb);
    for (Stage<T> *stage : stages_)
      stage->discard(mb);
  }
  return total;
}

template class Reference<float>;
template class Reference<double>;

} // namespace pipert
