// Reference<T>: the single-device, non-pipelined run that every pipelined run
// is checked against. For micro-batches mb = first .. first+count-1, in
// ascending order: generate input and target (Batch.h), forward through all
// stages, the batch's loss at the last stage (Loss.h: summed over micro-batches),
// backward through all stages in reverse with full B. Weight gradients are
// zeroed first and accumulate over the micro-batches.
//
// Usage:
//   ModelSpec model{/*seed=*/7, {dense, moe, dense}};
//   auto stages = makeAllStages<double>(model);
//   Reference<double> ref(stagePointers(stages));
//   ReferenceResult<double> r = ref.run({/*M=*/8, /*tokens=*/4, /*hidden=*/16, /*seed=*/1});
//   // ... run the pipeline, snapshot its gradients into `got`, then:
//   GradientComparison c = compareGradients(r.gradients, got, accumulationTolerance<double>());
#pragma once

#include "pipert/Batch.h"
#include "pipert/Gradients.h"
#include "pipert/Stage.h"

#include <vector>

namespace pipert {

template <typename T>
struct ReferenceResult {
  double loss = 0;                       // sum of microBatchLosses (with sizes: the
                                         // whole batch's mean times the micro-batch count)
  std::vector<double> microBatchLosses;  // in run order
  GradientSet<T> gradients;              // per stage, per parameter
};

template <typename T>
class Reference {
public:
  // One stage object per stage index, in order (stages[s]->stageIndex() == s),
  // each taking the columns the previous gives. Not owned; their gradients are overwritten.
  // Throws std::invalid_argument otherwise.
  explicit Reference(std::vector<Stage<T> *> stages);

  ReferenceResult<T> run(const BatchSpec &batch) { return run(batch, 0, batch.microBatches); }
  // Micro-batches [first, first + count) of `batch` only (gradient accumulation tests).
  ReferenceResult<T> run(const BatchSpec &batch, int first, int count);

  // Forward only: the loss of all M micro-batches; no stored state, gradients untouched.
  double loss(const BatchSpec &batch);

private:
  void checkBatch(const BatchSpec &batch) const;
  Tensor<T> forwardAll(int mb, const Tensor<T> &input);
  void runWholeBatch(const BatchSpec &batch, int first, int count, ReferenceResult<T> &result);

  std::vector<Stage<T> *> stages_;
};

extern template class Reference<float>;
extern template class Reference<double>;

} // namespace pipert
