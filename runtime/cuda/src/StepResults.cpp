// What a finished step leaves, read back to the host: the loss, the
// gradients (shaped as the reference's), the per-op trace, and the comparison
// with the fp64 CPU reference. StepRunner's members; StepRunner.cpp runs steps.
#include "StepRunner.h"

#include "pipert/Batch.h"
#include "pipert/Reference.h"
#include "pipert/cuda/CudaCheck.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace pipert::cuda {

double StepRunner::loss() {
  double total = 0;
  for (auto &rank : ranks_) {
    double value = 0;
    PIPERT_CUDA(cudaMemcpy(&value, rank->deviceLoss(), sizeof value, cudaMemcpyDeviceToHost));
    total += value;
    if (nccl_)
      break; // already summed over the world
  }
  return total;
}

// This process's gradients per stage (the first local copy of each); a stage
// this process does not hold stays empty.
GradientSet<double> StepRunner::gradients() {
  GradientSet<double> set(size_t(program_.numStages));
  for (auto &rank : ranks_)
    for (auto &[chunk, stage] : rank->stages()) {
      size_t s = size_t(stage->stageIndex());
      if (!set[s].empty())
        continue;
      for (const DeviceGradient &g : stage->gradients()) {
        std::vector<float> host(g.rows * g.cols);
        PIPERT_CUDA(cudaMemcpy(host.data(), g.data, host.size() * sizeof(float),
                               cudaMemcpyDeviceToHost));
        Tensor<double> value(g.rows, g.cols);
        for (size_t e = 0; e < host.size(); ++e)
          value[e] = host[e];
        set[s].push_back({g.name, std::move(value)});
      }
    }
  return set;
}

// Per stage this process holds (its first copy), the sum of squares of the
// replicated parameters' gradients and of its experts' shard: with every
// replica's lines, the global gradient norm the CPU runtime prints (each
// replicated parameter counted once, each replica's experts once).
void StepRunner::printGradientSquares() {
  std::set<int> seen;
  for (auto &rank : ranks_)
    for (auto &[chunk, stage] : rank->stages()) {
      if (!seen.insert(stage->stageIndex()).second)
        continue;
      double squares[2] = {0, 0}; // replicated, experts
      for (const DeviceGradient &g : stage->gradients()) {
        std::vector<float> host(g.rows * g.cols);
        PIPERT_CUDA(cudaMemcpy(host.data(), g.data, host.size() * sizeof(float),
                               cudaMemcpyDeviceToHost));
        for (float x : host)
          squares[g.expertSharded] += double(x) * double(x);
      }
      std::printf("gradient squares of stage %d: replicated %.17g, experts %.17g\n",
                  stage->stageIndex(), squares[0], squares[1]);
    }
}

// Each rank's peak stored micro-batches in the eager steps against the
// compiler's prediction (as the CPU program reports them); false on a
// mismatch. Nothing is stored without a model.
bool StepRunner::reportActivations() const {
  if (options_.model == ModelKind::Empty)
    return true;
  bool match = true;
  std::printf("peak activations per rank (measured / predicted):");
  for (size_t k = 0; k < ranks_.size(); ++k) {
    int r = ranks_[k]->rank();
    int64_t predicted = program_.predictedPeakActivations[r];
    if (nccl_)
      std::printf(" rank %d", r);
    std::printf(" %lld/%lld", (long long)eagerPeaks_[k], (long long)predicted);
    match &= eagerPeaks_[k] == predicted;
  }
  std::printf(match ? ": match\n" : ": MISMATCH\n");
  // Offloads: the pinned host copies made (reused across Offloads and steps)
  // against the most micro-batches a rank held in host memory at once.
  size_t pinned = 0;
  for (const auto &rank : ranks_)
    pinned += rank->pinnedBuffers();
  if (pinned) {
    std::printf("pinned host buffers per rank (bytes; most micro-batches offloaded at once):");
    for (const auto &rank : ranks_)
      std::printf(" %zu (%zu; %lld)", rank->pinnedBuffers(), rank->pinnedBytes(),
                  (long long)rank->mostOffloaded());
    std::printf("\n");
  }
  return match;
}

// The ops' CUDA-event times of the last eager step with --trace, in the trace's form.
std::vector<OpTiming> StepRunner::timings() {
  std::vector<OpTiming> out;
  for (auto &rank : ranks_)
    for (const OpInterval &t : rank->intervals()) {
      float start = 0, end = 0;
      PIPERT_CUDA(cudaEventElapsedTime(&start, stepStart_, t.start));
      PIPERT_CUDA(cudaEventElapsedTime(&end, stepStart_, t.end));
      out.push_back({rank->rank(), t.op, 1000.0 * start, 1000.0 * end});
    }
  return out;
}

int StepRunner::check(double loss, const GradientSet<double> &got) {
  ModelSpec model = modelSpec();
  auto stages = makeAllStages<double>(model);
  // Every replica's micro-batches: the gradients are summed over the replicas.
  BatchSpec batch = batchSpec();
  ReferenceResult<double> reference = Reference<double>(stagePointers(stages)).run(batch);
  // With NCCL a process holds some stages, and with expert parallelism only
  // its replica's share of their experts: compare those.
  GradientSet<double> want;
  for (size_t s = 0; s < reference.gradients.size(); ++s) {
    want.emplace_back();
    for (NamedTensor<double> &g : reference.gradients[s])
      if (std::any_of(got[s].begin(), got[s].end(),
                      [&](const NamedTensor<double> &h) { return h.name == g.name; }))
        want.back().push_back(std::move(g));
  }
  double tolerance = options_.tolerance > 0 ? options_.tolerance
                                            : options_.dtype == DType::F32 ? 1e-4 : 5e-2;
  double lossError = std::abs(loss - reference.loss) / std::max(std::abs(reference.loss), 1e-300);
  GradientComparison comparison = compareGradients(want, got, tolerance);
  std::printf("check: loss %.9g (reference %.9g, relative error %.3g)\n", loss, reference.loss,
              lossError);
  std::printf("check: max relative gradient error per stage:");
  for (const StageError &e : comparison.stages)
    if (!got[size_t(e.stage)].empty())
      std::printf(" %d: %.3g", e.stage, e.maxRelError);
  // The gradients' bits (FNV-1a over the fp64 values read back), to compare
  // runs that must agree exactly, such as a schedule with and without its
  // Offload/Reload ops.
  uint64_t digest = 1469598103934665603ull;
  for (const auto &stage : got)
    for (const NamedTensor<double> &g : stage) {
      const unsigned char *bytes = reinterpret_cast<const unsigned char *>(g.value.data());
      for (size_t b = 0; b < g.value.size() * sizeof(double); ++b)
        digest = (digest ^ bytes[b]) * 1099511628211ull;
    }
  std::printf("\ncheck: gradient digest %016llx", (unsigned long long)digest);
  bool ok = comparison.passed && lossError <= tolerance && peaksMatch_;
  std::printf("\ncheck: tolerance %g (%s): %s\n", tolerance, dtypeName(options_.dtype),
              ok ? "PASS" : "FAIL");
  if (!comparison.passed)
    std::printf("%s\n", comparison.report().c_str());
  return ok ? 0 : 1;
}

} // namespace pipert::cuda
