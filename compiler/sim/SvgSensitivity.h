// `pipec sim --sensitivity --svg`: each rank's row label in the timeline shaded
// by how much the step grows when that rank alone is slower (darker red: more),
// with the number in the label's tooltip. SvgTimeline.cpp calls drawRankShade
// for each row; the shading itself lives here.
#pragma once

#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace pipec {

struct RankShading {
  std::vector<double> growth; // by rank: step growth when the rank alone is slower
  double factor = 1.1;        // how much slower
};

// A box at (x, y, w, h) behind rank `rank`'s label.
void drawRankShade(llvm::raw_ostream &out, const RankShading &shading, size_t rank, double x,
                   double y, double w, double h);

} // namespace pipec
