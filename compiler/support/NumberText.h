// The one way pipec writes a measured number (a time, a cost, a makespan, a
// percentage) for people: sim's report, its pictures, synth's headers and
// messages all call these, so one value reads the same everywhere. Exact values
// in diagnostics (diagArg: the shortest text that reads back the same) and the
// 17-digit values of generated tables are a different job and stay apart.
#pragma once

#include <string>

namespace pipec {

// From 1 to 1e9, at most 3 decimals; elsewhere six significant digits
// ("4e-07", "3e+300"); no trailing zeros; "inf", "-inf", "nan" as such (callers
// that must not print them check first, see sim's NonFiniteResult).
std::string formatNumber(double value);
// Exactly `decimals` decimals, for percentages and seconds ("12.5", "0.25").
std::string formatFixed(double value, int decimals);
// `digits` significant digits, as printf's %g ("0.0123", "1.235e+04"): the
// planner's table and calibrate's fits, short enough to rank by.
std::string formatSignificant(double value, int digits);
// A fraction as a percentage with `decimals` decimals: 0.125 -> "12.5%".
std::string formatPercent(double fraction, int decimals);
// Bytes as gigabytes (1e9) with one decimal: 81920000000 -> "81.9".
std::string formatGigabytes(double bytes);

} // namespace pipec
