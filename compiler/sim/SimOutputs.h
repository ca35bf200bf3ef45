// What `pipec sim` prints and writes: a numbers table (text or JSON), an ASCII
// timeline for the terminal, an SVG picture in the style of DualPipe's figure,
// and a Chrome/Perfetto trace.
#pragma once

#include "check/Checks.h"
#include "sim/Simulator.h"
#include "support/NumberText.h"

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
struct RankShading;
// What the SVG needs besides the schedule and its times.
struct SvgOptions {
  std::string unit; // "s": times are seconds (sim --model); "": cost units
  // sim --sensitivity: each rank's label shaded by its sensitivity (SvgSensitivity.h).
  const RankShading *shading = nullptr;
};
bool writeSvg(const ScheduleIR &ir, const SimResult &sim, llvm::raw_ostream &out,
              const SvgOptions &options = {});
bool writeChromeTrace(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                      llvm::raw_ostream &out,
                      double microsPerUnit = 1000); // 1e6 when costs are seconds (sim --model)
// Why the times of `sim` cannot be drawn ("the makespan is inf"), or "" when they can.
std::string undrawableReason(const SimResult &sim);

// The label of a step: "F0.3", or "FB(F0.7|B1.3)" for a pair.
std::string stepLabel(const ScheduleIR &ir, int64_t rank, uint32_t firstOp);

} // namespace pipec
