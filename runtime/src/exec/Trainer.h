// Trainer<T>: what happens between two steps of a training run, for a set of
// stage objects (every copy of every stage, in every expert-parallel replica;
// or the reference's single copy of each):
//  1. syncReplicas: parameters every replica holds (all but sharded experts)
//     sum their gradients over the replicas, in replica order, and every copy
//     receives the sum; copies of a replicated stage within a replica were
//     already summed by PipelineRun;
//  2. globalNorm: the norm over each distinct parameter once (stage order;
//     a sharded expert from every replica), computed once so every rank clips
//     by the same factor;
//  3. step: each copy steps its own parameters with its own optimizer state.
//     Copies with equal values and gradients stay bit-identical.
#pragma once

#include "pipert/Gradients.h"
#include "pipert/Optimizer.h"
#include "pipert/Stage.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace pipert {

template <typename T>
class Trainer {
public:
  // replicas[e]: the stage objects of replica e (any order).
  Trainer(OptimizerConfig config, std::vector<std::vector<Stage<T> *>> replicas)
      : config_(config), replicas_(std::move(replicas)) {
    for (auto &replica : replicas_)
      for (Stage<T> *stage : replica)
        states_[stage];
  }

  void syncReplicas() {
    if (replicas_.size() < 2)
      return;
    for (int s : stageIndices()) {
      std::vector<std::vector<Parameter<T>>> firsts;
      for (auto &replica : replicas_)
        firsts.push_back(firstCopy(replica, s)->parameters());
      for (size_t p = 0; p < firsts[0].size(); ++p) {
        if (firsts[0][p].expertSharded)
          continue;
        Tensor<T> sum = *firsts[0][p].grad;
        for (size_t e = 1; e < firsts.size(); ++e)
          for (size_t i = 0; i < sum.size(); ++i)
            sum[i] += (*firsts[e][p].grad)[i];
        for (auto &replica : replicas_)
          for (Stage<T> *copy : replica)
            if (copy->stageIndex() == s)
              *copy->parameters()[p].grad = sum;
      }
    }
  }

  double globalNorm() {
    double squares = 0;
    for (int s : stageIndices())
      for (size_t e = 0; e < replicas_.size(); ++e) {
        std::vector<Parameter<T>> params = firstCopy(replicas_[e], s)->parameters();
        std::vector<Parameter<T>> counted;
        for (Parameter<T> &p : params)
          if (e == 0 || p.expertSharded)
            counted.push_back(p);
        squares += gradientSquares(counted);
      }
    return std::sqrt(squares);
  }

  // Clips by the global norm and steps every copy; returns the norm (pre-clip).
  double step(int64_t step) {
    double norm = globalNorm();
    double scale = clipFactor(config_, norm);
    for (auto &replica : replicas_)
      for (Stage<T> *stage : replica) {
        std::vector<Parameter<T>> params = stage->parameters();
        optimizerStep(config_, step, scale, params, states_.at(stage));
      }
    return norm;
  }

  StageOptimizerState<T> &state(Stage<T> *stage) { return states_.at(stage); }
  const std::vector<std::vector<Stage<T> *>> &replicas() const { return replicas_; }

  // Each parameter of `layout` (per stage, by name) read from the first copy
  // that holds it: values, or with `gradients` the gradients.
  GradientSet<T> snapshot(const GradientSet<T> &layout, bool gradients) {
    GradientSet<T> out(layout.size());
    for (size_t s = 0; s < layout.size(); ++s)
      for (const NamedTensor<T> &want : layout[s]) {
        const Tensor<T> *found = nullptr;
        for (auto &replica : replicas_)
          for (Stage<T> *copy : replica)
            if (!found && copy->stageIndex() == int(s))
              for (const Parameter<T> &p : copy->parameters())
                if (p.name == want.name)
                  found = gradients ? p.grad : p.value;
        out[s].push_back({want.name, found ? *found : Tensor<T>()});
      }
    return out;
  }

  // Copies values and optimizer state, parameter by name, from `source` (a
  // resumed run's reference starts where the pipeline's checkpoint left off).
  void copyFrom(Trainer &source) {
    for (auto &replica : replicas_)
      for (Stage<T> *stage : replica) {
        std::vector<Parameter<T>> mine = stage->parameters();
        StageOptimizerState<T> &state = states_.at(stage);
        state.parameters.assign(mine.size(), {});
        for (size_t p = 0; p < mine.size(); ++p)
          for (auto &theirReplica : source.replicas_)
            for (Stage<T> *theirs : theirReplica)
              if (theirs->stageIndex() == stage->stageIndex()) {
                std::vector<Parameter<T>> params = theirs->parameters();
                for (size_t q = 0; q < params.size(); ++q)
                  if (params[q].name == mine[p].name) {
                    *mine[p].value = *params[q].value;
                    const auto &theirState = source.states_.at(theirs).parameters;
                    if (q < theirState.size())
                      state.parameters[p] = theirState[q];
                  }
              }
        if (std::all_of(state.parameters.begin(), state.parameters.end(),
                        [](const ParameterState<T> &x) { return x.first.empty() && x.second.empty(); }))
          state.parameters.clear(); // nothing restored: sized on the first step
      }
  }

private:
  std::vector<int> stageIndices() const {
    std::vector<int> out;
    for (Stage<T> *stage : replicas_[0])
      if (std::find(out.begin(), out.end(), stage->stageIndex()) == out.end())
        out.push_back(stage->stageIndex());
    std::sort(out.begin(), out.end());
    return out;
  }
  static Stage<T> *firstCopy(const std::vector<Stage<T> *> &replica, int s) {
    for (Stage<T> *stage : replica)
      if (stage->stageIndex() == s)
        return stage;
    throw std::logic_error("trainer: a replica lacks stage " + std::to_string(s));
  }

  OptimizerConfig config_;
  std::vector<std::vector<Stage<T> *>> replicas_;
  std::map<Stage<T> *, StageOptimizerState<T>> states_;
};

} // namespace pipert
