#include "support/NumberText.h"

#include <fmt/format.h>

#include <cmath>

namespace pipec {

std::string formatNumber(double value) {
  if (!std::isfinite(value))
    return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
  // Three decimals from 1 to 1e9 (four significant digits or more); elsewhere six
  // significant digits, so a tiny time never prints as 0 and a huge one stays short.
  bool fixed = std::fabs(value) >= 1 && std::fabs(value) < 1e9;
  std::string text = fixed ? fmt::format("{:.3f}", value) : fmt::format("{:.6g}", value);
  if (fixed) {
    while (text.back() == '0')
      text.pop_back();
    if (text.back() == '.')
      text.pop_back();
  }
  return text == "-0" ? "0" : text;
}

std::string formatFixed(double value, int decimals) {
  if (!std::isfinite(value))
    return formatNumber(value);
  std::string text = fmt::format("{:.{}f}", value, decimals);
  return text.find_first_not_of("-0.") == std::string::npos && text[0] == '-' ? text.substr(1)
                                                                              : text;
}

std::string formatSignificant(double value, int digits) {
  return fmt::format("{:.{}g}", value, digits);
}

std::string formatPercent(double fraction, int decimals) {
  return formatFixed(100 * fraction, decimals) + "%";
}

std::string formatGigabytes(double bytes) { return formatFixed(bytes / 1e9, 1); }

} // namespace pipec
