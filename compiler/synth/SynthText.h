// Small pieces both synth drivers (the heuristic's and the exact search's) use
// to write and re-check a schedule's text.
#pragma once

#include "frontend/Compilation.h"
#include "support/NumberText.h"

#include <memory>
#include <string>

namespace pipec::synth {

// Numbers in headers and messages: support/NumberText.h's, as everywhere.
inline std::string number(double value) { return formatNumber(value); }
inline std::string fixed(double value, int decimals) { return formatFixed(value, decimals); }

// Runs the front end and the checks on `text`; on failure, null and the
// rendered diagnostics in `error`.
std::unique_ptr<Compilation> checkText(const std::string &name, const std::string &text,
                                       const CheckOptions &options, std::string &error);

} // namespace pipec::synth
