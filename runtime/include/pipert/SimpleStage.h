// SimpleStage<T>: the easy way to write a stage. Implement three calls per
// micro-batch (forward, input gradient, weight gradient), a release, describe()
// and parameters(); the rest of Stage.h's protocol is mapped onto them:
//   forward parts:  Attention runs computeForward; Dispatch, Mlp, Combine are empty;
//   backward parts: Combine runs computeInputGrad (and, for a full B,
//                   computeWeightGrad right after); the other parts are empty;
//   W:              computeWeightGrad, then releaseMicroBatch.
// So B is exactly I then W, bit for bit, by construction. An overlap pair of
// two simple stages runs each half whole; a stage that wants its all-to-alls
// hidden implements Stage.h's parts itself (as the built-in MoeStage does).
//
// The contract (what the runtime relies on; Stage.h has the whole API):
//  - computeForward(mb, x, y): y = f(x), resized to tokens x outputWidth();
//    stores what the backward of mb needs, keyed by mb (several micro-batches
//    are in flight at once, in any order the schedule proves);
//  - computeInputGrad(mb, dy, dx): dx resized to tokens x inputWidth(); keeps
//    what computeWeightGrad needs; touches no weight gradient;
//  - computeWeightGrad(mb): ADDS mb's weight gradients to the gradient tensors
//    of parameters() (never overwrites: the runtime zeroes them once per step
//    and sums micro-batches and copies); computing mb's gradient in full and
//    then adding it keeps the result independent of when W runs;
//  - releaseMicroBatch(mb): frees everything stored for mb. The runtime calls
//    it after computeWeightGrad, or to discard a forward-only micro-batch; the
//    activation count it checks against the compiler's prediction is kept by
//    Stage.h from these calls, so nothing else needs reporting.
// A stage that should run under Offload/Reload also overrides
// storedTensors(mb, out) (Stage.h): the tensors it keeps for mb, in a fixed order.
// Parameters start from the StageInit alone (pipert/Random.h: streamSeed(seed,
// stageIndex, name) and fillUniform), so replicated copies start identical.
//
//   template <typename T> class Scale : public SimpleStage<T> {
//   public:
//     Scale(int width, StageInit init) : SimpleStage<T>("scale", width, init), w_(1, width), dw_(1, width) {
//       fillUniform(w_, streamSeed(init.seed, init.stageIndex, "w"), 1.0);
//     }
//     ...  // computeForward stores x in saved_[mb]; y = x * w; dx = dy * w; dw += sum(dy * x)
//   };
#pragma once

#include "pipert/Stage.h"

namespace pipert {

template <typename T>
class SimpleStage : public Stage<T> {
protected:
  SimpleStage(const char *kind, int inputWidth, int outputWidth, StageInit init)
      : Stage<T>(kind, inputWidth, outputWidth, init) {}
  // Takes and gives `width` columns.
  SimpleStage(const char *kind, int width, StageInit init) : Stage<T>(kind, width, width, init) {}

  virtual void computeForward(int mb, const Tensor<T> &input, Tensor<T> &output) = 0;
  virtual void computeInputGrad(int mb, const Tensor<T> &gradOutput, Tensor<T> &gradInput) = 0;
  virtual void computeWeightGrad(int mb) = 0;
  // (releaseMicroBatch(int mb) is Stage.h's, also pure.)

private:
  void runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) final {
    if (part == kForwardParts.front())
      computeForward(mb, input, output);
  }
  void runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                       WeightGrad when) final {
    if (part != kBackwardParts.front())
      return;
    computeInputGrad(mb, gradOutput, gradInput);
    if (when == WeightGrad::Now)
      computeWeightGrad(mb);
  }
  void runBackwardWeight(int mb) final { computeWeightGrad(mb); }
};

} // namespace pipert
