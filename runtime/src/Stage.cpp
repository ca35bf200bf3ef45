// The shared part of every stage: shape validation, the protocol checks of
// MicroBatchTracker, and the monolithic calls expressed as their sub-operation
// parts (which is what makes parts-in-order bit-identical to the whole).
#include "pipert/Stage.h"

#include <stdexcept>

namespace pipert {

template <typename T>
Stage<T>::Stage(const char *kind, int inputWidth, int outputWidth, StageInit init)
    : inputWidth_(inputWidth), outputWidth_(outputWidth), init_(init),
      tracker_("stage " + std::to_string(init.stageIndex) + " (" + kind + ")") {
  if (inputWidth <= 0 || outputWidth <= 0)
    throw std::invalid_argument(tracker_.owner() + ": input and output widths must be positive, got " +
                                std::to_string(inputWidth) + " and " + std::to_string(outputWidth));
  if (init.stageIndex < 0)
    throw std::invalid_argument(tracker_.owner() + ": stage index must be non-negative");
}

template <typename T>
void Stage<T>::forwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) {
  if (part == SubOp::Attention && (input.rows() == 0 || input.cols() != static_cast<size_t>(inputWidth_)))
    throw std::invalid_argument(tracker_.owner() + ", micro-batch " + std::to_string(mb) + ": input is " +
                                input.shapeString() + ", expected tokens x " + std::to_string(inputWidth_) +
                                " with at least one token");
  tracker_.forwardPart(mb, part, input.rows());
  runForwardPart(mb, part, input, output);
  if (part == kForwardParts.back())
    checkGiven(mb, "forward gave an output", output, outputWidth_);
}

template <typename T>
void Stage<T>::checkGiven(int mb, const char *what, const Tensor<T> &given, int width) const {
  const size_t tokens = tracker_.tokens(mb);
  if (given.rows() != tokens || given.cols() != static_cast<size_t>(width))
    throw std::logic_error(tracker_.owner() + ", micro-batch " + std::to_string(mb) + ": " + what + " of " +
                           given.shapeString() + ", expected " + std::to_string(tokens) + "x" +
                           std::to_string(width) + " (tokens x width)");
}

template <typename T>
void Stage<T>::backwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                            WeightGrad when) {
  if (part == SubOp::Combine && tracker_.forwardDone(mb) &&
      (gradOutput.rows() != tracker_.tokens(mb) || gradOutput.cols() != static_cast<size_t>(outputWidth_)))
    throw std::invalid_argument(tracker_.owner() + ", micro-batch " + std::to_string(mb) +
                                ": output gradient is " + gradOutput.shapeString() + ", expected " +
                                std::to_string(tracker_.tokens(mb)) + "x" + std::to_string(outputWidth_));
  const bool last = tracker_.backwardPart(mb, part, when);
  runBackwardPart(mb, part, gradOutput, gradInput, when);
  if (last)
    checkGiven(mb, "backward gave an input gradient", gradInput, inputWidth_);
  if (last && when == WeightGrad::Now) {
    releaseMicroBatch(mb);
    tracker_.finish(mb);
  }
}

template <typename T> void Stage<T>::forward(int mb, const Tensor<T> &input, Tensor<T> &output) {
  for (SubOp part : kForwardParts)
    forwardPart(mb, part, input, output);
}

template <typename T> void Stage<T>::backward(int mb, const Tensor<T> &gradOutput, Tensor<T> &gradInput) {
  for (SubOp part : kBackwardParts)
    backwardPart(mb, part, gradOutput, gradInput, WeightGrad::Now);
}

template <typename T>
void Stage<T>::backwardInput(int mb, const Tensor<T> &gradOutput, Tensor<T> &gradInput) {
  for (SubOp part : kBackwardParts)
    backwardPart(mb, part, gradOutput, gradInput, WeightGrad::Deferred);
}

template <typename T> void Stage<T>::backwardWeight(int mb) {
  tracker_.backwardWeight(mb);
  runBackwardWeight(mb);
  releaseMicroBatch(mb);
  tracker_.finish(mb);
}

template <typename T> void Stage<T>::zeroGradients() {
  for (Parameter<T> &p : parameters())
    p.grad->fill(T(0));
}

template <typename T> void Stage<T>::discard(int mb) {
  releaseMicroBatch(mb);
  tracker_.finish(mb);
}

template <typename T> std::vector<Tensor<T>> Stage<T>::takeStored(int mb) {
  tracker_.offload(mb); // the protocol first: mb stored, forward complete
  std::vector<Tensor<T> *> stored;
  try {
    storedTensors(mb, stored);
  } catch (...) { // a stage that cannot be offloaded keeps mb as it was
    tracker_.reload(mb);
    throw;
  }
  std::vector<Tensor<T>> out;
  out.reserve(stored.size());
  for (Tensor<T> *t : stored) {
    out.push_back(std::move(*t));
    *t = Tensor<T>();
  }
  return out;
}

template <typename T> void Stage<T>::putStored(int mb, std::vector<Tensor<T>> tensors) {
  if (!tracker_.offloaded(mb))
    tracker_.reload(mb); // throws, naming mb
  std::vector<Tensor<T> *> stored;
  storedTensors(mb, stored);
  if (stored.size() != tensors.size())
    throw std::logic_error(tracker_.owner() + ", micro-batch " + std::to_string(mb) + ": " +
                           std::to_string(tensors.size()) + " tensors given back, " +
                           std::to_string(stored.size()) + " stored");
  tracker_.reload(mb);
  for (size_t k = 0; k < stored.size(); ++k)
    *stored[k] = std::move(tensors[k]);
}

template <typename T> void Stage<T>::storedTensors(int mb, std::vector<Tensor<T> *> &) {
  throw std::logic_error(tracker_.owner() + ", micro-batch " + std::to_string(mb) +
                         ": this stage cannot be offloaded (it does not list its stored tensors: "
                         "Stage::storedTensors)");
}

template class Stage<float>;
template class Stage<double>;

} // namespace pipert
