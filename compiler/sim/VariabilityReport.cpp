#include "sim/VariabilityReport.h"

#include "sim/SimOutputs.h"

#include <fmt/format.h>

#include <cmath>

namespace pipec {

std::vector<RankSensitivity> namedSensitiveRanks(const VariabilityReport &report) {
  std::vector<RankSensitivity> named;
  for (const RankSensitivity &r : mostSensitive(report.sensitivity))
    if (r.growth > 0 && named.size() < 3)
      named.push_back(r);
  return named;
}

void addStepTail(VariabilityReport &report, double tail) {
  report.tail += tail;
  report.quietStepTime += tail;
  report.stepTime += tail;
  if (report.jittered) {
    Distribution &d = report.jittered->stepTime;
    for (double *v : {&d.mean, &d.min, &d.p50, &d.p90, &d.p99, &d.max})
      *v += tail;
    for (double &t : report.jittered->stepTimes)
      t += tail;
  }
}

bool isFinite(const VariabilityReport &report) {
  auto finite = [](const Distribution &d) {
    for (double v : {d.mean, d.stddev, d.min, d.p50, d.p90, d.p99, d.max})
      if (!std::isfinite(v))
        return false;
    return true;
  };
  if (!std::isfinite(report.quietStepTime) || !std::isfinite(report.stepTime) ||
      !std::isfinite(report.tail))
    return false;
  if (report.jittered) {
    if (!finite(report.jittered->stepTime))
      return false;
    for (const Distribution &d : report.jittered->idle)
      if (!finite(d))
        return false;
  }
  for (const RankSensitivity &s : report.sensitivity)
    if (!std::isfinite(s.growth) || !std::isfinite(s.relative))
      return false;
  return true;
}

namespace {

std::string slowText(const std::vector<std::pair<int64_t, double>> &slow) {
  std::string text;
  for (auto [rank, factor] : slow)
    text += (text.empty() ? "rank " : ", rank ") + std::to_string(rank) + " x" + formatNumber(factor);
  return text;
}

void printSettings(const VariabilityReport &report, llvm::raw_ostream &out) {
  if (report.jittered)
    out << "variability: " << report.jitter << ", " << report.samples << " samples, seed "
        << report.seed << "\n";
  if (!report.slow.empty())
    out << "stragglers: " << slowText(report.slow) << "\n";
  if (!report.topology.empty())
    out << "contention: " << report.topology << "\n";
  if (report.tail > 0 && report.tailShared)
    out << "step times include the gradient reduction (" << formatNumber(report.tail)
        << " on a quiet NIC), run on each rank's NIC after its last step, sharing it with "
           "pipeline messages\n";
  else if (report.tail > 0)
    out << "step times include the " << formatNumber(report.tail)
        << " after the pipeline (gradient reduction)\n";
  if (!report.slow.empty() || !report.topology.empty())
    out << "step time on a quiet cluster: " << formatNumber(report.quietStepTime) << "\n";
}

void printDistribution(const VariabilityResult &v, double deterministic, llvm::raw_ostream &out) {
  const Distribution &d = v.stepTime;
  out << "step time without jitter: " << formatNumber(deterministic) << "\n";
  out << "step time mean: " << formatNumber(d.mean) << " (stddev " << formatNumber(d.stddev)
      << ")\n";
  out << "step time p50: " << formatNumber(d.p50) << "\n";
  out << "step time p90: " << formatNumber(d.p90) << "\n";
  out << "step time p99: " << formatNumber(d.p99) << "\n";
  out << "step time range: " << formatNumber(d.min) << " to " << formatNumber(d.max) << "\n";
  const char *kRow = "{:<8} {:>10} {:>10} {:>10} {:>10}\n";
  out << fmt::format(kRow, "idle", "mean", "p50", "p90", "p99");
  for (size_t r = 0; r < v.idle.size(); ++r)
    out << fmt::format(kRow, "rank " + std::to_string(r), formatNumber(v.idle[r].mean),
                       formatNumber(v.idle[r].p50), formatNumber(v.idle[r].p90),
                       formatNumber(v.idle[r].p99));
}

void printSensitivity(const VariabilityReport &report, llvm::raw_ostream &out) {
  out << "sensitivity: step growth when one rank alone is " << formatNumber(report.sensitivityFactor)
      << "x slower (no jitter)\n";
  const char *kRow = "{:<8} {:>12} {:>9}\n";
  out << fmt::format(kRow, "rank", "growth", "growth %");
  for (const RankSensitivity &r : report.sensitivity)
    out << fmt::format(kRow, "rank " + std::to_string(r.rank), formatNumber(r.growth),
                       formatNumber(100 * r.relative) + "%");
  std::vector<RankSensitivity> named = namedSensitiveRanks(report);
  out << "most sensitive:";
  if (named.empty())
    out << " none (no rank alone grows the step)";
  for (size_t i = 0; i < named.size(); ++i)
    out << (i ? ", rank " : " rank ") << named[i].rank << " (+" << formatNumber(named[i].growth)
        << ")";
  out << "\n";
}

void writeDistribution(llvm::json::OStream &j, const Distribution &d) {
  j.attribute("mean", d.mean);
  j.attribute("p50", d.p50);
  j.attribute("p90", d.p90);
  j.attribute("p99", d.p99);
}

} // namespace

void printVariabilityText(const VariabilityReport &report, llvm::raw_ostream &out) {
  printSettings(report, out);
  if (report.jittered)
    printDistribution(*report.jittered, report.stepTime, out);
  if (!report.sensitivity.empty())
    printSensitivity(report, out);
}

void writeVariabilityJson(const VariabilityReport &report, llvm::json::OStream &j) {
  if (report.jittered)
    j.attributeArray("idle_by_rank", [&] {
      for (size_t r = 0; r < report.jittered->idle.size(); ++r)
        j.object([&] {
          j.attribute("rank", int64_t(r));
          writeDistribution(j, report.jittered->idle[r]);
        });
    });
  if (!report.sensitivity.empty())
    j.attributeObject("sensitivity", [&] {
      j.attribute("factor", report.sensitivityFactor);
      j.attributeArray("most_sensitive", [&] {
        for (const RankSensitivity &r : namedSensitiveRanks(report))
          j.value(r.rank);
      });
      j.attributeArray("ranks", [&] {
        for (const RankSensitivity &r : report.sensitivity)
          j.object([&] {
            j.attribute("rank", r.rank);
            j.attribute("growth", r.growth);
            j.attribute("relative", r.relative);
          });
      });
    });
  if (report.jittered)
    j.attributeObject("step_time", [&] {
      const Distribution &d = report.jittered->stepTime;
      j.attribute("deterministic", report.stepTime);
      j.attribute("max", d.max);
      writeDistribution(j, d);
      j.attribute("min", d.min);
      j.attribute("stddev", d.stddev);
    });
  j.attributeObject("variability", [&] {
    j.attribute("jitter", report.jitter);
    if (report.jittered) {
      j.attribute("samples", int64_t(report.samples));
      j.attribute("seed", int64_t(report.seed));
    }
    j.attributeArray("slow", [&] {
      for (const auto &slow : report.slow) // not a structured binding: clang 14 cannot capture one
        j.object([&] {
          j.attribute("factor", slow.second);
          j.attribute("rank", slow.first);
        });
    });
    j.attribute("quiet_step_time", report.quietStepTime);
    if (report.tail > 0) {
      j.attribute("tail", report.tail);
      j.attribute("tail_shares_links", report.tailShared);
    }
    if (!report.topology.empty())
      j.attribute("topology", report.topology);
  });
}

} // namespace pipec
