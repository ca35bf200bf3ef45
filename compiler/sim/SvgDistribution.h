// `pipec sim --compare/--sweep --jitter ... --svg OUT.svg`: the step time's
// distribution per schedule (or sweep setting), side by side on one time axis:
// each column a histogram turned on its side (a violin of bars), with its mean,
// p50, p90 and p99 marked, so both the centre and the tail compare at a glance.
#pragma once

#include "sim/Variability.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace pipec {

struct DistributionColumn {
  std::string label;          // "dualpipev", "dualpipev M=32"
  std::vector<double> values; // the samples' step times
  Distribution summary;
};

// `title` names the variability ("lognormal CV 0.1, 1000 samples, seed 1").
// False, writing nothing, when a value is not finite.
bool writeDistributionSvg(const std::vector<DistributionColumn> &columns, const std::string &title,
                          llvm::raw_ostream &out);

} // namespace pipec
