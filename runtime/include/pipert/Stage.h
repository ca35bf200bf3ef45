// Stage<T>: one pipeline stage (a slice of the model), the unit an executor
// places on a (rank, chunk) slot and calls per micro-batch. T is float or
// double; the stage is typed rather than dtype-erased because everything it
// touches (activations, gradients, the all-to-all) shares its element type, and
// an emitted program picks one dtype for the whole model.
//
// Protocol per micro-batch `mb` (an arbitrary key; the executor's global index):
//   forward(mb, x, y)                      stores what the backward needs
//   backward(mb, dy, dx)                   full B: input and weight gradients, frees mb
//   backwardInput(mb, dy, dx)              I: input gradient only, keeps what W needs
//   backwardWeight(mb)                     W: accumulates weight gradients, frees mb
// and, for overlap pairs, the same work one sub-operation at a time:
//   forwardPart(mb, p, x, y)   for p in kForwardParts  (x read by Attention, y written by Combine)
//   backwardPart(mb, p, dy, dx, when) for p in kBackwardParts (dy read by Combine, dx written by Attention)
// The monolithic calls are exactly their parts in order, so parts in order give
// bit-identical results. Weight gradients are always accumulated (+=) into the
// gradient tensors; I then W gives bit-identical gradients to B.
//
// A Stage is not thread-safe: one rank thread owns it. Protocol misuse throws
// std::logic_error (see MicroBatchTracker.h); a wrongly shaped input throws
// std::invalid_argument.
#pragma once

#include "pipert/MicroBatchTracker.h"
#include "pipert/Parameter.h"
#include "pipert/SubOp.h"
#include "pipert/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipert {

// What decides a stage's initial parameters: two stages built from the same
// config and the same StageInit are identical (replicated copies, e.g. DualPipe).
struct StageInit {
  uint64_t seed = 0;
  int stageIndex = 0;
};

template <typename T>
class Stage {
public:
  virtual ~Stage() = default;
  Stage(const Stage &) = delete;
  Stage &operator=(const Stage &) = delete;

  int stageIndex() const { return init_.stageIndex; }
  uint64_t seed() const { return init_.seed; }
  int hidden() const { return inputWidth_; }
  // Columns of the tensors the stage takes and gives: both the hidden size for
  // the built-in stages; a user's first stage may take token ids (1 column) and
  // its last give logits (vocabulary columns).
  int inputWidth() const { return inputWidth_; }
  int outputWidth() const { return outputWidth_; }
  // e.g. "dense(hidden=8, ffn=32, attention)"
  virtual std::string describe() const = 0;

  void forward(int mb, const Tensor<T> &input, Tensor<T> &output);
  void backward(int mb, const Tensor<T> &gradOutput, Tensor<T> &gradInput);
  void backwardInput(int mb, const Tensor<T> &gradOutput, Tensor<T> &gradInput);
  void backwardWeight(int mb);

  void forwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output);
  void backwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput, WeightGrad when);

  // All parameters with their gradients, in a fixed order with stable names.
  virtual std::vector<Parameter<T>> parameters() = 0;
  void zeroGradients();

  // Micro-batches whose state is stored (forward run, backward or W pending);
  // zero at the end of a correct step.
  size_t storedMicroBatches() const { return tracker_.pending(); }
  // Drops mb's stored state without a backward (forward-only evaluation).
  void discard(int mb);

protected:
  Stage(const char *kind, int hidden, StageInit init) : Stage(kind, hidden, hidden, init) {}
  Stage(const char *kind, int inputWidth, int outputWidth, StageInit init);

  virtual void runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) = 0;
  virtual void runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                               WeightGrad when) = 0;
  virtual void runBackwardWeight(int mb) = 0;
  virtual void releaseMicroBatch(int mb) = 0;

private:
  int inputWidth_, outputWidth_;
  StageInit init_;
  MicroBatchTracker tracker_;
};

extern template class Stage<float>;
extern template class Stage<double>;

} // namespace pipert
