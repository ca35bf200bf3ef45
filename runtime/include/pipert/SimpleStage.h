// SimpleStage<T>: the easy way to write a stage. Implement three calls per
// micro-batch (forward, input gradient, weight gradient) and a release; the
// sub-operation protocol of Stage.h is mapped onto them:
//   forward parts:  Attention runs computeForward; Dispatch, Mlp, Combine are empty;
//   backward parts: Combine runs computeInputGrad (and, for a full B,
//                   computeWeightGrad right after); the other parts are empty.
// So an overlap pair of two simple stages runs each half whole, one after the
// other, and a stage that wants its all-to-alls hidden implements Stage.h's
// parts itself (as MoeStage does).
//
// The contract (what the runtime relies on):
//  - computeForward stores what the backward of micro-batch mb needs, keyed by
//    mb; several micro-batches are in flight at once, in any order the schedule
//    proves;
//  - computeInputGrad writes gradInput (resize it: rows = tokens, cols =
//    inputWidth) and keeps what computeWeightGrad needs;
//  - computeWeightGrad ADDS this micro-batch's weight gradients to the
//    gradient tensors of parameters() (never overwrites: the runtime zeroes
//    them once per step and sums micro-batches and copies);
//  - releaseMicroBatch(mb) frees everything stored for mb (the runtime calls
//    it after the weight gradient, or to discard a forward-only micro-batch).
#pragma once

#include "pipert/Stage.h"

namespace pipert {

template <typename T>
class SimpleStage : public Stage<T> {
protected:
  SimpleStage(const char *kind, int inputWidth, int outputWidth, StageInit init)
      : Stage<T>(kind, inputWidth, outputWidth, init) {}

  virtual void computeForward(int mb, const Tensor<T> &input, Tensor<T> &output) = 0;
  virtual void computeInputGrad(int mb, const Tensor<T> &gradOutput, Tensor<T> &gradInput) = 0;
  virtual void computeWeightGrad(int mb) = 0;

private:
  void runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) final {
    if (part == SubOp::Attention)
      computeForward(mb, input, output);
  }
  void runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                       WeightGrad when) final {
    if (part != SubOp::Combine)
      return;
    computeInputGrad(mb, gradOutput, gradInput);
    if (when == WeightGrad::Now)
      computeWeightGrad(mb);
  }
  void runBackwardWeight(int mb) final { computeWeightGrad(mb); }
};

} // namespace pipert
