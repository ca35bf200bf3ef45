// Stage<T>: one pipeline stage (a slice of the model), the unit an executor
// places on a (rank, chunk) slot and calls per micro-batch. This header, with
// SimpleStage.h and StageRegistry.h, is the stable stage API: a compiled
// schedule trains any model written against it. T is float or double; the
// stage is typed rather than dtype-erased because everything it touches
// (activations, gradients, the all-to-all) shares its element type, and an
// emitted program picks one dtype for the whole model.
//
// Calls per micro-batch `mb` (an arbitrary key, the executor's global index;
// several micro-batches are in flight at once, in any order the schedule's
// checks proved):
//   forward(mb, x, y)          F: y = stage(x); stores what the backward needs
//   backward(mb, dy, dx)       B: dx and the weight gradients; frees mb
//   backwardInput(mb, dy, dx)  I: dx only; keeps what W needs
//   backwardWeight(mb)         W: the weight gradients; frees mb
// x is tokens x inputWidth(), y tokens x outputWidth(); dy and dx likewise.
// A stage resizes y and dx itself (Tensor::reset); the base class checks both
// shapes after the call, and the input shapes before it.
//
// Stored state and memory: from forward until the B or W that frees it, a
// micro-batch's state belongs to the stage (releaseMicroBatch frees it). The
// executor measures peak live activations as storedMicroBatches() summed over
// a rank's stages, which this base class counts from the calls themselves, so
// every stage -- built-in or the user's -- is counted the same way and must
// match the compiler's prediction. A stage must not keep a micro-batch's data
// after releaseMicroBatch(mb), nor free it before.
//
// Parameters: parameters() lists every trainable tensor with its gradient, in
// a fixed order with stable, unique names (the reference check, gradient sync
// and checkpoints pair copies by name). Weight gradients are always ADDED (+=)
// to the gradient tensors, never overwritten: the runtime zeroes them once per
// step (zeroGradients) and sums micro-batches, then the copies of a replicated
// stage. Initial values must depend on the StageInit only (seed, stage index):
// the two copies of a DualPipe stage and the reference's copy are built
// separately and must start bit-identical, so they take identical steps.
//
// Sub-operations, for overlap pairs (DeepSeek-V3's F&B): the same work one part
// at a time, around the all-to-alls the runtime manages (SubOp.h):
//   forwardPart(mb, p, x, y)          p in Attention, Dispatch, Mlp, Combine
//                                     (x read by Attention, y written by Combine)
//   backwardPart(mb, p, dy, dx, when) p in Combine, Mlp, Dispatch, Attention
//                                     (dy read by Combine, dx written by Attention)
// The whole calls above are exactly their parts in order, so parts in order
// give bit-identical results, and I then W gives bit-identical gradients to B.
// A stage subclass implements the parts (runForwardPart, runBackwardPart,
// runBackwardWeight, releaseMicroBatch), as the built-in DenseStage and
// MoeStage do; SimpleStage.h maps three whole calls onto them for a stage that
// has no all-to-all to hide.
//
// Threading: a Stage is not thread-safe. One rank thread owns it and makes all
// its calls; two stages of one rank may run at once (the halves of an overlap
// pair on different chunks), so stages must not share mutable state.
//
// Errors: a stage throws std::invalid_argument for a bad configuration or a
// wrongly shaped tensor and std::logic_error for a broken invariant; protocol
// misuse (backward before forward, W without I, ...) is caught here and throws
// std::logic_error naming the stage and micro-batch (MicroBatchTracker.h). An
// emitted program reports the message and exits 2 when it comes from building
// the stages or from the --check reference, and 4 ("rank R failed") when it
// comes from a rank's op during a step.
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
  // Columns of the tensors the stage takes and gives: both the hidden size for
  // the built-in stages; a user's stages may change width along the chain (the
  // first may take token ids, 1 column; the last give logits). Stage s's output
  // width is stage s+1's input width.
  int inputWidth() const { return inputWidth_; }
  int outputWidth() const { return outputWidth_; }
  int hidden() const { return inputWidth_; } // the input width (the built-in stages' hidden size)
  // e.g. "dense(hidden=8, ffn=32, attention)"
  virtual std::string describe() const = 0;

  void forward(int mb, const Tensor<T> &input, Tensor<T> &output);
  void backward(int mb, const Tensor<T> &gradOutput, Tensor<T> &gradInput);
  void backwardInput(int mb, const Tensor<T> &gradOutput, Tensor<T> &gradInput);
  void backwardWeight(int mb);

  void forwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output);
  void backwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput, WeightGrad when);

  // All parameters with their gradients, in a fixed order with stable, unique
  // names; the pointers stay valid for the stage's lifetime.
  virtual std::vector<Parameter<T>> parameters() = 0;
  void zeroGradients();

  // Micro-batches whose state is stored (forward run, backward or W pending);
  // zero at the end of a correct step.
  size_t storedMicroBatches() const { return tracker_.pending(); }
  // Drops mb's stored state without a backward (forward-only evaluation).
  void discard(int mb);

  // Offload and Reload (the schedule's memory ops): mb's stored state leaves
  // the stage and comes back. takeStored moves out every tensor the stage
  // stores for mb (in storedTensors' order; mb's forward complete, no backward
  // part run) and leaves mb counted as not stored: any call on mb but
  // putStored then throws. putStored(mb, tensors) hands them back, the same
  // count and shapes, and mb is stored as before. The executor copies the
  // tensors to host memory and frees them in between. Small bookkeeping (the
  // MoE router's chosen experts, its exchange plan) stays in the stage.
  std::vector<Tensor<T>> takeStored(int mb);
  void putStored(int mb, std::vector<Tensor<T>> tensors);

protected:
  // `kind` names the stage in messages ("stage 2 (residual_mlp), micro-batch 5: ...").
  // Throws std::invalid_argument for a non-positive width or a negative stage index.
  Stage(const char *kind, int hidden, StageInit init) : Stage(kind, hidden, hidden, init) {}
  Stage(const char *kind, int inputWidth, int outputWidth, StageInit init);

  // The parts: each called once per micro-batch, in the order of kForwardParts
  // and kBackwardParts, after the base class has checked the order. With
  // WeightGrad::Deferred the backward parts leave the weight gradients to
  // runBackwardWeight. releaseMicroBatch(mb) frees mb's stored state; it is
  // called after the last backward part of a B, after a W, and by discard.
  virtual void runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) = 0;
  virtual void runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                               WeightGrad when) = 0;
  virtual void runBackwardWeight(int mb) = 0;
  virtual void releaseMicroBatch(int mb) = 0;
  // The tensors the stage stores for mb, in a fixed order (the same for the
  // same mb until it is released), for takeStored and putStored. A stage that
  // does not override it cannot be offloaded: the default throws
  // std::logic_error naming the stage.
  virtual void storedTensors(int mb, std::vector<Tensor<T> *> &out);

private:
  // What a stage gives the executor must have the shape the next stage expects.
  void checkGiven(int mb, const char *what, const Tensor<T> &given, int width) const;

  int inputWidth_, outputWidth_;
  StageInit init_;
  MicroBatchTracker tracker_;
};

extern template class Stage<float>;
extern template class Stage<double>;

} // namespace pipert
