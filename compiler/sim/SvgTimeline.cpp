// `pipec sim --svg`: a picture in the style of DualPipe's figure. One row per
// rank, one rectangle per op coloured by kind (lighter for chunk 1 and up) and
// labelled with its micro-batch; an overlap pair is its two ops stacked inside
// one frame; idle time shows as the grey row background. A legend and a time
// axis sit below.
#include "sim/SimOutputs.h"
#include "sim/SvgSensitivity.h"

#include <algorithm>
#include <cmath>

namespace pipec {

namespace {

const char *colorOf(OpKind kind) {
  switch (kind) {
  case OpKind::F: return "#4e79a7";
  case OpKind::B: return "#59a14f";
  case OpKind::I: return "#8cd17d";
  case OpKind::W: return "#b07aa1";
  }
  return "#999999";
}

constexpr double kLeft = 70, kTop = 20, kRowHeight = 30, kRowGap = 6;
constexpr int kMaxTicks = 20;

class SvgWriter {
public:
  SvgWriter(const ScheduleIR &ir, const SimResult &sim, llvm::raw_ostream &out,
            const RankShading *shading)
      : ir_(ir), sim_(sim), out_(out), shading_(shading) {
    // Aim for readable cells: the shortest step at least ~18 px wide.
    double shortest = sim.makespan;
    for (uint32_t k = 0; k < sim.stepEnd.size(); ++k)
      if (sim.stepEnd[k] > sim.stepStart(k))
        shortest = std::min(shortest, sim.stepEnd[k] - sim.stepStart(k));
    scale_ = shortest > 0 ? std::clamp(18.0 / shortest, 0.5, 60.0) : 20.0;
  }

  void write() {
    double width = kLeft + sim_.makespan * scale_ + 20;
    double rowsBottom = kTop + sim_.ranks.size() * (kRowHeight + kRowGap);
    double height = rowsBottom + 80;
    out_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << formatNumber(width)
         << "\" height=\"" << formatNumber(height) << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    out_ << "<title>" << ir_.name << ": makespan " << formatNumber(sim_.makespan) << "</title>\n";
    for (size_t r = 0; r < sim_.ranks.size(); ++r)
      row(r);
    axis(rowsBottom);
    legend(rowsBottom + 40);
    out_ << "</svg>\n";
  }

private:
  double x(double t) const { return kLeft + t * scale_; }
  double y(size_t rank) const { return kTop + rank * (kRowHeight + kRowGap); }

  void rect(double x0, double y0, double w, double h, const char *fill, double opacity,
            const char *cls) {
    out_ << "<rect class=\"" << cls << "\" x=\"" << formatNumber(x0) << "\" y=\""
         << formatNumber(y0) << "\" width=\"" << formatNumber(w) << "\" height=\""
         << formatNumber(h) << "\" fill=\"" << fill << "\"";
    if (opacity < 1)
      out_ << " fill-opacity=\"" << formatNumber(opacity) << "\"";
    out_ << " stroke=\"#ffffff\" stroke-width=\"0.5\"/>\n";
  }

  void text(double cx, double cy, const std::string &s, const char *anchor = "middle",
            const char *color = "#ffffff") {
    out_ << "<text x=\"" << formatNumber(cx) << "\" y=\"" << formatNumber(cy)
         << "\" text-anchor=\"" << anchor << "\" dominant-baseline=\"middle\" fill=\"" << color
         << "\">" << escaped(s) << "</text>\n";
  }

  static std::string escaped(const std::string &s) {
    std::string out;
    for (char c : s)
      out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
    return out;
  }

  void op(const Op &o, double start, double end, double top, double h) {
    rect(x(start), top, (end - start) * scale_, h, colorOf(o.kind), o.chunk > 0 ? 0.6 : 1.0, "op");
    if ((end - start) * scale_ >= 12)
      text((x(start) + x(end)) / 2, top + h / 2, std::to_string(ir_.indexInFlow(o)));
  }

  void row(size_t r) {
    double top = y(r);
    rect(x(0), top, sim_.makespan * scale_, kRowHeight, "#eeeeee", 1, "idle");
    if (shading_) // sim --sensitivity: the label's box shaded by the rank's sensitivity
      drawRankShade(out_, *shading_, r, 2, top, kLeft - 6, kRowHeight);
    text(kLeft - 8, top + kRowHeight / 2, "rank " + std::to_string(r), "end", "#333333");
    const std::vector<Op> &ops = ir_.ranks[r].ops;
    for (uint32_t k = sim_.firstStep(r); k < sim_.endStep(r); ++k) {
      StepTiming step = sim_.step(k);
      const Op &first = ops[step.op];
      if (first.pair != PairRole::First) {
        op(first, step.start, step.end, top, kRowHeight);
        continue;
      }
      op(first, step.start, step.end, top, kRowHeight / 2);
      op(ops[step.op + 1], step.start, step.end, top + kRowHeight / 2, kRowHeight / 2);
      out_ << "<rect class=\"pair\" x=\"" << formatNumber(x(step.start)) << "\" y=\""
           << formatNumber(top) << "\" width=\"" << formatNumber((step.end - step.start) * scale_)
           << "\" height=\"" << formatNumber(kRowHeight)
           << "\" fill=\"none\" stroke=\"#222222\" stroke-width=\"1.5\"/>\n";
    }
  }

  void axis(double top) {
    out_ << "<line x1=\"" << formatNumber(x(0)) << "\" y1=\"" << formatNumber(top) << "\" x2=\""
         << formatNumber(x(sim_.makespan)) << "\" y2=\"" << formatNumber(top)
         << "\" stroke=\"#333333\"/>\n";
    // About ten ticks, on round numbers; counted, so no time value can make it loop.
    double raw = sim_.makespan / 10;
    double magnitude = std::pow(10, std::floor(std::log10(raw > 0 ? raw : 1)));
    double tick = raw / magnitude < 2 ? magnitude : raw / magnitude < 5 ? 2 * magnitude : 5 * magnitude;
    for (int i = 0; i <= kMaxTicks && i * tick <= sim_.makespan * (1 + 1e-12) + 1e-9; ++i) {
      double t = i * tick;
      out_ << "<line x1=\"" << formatNumber(x(t)) << "\" y1=\"" << formatNumber(top)
           << "\" x2=\"" << formatNumber(x(t)) << "\" y2=\"" << formatNumber(top + 5)
           << "\" stroke=\"#333333\"/>\n";
      text(x(t), top + 14, formatNumber(t), "middle", "#333333");
    }
    text(x(0) - 8, top + 14, "time", "end", "#333333");
  }

  void legend(double top) {
    struct Item { const char *label; const char *color; double opacity; };
    const Item items[] = {{"F forward", colorOf(OpKind::F), 1},
                          {"B backward", colorOf(OpKind::B), 1},
                          {"I input gradient", colorOf(OpKind::I), 1},
                          {"W weight gradient", colorOf(OpKind::W), 1},
                          {"chunk 1 (lighter)", colorOf(OpKind::F), 0.6}};
    double left = kLeft;
    out_ << "<g class=\"legend\">\n";
    for (const Item &item : items) {
      rect(left, top, 14, 14, item.color, item.opacity, "legend-key");
      text(left + 18, top + 7, item.label, "start", "#333333");
      left += 130;
    }
    out_ << "<rect class=\"legend-key\" x=\"" << formatNumber(left) << "\" y=\""
         << formatNumber(top) << "\" width=\"14\" height=\"14\" fill=\"none\" stroke=\"#222222\" "
         << "stroke-width=\"1.5\"/>\n";
    text(left + 18, top + 7, "overlap pair F&B", "start", "#333333");
    text(kLeft, top + 28, "cells: micro-batch within its flow; grey: idle", "start", "#333333");
    out_ << "</g>\n";
  }

  const ScheduleIR &ir_;
  const SimResult &sim_;
  llvm::raw_ostream &out_;
  const RankShading *shading_;
  double scale_ = 20;
};

} // namespace

bool writeSvg(const ScheduleIR &ir, const SimResult &sim, llvm::raw_ostream &out,
              const RankShading *shading) {
  if (!undrawableReason(sim).empty())
    return false;
  SvgWriter(ir, sim, out, shading).write();
  return true;
}

} // namespace pipec
