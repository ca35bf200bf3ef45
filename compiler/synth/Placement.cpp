// The placement families synth lays out: which rank and chunk hold each stage.
#include "synth/SynthProblem.h"

namespace pipec::synth {

Layout makeLayout(PlacementFamily family, int ranks, int chunks, std::string &error) {
  Layout layout;
  layout.family = family;
  layout.ranks = ranks;
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
    layout.rankExpr = "s % " + std::to_string(ranks);
    layout.chunkExpr = "s / " + std::to_string(ranks);
    break;
  case PlacementFamily::V:
    // ZB-V's V: chunk 0 of rank r holds stage r, chunk 1 holds stage 2P-1-r.
    layout.chunks = 2;
    layout.rankExpr = "s < " + std::to_string(ranks) + " ? s : " +
                      std::to_string(2 * ranks - 1) + " - s";
    layout.chunkExpr = "s < " + std::to_string(ranks) + " ? 0 : 1";
    break;
  case PlacementFamily::Bidirectional:
    error = "--placement bidirectional (two copies, DualPipe's placement) is not "
            "supported yet; use one, interleaved or v";
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
