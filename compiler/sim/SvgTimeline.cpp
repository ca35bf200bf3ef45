// `pipec sim --svg`: a picture in the style of DeepSeek's DualPipe figure. A
// title (the schedule, its sizes, makespan and bubble), then one row per rank,
// one cell per op coloured by kind and chunk and labelled with its micro-batch;
// an overlap pair is its two ops stacked inside one frame; a second flow
// (bidirectional schedules) is striped and its labels marked; idle time shows
// as the grey row background. A time axis and a legend sit below. A rank with
// memory ops (Offload ... Load) gets a second row under its own, its copy
// stream, where those ops are drawn at the times they run beside compute.
//
// The picture scales to the makespan, not to a fixed number of pixels per unit:
// the plot is between kMinPlot and kMaxPlot pixels wide whatever the times
// (seconds with --model, cost units, 1e300 or 1e-300), and every x is computed
// as a fraction of the makespan, so no time can make a coordinate overflow. The
// image is as wide as its widest part (plot, title or legend), so nothing is
// cut off; the legend wraps.
//
// Layout in one place (Layout below); each part draws itself from it, so a
// per-rank annotation (a shade behind a row, say) is one more call in row().
#include "sim/SimOutputs.h"
#include "sim/SvgSensitivity.h"

#include <algorithm>
#include <cmath>

namespace pipec {

namespace {

// Chunk 0 and later chunks get their own hues (not a lighter shade of the same
// one, which made chunk-1 B and chunk-0 I nearly the same green).
const char *colorOf(OpKind kind, int32_t chunk) {
  bool later = chunk > 0;
  switch (kind) {
  case OpKind::F: return later ? "#9ecae9" : "#4e79a7"; // blue, light blue
  case OpKind::B: return later ? "#f28e2b" : "#59a14f"; // green, orange
  case OpKind::I: return later ? "#ffd08a" : "#8cd17d"; // light green, sand
  case OpKind::W: return later ? "#e7a4c6" : "#7b4f8e"; // purple, pink
  case OpKind::R: return later ? "#bab0ac" : "#79706e"; // grey, light grey
  case OpKind::Offload: return "#17becf";                // cyan
  case OpKind::Reload: return "#0e6f7a";                 // dark cyan
  case OpKind::Evict: return "#bcbd22";                  // olive
  case OpKind::Hold: return "#d4d58a";                   // light olive
  case OpKind::Return: return "#8c8d16";                 // dark olive
  case OpKind::Load: return "#5c5d0e";                   // darker olive
  }
  return "#999999";
}

// Labels in white on the dark chunk-0 colours, in black on the light ones.
const char *labelColorOf(OpKind kind, int32_t chunk) {
  return chunk == 0 && kind != OpKind::I ? "#ffffff" : "#111111";
}

const char *kindName(OpKind kind) {
  switch (kind) {
  case OpKind::F: return "F forward";
  case OpKind::B: return "B backward";
  case OpKind::I: return "I input gradient";
  case OpKind::W: return "W weight gradient";
  case OpKind::R: return "R recomputation";
  case OpKind::Offload: return "Offload to host (copy stream)";
  case OpKind::Reload: return "Reload from host (copy stream)";
  case OpKind::Evict: return "Evict to partner (copy stream)";
  case OpKind::Hold: return "Hold for owner (copy stream)";
  case OpKind::Return: return "Return to owner (copy stream)";
  case OpKind::Load: return "Load from partner (copy stream)";
  }
  return "?";
}

constexpr double kLeft = 70, kRight = 20, kTitleHeight = 44, kRowHeight = 36, kRowGap = 6;
constexpr double kMinPlot = 640, kMaxPlot = 2400, kReadableCell = 18;
constexpr double kCharWidth = 6.6; // an 11-px sans-serif character, a little generously
constexpr int kMaxTicks = 20;

// Seconds read in the largest unit that keeps them above 1 (3 ms, not 0.003 s).
struct TimeUnit {
  double scale = 1;
  std::string name; // "" for cost units
};

TimeUnit unitFor(double makespan, const std::string &unit) {
  if (unit != "s")
    return {1, unit};
  static const std::pair<double, const char *> units[] = {
      {1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  for (const auto &[scale, name] : units)
    if (makespan >= scale)
      return {scale, name};
  return {1e-9, "ns"};
}

class SvgWriter {
public:
  SvgWriter(const ScheduleIR &ir, const SimResult &sim, const SvgOptions &options,
            llvm::raw_ostream &out)
      : ir_(ir), sim_(sim), options_(options), out_(out),
        unit_(unitFor(sim.makespan, options.unit)) {
    // The shortest step at least ~18 px wide when that fits kMaxPlot, the plot
    // at least kMinPlot wide; as fractions of the makespan, never as px per unit.
    double shortest = sim.makespan;
    for (uint32_t k = 0; k < sim.stepEnd.size(); ++k)
      if (sim.stepEnd[k] > sim.stepStart(k))
        shortest = std::min(shortest, sim.stepEnd[k] - sim.stepStart(k));
    double fraction = sim.makespan > 0 ? shortest / sim.makespan : 1;
    plot_ = std::clamp(fraction > 0 ? kReadableCell / fraction : kMinPlot, kMinPlot, kMaxPlot);
    secondFlow_ = ir.flows.size() > 1;
    // One row per rank; one more under a rank that has copy-stream ops.
    const SimulationPlan &plan = *sim.plan;
    for (size_t r = 0; r < sim.ranks.size(); ++r) {
      rows_.push_back({r, false});
      bool copies = false;
      for (uint32_t k = sim.firstStep(r); k < sim.endStep(r) && !copies; ++k)
        copies = plan.onCopyStream(k);
      if (copies)
        rows_.push_back({r, true});
    }
  }

  void write() {
    std::string heading = title();
    rowsTop_ = kTitleHeight;
    double rowsBottom = rowsTop_ + rows_.size() * (kRowHeight + kRowGap);
    width_ = std::max({kLeft + plot_ + kRight, textWidth(heading) + 2 * 10});
    std::vector<LegendItem> items = legendItems();
    double legendTop = rowsBottom + 40;
    double legendBottom = layoutLegend(items, legendTop);
    double height = legendBottom + 24;
    out_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << formatNumber(width_)
         << "\" height=\"" << formatNumber(height)
         << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    out_ << "<title>" << escaped(heading + ": " + subtitle()) << "</title>\n";
    definitions();
    text(10, 18, heading, "start", "#111111", "title", 13);
    text(10, 34, subtitle(), "start", "#555555", "subtitle");
    for (size_t i = 0; i < rows_.size(); ++i)
      row(i);
    axis(rowsBottom);
    legend(items);
    out_ << "</svg>\n";
  }

private:
  struct LegendItem {
    std::string label;
    const char *fill = nullptr; // null: a pair frame
    bool striped = false;
    double x = 0, y = 0;
  };

  // x of time t: a fraction of the makespan, so 1e300 and 1e-300 draw alike.
  double x(double t) const { return kLeft + (sim_.makespan > 0 ? t / sim_.makespan : 0) * plot_; }
  double y(size_t row) const { return rowsTop_ + row * (kRowHeight + kRowGap); }
  static double textWidth(const std::string &s) { return kCharWidth * double(s.size()); }

  std::string time(double t) const {
    std::string value = formatNumber(t / unit_.scale);
    return unit_.name.empty() ? value : value + " " + unit_.name;
  }

  // The schedule and its sizes: name, P, M and the bound parameters.
  std::string title() const {
    std::string heading = ir_.name + ": " + std::to_string(ir_.numRanks) + " ranks, " +
                          std::to_string(ir_.numMicrobatches) + " micro-batches";
    if (ir_.numStages != ir_.numRanks)
      heading += ", " + std::to_string(ir_.numStages) + " stages";
    std::string params;
    for (const auto &[name, value] : ir_.params)
      params += (params.empty() ? "" : ", ") + name + "=" + std::to_string(value);
    return params.empty() ? heading : heading + " (" + params + ")";
  }

  std::string subtitle() const {
    double ranks = double(sim_.ranks.size());
    double bubble = sim_.makespan > 0 && ranks > 0 ? sim_.totalBubble() / (sim_.makespan * ranks) : 0;
    return "makespan " + time(sim_.makespan) + ", bubble " + formatNumber(100 * bubble) +
           "% of rank time" + (unit_.name.empty() ? " (cost units)" : "");
  }

  void definitions() {
    // The second flow's cells are striped: told apart without relying on shade.
    if (!secondFlow_)
      return;
    out_ << "<defs><pattern id=\"second-flow\" width=\"6\" height=\"6\" "
            "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
            "<rect width=\"2\" height=\"6\" fill=\"#ffffff\" fill-opacity=\"0.45\"/>"
            "</pattern></defs>\n";
  }

  void rect(double x0, double y0, double w, double h, const char *fill, const char *cls) {
    out_ << "<rect class=\"" << cls << "\" x=\"" << formatNumber(x0) << "\" y=\""
         << formatNumber(y0) << "\" width=\"" << formatNumber(w) << "\" height=\""
         << formatNumber(h) << "\" fill=\"" << fill << "\" stroke=\"#ffffff\" stroke-width=\"0.5\"/>\n";
  }

  void frame(double x0, double y0, double w, double h, const char *cls) {
    out_ << "<rect class=\"" << cls << "\" x=\"" << formatNumber(x0) << "\" y=\""
         << formatNumber(y0) << "\" width=\"" << formatNumber(w) << "\" height=\""
         << formatNumber(h) << "\" fill=\"none\" stroke=\"#222222\" stroke-width=\"1.5\"/>\n";
  }

  void text(double cx, double cy, const std::string &s, const char *anchor = "middle",
            const char *color = "#ffffff", const char *cls = nullptr, double size = 0) {
    out_ << "<text";
    if (cls)
      out_ << " class=\"" << cls << "\"";
    out_ << " x=\"" << formatNumber(cx) << "\" y=\"" << formatNumber(cy) << "\" text-anchor=\""
         << anchor << "\" dominant-baseline=\"central\" fill=\"" << color << "\"";
    if (size > 0)
      out_ << " font-size=\"" << formatNumber(size) << "\"";
    out_ << ">" << escaped(s) << "</text>\n";
  }

  static std::string escaped(const std::string &s) {
    std::string out;
    for (char c : s)
      out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
    return out;
  }

  // One op's cell; `h` is a whole row or half of one (a pair). The label's font
  // fits the cell's height, so a pair's digits are not clipped.
  void op(const Op &o, double start, double end, double top, double h) {
    double w = x(end) - x(start);
    rect(x(start), top, w, h, colorOf(o.kind, o.chunk), "op");
    bool second = secondFlow_ && o.flow > 0;
    if (second)
      rect(x(start), top, w, h, "url(#second-flow)", "flow2");
    std::string label = std::to_string(ir_.indexInFlow(o)) + (second ? "'" : "");
    double size = std::min(11.0, h - 4);
    if (w >= textWidth(label) * size / 11 + 4)
      text((x(start) + x(end)) / 2, top + h / 2, label, "middle", labelColorOf(o.kind, o.chunk),
         nullptr, size < 11 ? size : 0);
  }

  void row(size_t index) {
    auto [r, copyRow] = rows_[index];
    double top = y(index);
    rect(x(0), top, plot_, kRowHeight, "#eeeeee", copyRow ? "copy-idle" : "idle");
    if (options_.shading && !copyRow) // sim --sensitivity: the label's box shaded by the rank's sensitivity
      drawRankShade(out_, *options_.shading, r, 2, top, kLeft - 6, kRowHeight);
    text(kLeft - 8, top + kRowHeight / 2, copyRow ? "copy " + std::to_string(r) : "rank " + std::to_string(r),
         "end", "#333333");
    const std::vector<Op> &ops = ir_.ranks[r].ops;
    for (uint32_t k = sim_.firstStep(r); k < sim_.endStep(r); ++k) {
      if (sim_.plan->onCopyStream(k) != copyRow)
        continue;
      StepTiming step = sim_.step(k);
      const Op &first = ops[step.op];
      if (first.pair != PairRole::First) {
        op(first, step.start, step.end, top, kRowHeight);
        continue;
      }
      op(first, step.start, step.end, top, kRowHeight / 2);
      op(ops[step.op + 1], step.start, step.end, top + kRowHeight / 2, kRowHeight / 2);
      frame(x(step.start), top, x(step.end) - x(step.start), kRowHeight, "pair");
    }
  }

  void axis(double top) {
    out_ << "<line x1=\"" << formatNumber(x(0)) << "\" y1=\"" << formatNumber(top) << "\" x2=\""
         << formatNumber(x(sim_.makespan)) << "\" y2=\"" << formatNumber(top)
         << "\" stroke=\"#333333\"/>\n";
    // About ten ticks on round numbers of the unit; counted, so no time can make it loop.
    double span = sim_.makespan / unit_.scale;
    double raw = span / 10;
    double magnitude = std::pow(10, std::floor(std::log10(raw > 0 ? raw : 1)));
    double tick = raw / magnitude < 2 ? magnitude : raw / magnitude < 5 ? 2 * magnitude : 5 * magnitude;
    if (!(tick > 0) || !std::isfinite(tick))
      tick = span > 0 ? span : 1;
    for (int i = 0; i <= kMaxTicks && i * tick <= span * (1 + 1e-12); ++i) {
      double t = i * tick * unit_.scale;
      out_ << "<line x1=\"" << formatNumber(x(t)) << "\" y1=\"" << formatNumber(top)
           << "\" x2=\"" << formatNumber(x(t)) << "\" y2=\"" << formatNumber(top + 5)
           << "\" stroke=\"#333333\"/>\n";
      text(x(t), top + 14, formatNumber(i * tick), "middle", "#333333");
    }
    text(x(0) - 8, top + 14, unit_.name.empty() ? "time" : "time (" + unit_.name + ")", "end",
         "#333333");
  }

  // The kinds and chunks the schedule has, the second flow and pairs if it has them.
  std::vector<LegendItem> legendItems() const {
    bool seen[ast::kNumOpKinds][2] = {}, pairs = false;
    for (const RankOps &rank : ir_.ranks)
      for (const Op &o : rank.ops) {
        seen[int(o.kind)][o.chunk > 0 && !isMemoryOp(o.kind)] = true; // copies: one colour
        pairs |= o.pair != PairRole::None;
      }
    std::vector<LegendItem> items;
    for (int later = 0; later < 2; ++later)
      for (int k = 0; k < ast::kNumOpKinds; ++k)
        if (OpKind kind = OpKind(k); seen[k][later])
          items.push_back({std::string(kindName(kind)) + (later ? ", chunk 1+" : ""),
                           colorOf(kind, later)});
    if (secondFlow_)
      items.push_back({"second flow (striped, n')", colorOf(OpKind::F, 0), true});
    if (pairs)
      items.push_back({"overlap pair F&B", nullptr});
    return items;
  }

  // Places the items in lines that fit the image; returns the legend's bottom.
  double layoutLegend(std::vector<LegendItem> &items, double top) const {
    double left = kLeft, line = top;
    for (LegendItem &item : items) {
      double w = 18 + textWidth(item.label) + 16;
      if (left > kLeft && left + w > width_ - kRight)
        left = kLeft, line += 20;
      item.x = left;
      item.y = line;
      left += w;
    }
    return line + 20 + 16; // the last line, then the note below it
  }

  void legend(const std::vector<LegendItem> &items) {
    out_ << "<g class=\"legend\">\n";
    double bottom = items.empty() ? 0 : items.back().y;
    for (const LegendItem &item : items) {
      if (item.fill) {
        rect(item.x, item.y, 14, 14, item.fill, "legend-key");
        if (item.striped)
          rect(item.x, item.y, 14, 14, "url(#second-flow)", "legend-key");
      } else {
        frame(item.x, item.y, 14, 14, "legend-key");
      }
      text(item.x + 18, item.y + 7, item.label, "start", "#333333");
    }
    text(kLeft, bottom + 28, "cells: micro-batch within its flow; grey: idle", "start", "#333333");
    out_ << "</g>\n";
  }

  const ScheduleIR &ir_;
  const SimResult &sim_;
  const SvgOptions &options_;
  llvm::raw_ostream &out_;
  TimeUnit unit_;
  double plot_ = kMinPlot, width_ = 0, rowsTop_ = kTitleHeight;
  std::vector<std::pair<size_t, bool>> rows_; // (rank, its copy stream?) top to bottom
  bool secondFlow_ = false;
};

} // namespace

bool writeSvg(const ScheduleIR &ir, const SimResult &sim, llvm::raw_ostream &out,
              const SvgOptions &options) {
  if (!undrawableReason(sim).empty())
    return false;
  SvgWriter(ir, sim, options, out).write();
  return true;
}

} // namespace pipec
