#include "sim/SvgSensitivity.h"

#include "sim/SimOutputs.h"

#include <algorithm>

namespace pipec {

void drawRankShade(llvm::raw_ostream &out, const RankShading &shading, size_t rank, double x,
                   double y, double w, double h) {
  if (rank >= shading.growth.size())
    return;
  double most = 0;
  for (double g : shading.growth)
    most = std::max(most, g);
  double growth = std::max(0.0, shading.growth[rank]);
  // Opacity from 0 (no growth) to 0.85 (the most sensitive rank).
  double opacity = most > 0 ? 0.85 * growth / most : 0;
  out << "<rect class=\"sensitivity\" x=\"" << formatNumber(x) << "\" y=\"" << formatNumber(y)
      << "\" width=\"" << formatNumber(w) << "\" height=\"" << formatNumber(h)
      << "\" fill=\"#d62728\" fill-opacity=\"" << formatNumber(opacity) << "\"><title>rank "
      << rank << ": step +" << formatNumber(growth) << " when " << formatNumber(shading.factor)
      << "x slower</title></rect>\n";
}

} // namespace pipec
