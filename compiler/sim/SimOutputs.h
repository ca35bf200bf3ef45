// What `pipec sim` prints and writes: a numbers table (text or JSON), an ASCII
// timeline for the terminal, an SVG picture in the style of DualPipe's figure,
// and a Chrome/Perfetto trace.
#pragma once

#include "check/Checks.h"
#include "sim/Simulator.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec {

void printSimText(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                  llvm::raw_ostream &out);
void printSimJson(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                  llvm::raw_ostream &out);
void printTimeline(const ScheduleIR &ir, const SimResult &sim, llvm::raw_ostream &out,
                   unsigned width = 120);
void writeSvg(const ScheduleIR &ir, const SimResult &sim, llvm::raw_ostream &out);
void writeChromeTrace(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                      llvm::raw_ostream &out);

// A number as people read it: at most 3 decimals, no trailing zeros.
std::string formatNumber(double value);
// The label of a step: "F0.3", or "FB(F0.7|B1.3)" for a pair.
std::string stepLabel(const ScheduleIR &ir, int64_t rank, uint32_t firstOp);

} // namespace pipec
