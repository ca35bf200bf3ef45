// Megatron-Core's expert all-to-all overlap (training field ep_comm_overlap):
// which schedule file runs it and where it applies.
//
// Megatron runs the overlap by merging one micro-batch's forward with
// another's backward in 1F1B's steady state (combined_1f1b.py). pipec writes
// that as a schedule with overlap pairs, so the simulator times each pair with
// the same two-stream plan as DualPipe's (cost/OverlapPlan.h) and nothing is
// discounted by a scalar: the overlap forms live in examples/ep_overlap/, one
// per 1F1B-family library schedule, under the same file name. They sit in a
// folder of their own so that a library search without the field never picks
// them.
#pragma once

#include "plan/ModelConfig.h"
#include "plan/Training.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace pipec::plan {

// The schedule to run for `file` under ep_comm_overlap: ep_overlap/<name>
// beside it, or `file` itself when it already is one. nullopt with `error`
// naming the field when the schedule has no overlap form (Megatron overlaps
// only in 1F1B and interleaved 1F1B).
std::optional<std::string> epOverlapSchedule(const std::string &file, std::string &error);

// Whether ep_comm_overlap applies to `config` trained as `training` at expert
// parallelism `ep`. Megatron asserts expert_model_parallel_size > 1 (there is
// no all-to-all to hide otherwise) and no full recomputation
// (transformer_config.py), so a dense model, ep 1 or recompute full is
// refused, the error starting with `name` (the field, or the flag that set it).
bool epOverlapApplies(const ModelConfig &config, const Training &training, int64_t ep,
                      std::string &error, llvm::StringRef name = "ep_comm_overlap");

} // namespace pipec::plan
