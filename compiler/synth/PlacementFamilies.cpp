// The placement families synth lays out: which rank and chunk hold each stage.
#include "synth/PlacementFamilies.h"

namespace pipec::synth {

StagePlacement makeStagePlacement(PlacementFamily family, int ranks, int chunks, std::string &error) {
  return makeStagePlacement(family, ranks, chunks, 0, error);
}

StagePlacement makeStagePlacement(PlacementFamily family, int ranks, int chunks, int microbatches,
                  std::string &error) {
  StagePlacement layout;
  layout.family = family;
  layout.ranks = ranks;
  std::string P = std::to_string(ranks);
  switch (family) {
  case PlacementFamily::One:
    layout.chunks = 1;
    layout.rankExpr = "s";
    layout.chunkExpr = "0";
    break;
  case PlacementFamily::Interleaved:
    if (chunks < 2) {
      error = "--placement interleaved needs -D v=N with N >= 2 chunks per rank";
      return layout;
    }
    layout.chunks = chunks;
    layout.rankExpr = "s % " + P;
    layout.chunkExpr = "s / " + P;
    break;
  case PlacementFamily::V:
    // ZB-V's V: chunk 0 of rank r holds stage r, chunk 1 holds stage 2P-1-r.
    layout.chunks = 2;
    layout.rankExpr = "s < " + P + " ? s : " + std::to_string(2 * ranks - 1) + " - s";
    layout.chunkExpr = "s < " + P + " ? 0 : 1";
    break;
  case PlacementFamily::Bidirectional: {
    // DualPipe's: P stages, two copies; the first half of the micro-batches
    // flows down (stage s on rank s, chunk 0), the second half up (stage s on
    // rank P-1-s, chunk 1).
    if (microbatches < 2 || ranks < 2) {
      error = "--placement bidirectional needs at least 2 ranks and 2 micro-batches (one per "
              "direction)";
      return layout;
    }
    layout.chunks = 2;
    layout.copies = 2;
    layout.stages = ranks;
    FlowPlacement down{"down", 0, microbatches / 2, {}, {}, "s", "0"};
    FlowPlacement up{"up", microbatches / 2, microbatches, {}, {}, std::to_string(ranks - 1) + " - s",
                  "1"};
    for (int s = 0; s < ranks; ++s) {
      down.stageRank.push_back(s);
      down.stageChunk.push_back(0);
      up.stageRank.push_back(ranks - 1 - s);
      up.stageChunk.push_back(1);
    }
    layout.stageRank = down.stageRank;
    layout.stageChunk = down.stageChunk;
    layout.rankExpr = down.rankExpr;
    layout.chunkExpr = down.chunkExpr;
    layout.rankStages.assign(ranks, {});
    for (int s = 0; s < ranks; ++s)
      layout.rankStages[s].push_back(s);
    layout.flows = {down, up};
    return layout;
  }
  case PlacementFamily::File:
    error = "a file's placement is read by the front end, not laid out here";
    return layout;
  }
  layout.stages = ranks * layout.chunks;
  layout.rankStages.assign(ranks, {});
  for (int s = 0; s < layout.stages; ++s) {
    int rank = s % ranks, chunk = s / ranks;
    if (family == PlacementFamily::V && s >= ranks)
      rank = 2 * ranks - 1 - s;
    layout.stageRank.push_back(rank);
    layout.stageChunk.push_back(chunk);
    layout.rankStages[rank].push_back(s);
  }
  return layout;
}

} // namespace pipec::synth
