// DenseStage<T>: the MLP stage of DeepSeek's DualPipe example with a residual,
// behind an optional attention block:
//   a = Attention(x)                     (AttentionBlock.h; identity if disabled)
//   y = a + Linear(4h, h)(GELU(Linear(h, 4h)(a)))
// Sub-operations: Attention = the attention block, Mlp = the MLP, Dispatch =
// identity, Combine = the residual add (dense has no all-to-all).
#pragma once

#include "pipert/AttentionBlock.h"
#include "pipert/MlpBlock.h"
#include "pipert/Stage.h"

#include <map>

namespace pipert {

struct DenseConfig {
  int hidden = 0;        // h
  int ffnHidden = 0;     // the MLP's inner width; DualPipe's example uses 4 * h
  bool attention = true; // false: DualPipe's example exactly (MLP only)
};

template <typename T>
class DenseStage final : public Stage<T> {
public:
  // Throws std::invalid_argument for a non-positive hidden or ffnHidden size.
  DenseStage(const DenseConfig &config, StageInit init);

  std::string describe() const override;
  std::vector<Parameter<T>> parameters() override;

protected:
  void runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) override;
  void runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                       WeightGrad when) override;
  void runBackwardWeight(int mb) override;
  void releaseMicroBatch(int mb) override { saved_.erase(mb); }
  void storedTensors(int mb, std::vector<Tensor<T> *> &out) override {
    Saved &s = saved_.at(mb);
    s.attention.list(out);
    s.mlp.list(out);
    for (Tensor<T> *t : {&s.a, &s.m, &s.da})
      out.push_back(t);
  }

private:
  struct Saved {
    AttentionSaved<T> attention;
    MlpSaved<T> mlp;
    Tensor<T> a;  // attention output (residual branch), until Combine
    Tensor<T> m;  // MLP output, until Combine
    Tensor<T> da; // gradient at a, built by Combine and Mlp backward
  };

  DenseConfig config_;
  AttentionBlock<T> attention_;
  MlpBlock<T> mlp_;
  std::map<int, Saved> saved_;
};

extern template class DenseStage<float>;
extern template class DenseStage<double>;

} // namespace pipert
