#include "sim/SvgDistribution.h"

#include "sim/SimOutputs.h"

#include <algorithm>
#include <cmath>

namespace pipec {

namespace {

constexpr double kLeft = 70, kTop = 40, kPlotHeight = 360, kColumnWidth = 130;
constexpr int kBins = 40, kMaxTicks = 12;

std::string escaped(const std::string &s) {
  std::string out;
  for (char c : s)
    out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  return out;
}

void text(llvm::raw_ostream &out, double x, double y, const std::string &s, const char *anchor,
          const char *extra = "") {
  out << "<text x=\"" << formatNumber(x) << "\" y=\"" << formatNumber(y) << "\" text-anchor=\""
      << anchor << "\" dominant-baseline=\"middle\" fill=\"#333333\"" << extra << ">" << escaped(s)
      << "</text>\n";
}

void line(llvm::raw_ostream &out, double x1, double y1, double x2, double y2, const char *color,
          double width, const char *cls) {
  out << "<line class=\"" << cls << "\" x1=\"" << formatNumber(x1) << "\" y1=\"" << formatNumber(y1)
      << "\" x2=\"" << formatNumber(x2) << "\" y2=\"" << formatNumber(y2) << "\" stroke=\"" << color
      << "\" stroke-width=\"" << formatNumber(width) << "\"/>\n";
}

} // namespace

bool writeDistributionSvg(const std::vector<DistributionColumn> &columns, const std::string &title,
                          llvm::raw_ostream &out) {
  double low = INFINITY, high = -INFINITY;
  for (const DistributionColumn &c : columns)
    for (double v : c.values) {
      if (!std::isfinite(v))
        return false;
      low = std::min(low, v);
      high = std::max(high, v);
    }
  if (columns.empty() || !(low <= high))
    return false;
  // A little room above and below; a flat distribution still gets a visible range.
  double span = high > low ? high - low : std::max(1e-9, std::fabs(high) * 0.01);
  low -= 0.05 * span;
  high += 0.05 * span;
  auto y = [&](double t) { return kTop + kPlotHeight * (high - t) / (high - low); };

  double width = kLeft + kColumnWidth * double(columns.size()) + 20;
  double height = kTop + kPlotHeight + 90;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << formatNumber(width)
      << "\" height=\"" << formatNumber(height)
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  out << "<title>step time distribution: " << escaped(title) << "</title>\n";
  text(out, kLeft, 16, "step time per sample: " + title, "start");

  // The time axis, on round numbers; counted, so no value can make it loop.
  line(out, kLeft, kTop, kLeft, kTop + kPlotHeight, "#333333", 1, "axis");
  double raw = (high - low) / 8;
  double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double tick = raw / magnitude < 2 ? magnitude : raw / magnitude < 5 ? 2 * magnitude : 5 * magnitude;
  double first = std::ceil(low / tick) * tick;
  for (int i = 0; i <= kMaxTicks && first + i * tick <= high; ++i) {
    double t = first + i * tick;
    line(out, kLeft - 5, y(t), kLeft, y(t), "#333333", 1, "tick");
    text(out, kLeft - 8, y(t), formatNumber(t), "end");
  }

  for (size_t c = 0; c < columns.size(); ++c) {
    const DistributionColumn &column = columns[c];
    double centre = kLeft + kColumnWidth * (double(c) + 0.5);
    std::vector<size_t> bins(kBins, 0);
    for (double v : column.values)
      ++bins[std::min<size_t>(kBins - 1, size_t(double(kBins) * (v - low) / (high - low)))];
    size_t most = std::max<size_t>(1, *std::max_element(bins.begin(), bins.end()));
    double binHeight = kPlotHeight / kBins;
    out << "<g class=\"distribution\">\n";
    for (int b = 0; b < kBins; ++b) {
      if (bins[b] == 0)
        continue;
      double half = 0.45 * kColumnWidth * double(bins[b]) / double(most);
      double top = kTop + kPlotHeight - binHeight * (b + 1);
      out << "<rect class=\"bin\" x=\"" << formatNumber(centre - half) << "\" y=\""
          << formatNumber(top) << "\" width=\"" << formatNumber(2 * half) << "\" height=\""
          << formatNumber(binHeight) << "\" fill=\"#4e79a7\" fill-opacity=\"0.7\"/>\n";
    }
    const Distribution &d = column.summary;
    struct Mark { const char *name; double value; const char *color; };
    for (const Mark &m : {Mark{"p50", d.p50, "#222222"}, Mark{"p90", d.p90, "#f28e2b"},
                          Mark{"p99", d.p99, "#d62728"}, Mark{"mean", d.mean, "#59a14f"}}) {
      line(out, centre - 0.47 * kColumnWidth, y(m.value), centre + 0.47 * kColumnWidth, y(m.value),
           m.color, 1.5, m.name);
    }
    text(out, centre, kTop + kPlotHeight + 16, column.label, "middle");
    text(out, centre, kTop + kPlotHeight + 30, "p99 " + formatNumber(d.p99), "middle");
    out << "</g>\n";
  }
  // The legend of the marks.
  double left = kLeft;
  for (auto [name, color] : {std::pair{"p50", "#222222"}, std::pair{"p90", "#f28e2b"},
                             std::pair{"p99", "#d62728"}, std::pair{"mean", "#59a14f"}}) {
    line(out, left, height - 24, left + 18, height - 24, color, 2, "legend-key");
    text(out, left + 22, height - 24, name, "start");
    left += 70;
  }
  out << "</svg>\n";
  return true;
}

} // namespace pipec
