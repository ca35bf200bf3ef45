// Which layers each pipeline stage holds: an even split (the default), a
// split with a set number of transformer layers on the first and last stage
// (the embedding and the head come on top of those), or a Megatron-style
// layout string (--pipeline-model-parallel-layout) naming every stage.
#pragma once

#include "plan/ModelConfig.h"
#include "plan/Training.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pipec::plan {

// Ranges [first, last) of model.layers (embedding first, head last) for each
// of `stages` stages, from training.pipelineLayout, else first/lastStageLayers,
// else evenly (spare layers to the stages after the first, which holds the
// embedding). The MTP modules go with the head (Megatron-Core's default). nullopt
// with `error` set when the request cannot be met.
std::optional<std::vector<std::pair<size_t, size_t>>>
stageLayerRanges(const ModelLayers &model, int64_t stages, const Training &training, std::string &error);

// The transformer layers on the first and on the last stage ({first, last},
// the others split evenly) that balance the work: the embedding's stage does
// little else, the head's (with the MTP modules) a vocabulary's worth more.
// `layerWork[i]` is model.layers[i]'s work (seconds, or FLOPs: any measure
// that adds); `stageRanks[s]` lists the ranks that run stage s (two for a
// stage with a copy, as in DualPipe). The choice makes the busiest rank least
// busy, then the heaviest stage least heavy, then the ranks' work least
// spread. {-1, -1} when the even split is as good, or one rank runs all.
std::pair<int64_t, int64_t> balancedStageEnds(const ModelLayers &model, const std::vector<double> &layerWork,
                                              const std::vector<std::vector<int64_t>> &stageRanks);

// Transformer layers per stage of a layout string such as "Et*3|t*4|t*3L":
// '|' separates stages, E is the embedding (first stage only), L the head
// and loss (last stage only), t one transformer layer, m one MTP module
// (last stage only, as here the modules sit with the loss), "X*n" repeats X.
// nullopt with `error` naming the offending character otherwise. `mtp`, when
// given, receives the number of m.
std::optional<std::vector<int64_t>> parsePipelineLayout(const std::string &layout, std::string &error,
                                                        int64_t *mtp = nullptr);

} // namespace pipec::plan
