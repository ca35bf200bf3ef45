// What `pipec sim` prints and writes: a numbers table (text or JSON), an ASCII
// timeline for the terminal, an SVG picture in the style of DualPipe's figure,
// and a Chrome/Perfetto trace.
#pragma once

#include "check/Checks.h"
#include "sim/Simulator.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

namespace pipec {

void printSimText(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                  llvm::raw_ostream &out);
// `extra`, when given, writes more attributes into the document's object
// (after "critical_path", before "makespan": keys stay sorted if theirs fall there).
void printSimJson(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                  llvm::raw_ostream &out,
                  const std::function<void(llvm::json::OStream &)> &extra = nullptr);
// Every writer streams what it produces to `out` as it goes. The pictures and the
// trace draw times, so they refuse (return false, write nothing) when a time is
// not finite; see undrawableReason.
bool printTimeline(const ScheduleIR &ir, const SimResult &sim, llvm::raw_ostream &out,
                   unsigned width = 120);
bool writeSvg(const ScheduleIR &ir, const SimResult &sim, llvm::raw_ostream &out);
bool writeChromeTrace(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                      llvm::raw_ostream &out,
                      double microsPerUnit = 1000); // 1e6 when costs are seconds (sim --model)
// Why the times of `sim` cannot be drawn ("the makespan is inf"), or "" when they can.
std::string undrawableReason(const SimResult &sim);

// A number as people read it: from 1 to 1e9 at most 3 decimals, elsewhere six
// significant digits ("4e-07"); no trailing zeros.
std::string formatNumber(double value);
// The label of a step: "F0.3", or "FB(F0.7|B1.3)" for a pair.
std::string stepLabel(const ScheduleIR &ir, int64_t rank, uint32_t firstOp);

} // namespace pipec
