// Per-op timing of the last step as a Chrome/Perfetto trace: one process per rank.
#pragma once

#include "exec/PipelineRun.h"

#include <string>
#include <vector>

namespace pipert {

bool writeTrace(const std::string &path, const Program &program, const std::vector<OpTiming> &timings);

} // namespace pipert
