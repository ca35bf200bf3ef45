#include "plan/Calibration.h"

#include "plan/JsonFields.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace pipec::plan {

namespace {

struct KindName {
  MeasuredKind kind;
  const char *name;
};
constexpr KindName kKinds[] = {
    {MeasuredKind::Matmul, "matmul"},          {MeasuredKind::Attention, "attention"},
    {MeasuredKind::AllReduce, "all_reduce"},   {MeasuredKind::AllGather, "all_gather"},
    {MeasuredKind::ReduceScatter, "reduce_scatter"}, {MeasuredKind::AllToAll, "all_to_all"},
    {MeasuredKind::SendRecv, "send_recv"},
};

// Steps and the share of the buffer each GPU sends, as the planner models a
// collective over n GPUs (Collectives.cpp).
std::pair<double, double> stepsAndShare(MeasuredKind kind, int64_t ranks) {
  double n = double(std::max<int64_t>(ranks, 1));
  switch (kind) {
  case MeasuredKind::AllReduce:
    return {2 * (n - 1), 2 * (n - 1) / n};
  case MeasuredKind::AllGather:
  case MeasuredKind::ReduceScatter:
  case MeasuredKind::AllToAll:
    return {n - 1, (n - 1) / n};
  default:
    return {1, 1};
  }
}

// Least squares of t = steps x latency + busBytes / bandwidth over the
// samples, latency and 1/bandwidth >= 0; one sample (or sizes that cannot be
// told apart) keeps `latency` and fits the bandwidth alone.
std::optional<LinkFit> fitLink(const std::vector<const Measurement *> &samples, double latency) {
  if (samples.empty())
    return std::nullopt;
  double sxx = 0, sxy = 0, syy = 0, sxt = 0, syt = 0;
  for (const Measurement *m : samples) {
    auto [steps, share] = stepsAndShare(m->kind, m->ranks);
    double x = steps, y = share * m->bytes, t = m->seconds;
    sxx += x * x, sxy += x * y, syy += y * y, sxt += x * t, syt += y * t;
  }
  LinkFit fit;
  fit.samples = samples.size();
  double det = sxx * syy - sxy * sxy;
  double inverse = 0; // 1 / bandwidth
  bool solved = false;
  if (samples.size() >= 2 && det > 1e-12 * sxx * syy) {
    double lat = (sxt * syy - syt * sxy) / det;
    inverse = (sxx * syt - sxy * sxt) / det;
    if (lat >= 0 && inverse > 0) {
      fit.latency = lat;
      solved = true;
    }
  }
  if (!solved) {
    // The latency as given; the bandwidth from what is left of the time.
    double bytes = 0, time = 0;
    for (const Measurement *m : samples) {
      auto [steps, share] = stepsAndShare(m->kind, m->ranks);
      bytes += share * m->bytes;
      time += std::max(0.0, m->seconds - steps * latency);
    }
    if (bytes <= 0 || time <= 0)
      return std::nullopt;
    fit.latency = latency;
    inverse = time / bytes;
  }
  fit.bandwidth = 1 / inverse;
  double error = 0;
  for (const Measurement *m : samples) {
    auto [steps, share] = stepsAndShare(m->kind, m->ranks);
    double predicted = steps * fit.latency + share * m->bytes * inverse;
    error += std::fabs(predicted - m->seconds) / m->seconds;
  }
  fit.meanError = error / double(samples.size());
  if (!std::isfinite(fit.bandwidth) || !std::isfinite(fit.latency))
    return std::nullopt;
  return fit;
}

} // namespace

bool isCollective(MeasuredKind kind) {
  return kind != MeasuredKind::Matmul && kind != MeasuredKind::Attention;
}

const char *measuredKindName(MeasuredKind kind) {
  for (const KindName &k : kKinds)
    if (k.kind == kind)
      return k.name;
  return "matmul";
}

std::optional<MeasuredKind> parseMeasuredKind(llvm::StringRef name) {
  for (const KindName &k : kKinds)
    if (name == k.name)
      return k.kind;
  return std::nullopt;
}

std::optional<Calibration> calibrate(const std::vector<Measurement> &measurements,
                                     const Cluster &base, std::string &error) {
  Calibration c;
  double matmulTime = 0, attentionTime = 0;
  std::vector<const Measurement *> intra, inter;
  for (const Measurement &m : measurements) {
    if (!(m.seconds > 0) || !std::isfinite(m.seconds))
      continue; // an op that took no time says nothing
    if (m.kind == MeasuredKind::Matmul && m.flops > 0) {
      c.matmulFlops += m.flops, matmulTime += m.seconds, ++c.matmulSamples;
    } else if (m.kind == MeasuredKind::Attention && m.flops > 0) {
      c.attentionFlops += m.flops, attentionTime += m.seconds, ++c.attentionSamples;
    } else if (isCollective(m.kind) && m.bytes > 0 && m.ranks >= 2) {
      (m.interNode ? inter : intra).push_back(&m);
    }
  }
  if (matmulTime > 0)
    c.matmulEfficiency = c.matmulFlops / (matmulTime * base.peakFlops);
  if (attentionTime > 0)
    c.attentionEfficiency = c.attentionFlops / (attentionTime * base.peakFlops);
  if (matmulTime + attentionTime > 0)
    c.computeEfficiency =
        (c.matmulFlops + c.attentionFlops) / ((matmulTime + attentionTime) * base.peakFlops);
  c.intraNode = fitLink(intra, base.intraNodeLatency);
  c.interNode = fitLink(inter, base.interNodeLatency);
  if (c.computeEfficiency <= 0 && !c.intraNode && !c.interNode) {
    error = "no matmul, attention or collective with a positive time and size was measured";
    return std::nullopt;
  }
  if (c.computeEfficiency > 1) {
    error = "the measured matmuls run at " + std::to_string(int(100 * c.computeEfficiency)) +
            "% of the cluster's peak_flops: the peak is wrong for these GPUs (or the trace "
            "counts another precision)";
    return std::nullopt;
  }
  return c;
}

Cluster applyCalibration(const Cluster &base, const Calibration &calibration) {
  Cluster c = base;
  if (calibration.computeEfficiency > 0)
    c.sustainedFraction = calibration.computeEfficiency;
  if (calibration.intraNode) {
    c.intraNodeBandwidth = calibration.intraNode->bandwidth;
    c.intraNodeLatency = calibration.intraNode->latency;
  }
  if (calibration.interNode) {
    c.interNodeBandwidth = calibration.interNode->bandwidth;
    c.interNodeLatency = calibration.interNode->latency;
  }
  return c;
}

std::string clusterJson(const Cluster &c) {
  llvm::json::Object o{{"gpus", c.gpus},
                       {"gpus_per_node", c.gpusPerNode},
                       {"memory_bytes", c.memoryBytes},
                       {"peak_flops", c.peakFlops},
                       {"sustained_fraction", c.sustainedFraction},
                       {"intra_node_bandwidth", c.intraNodeBandwidth},
                       {"inter_node_bandwidth", c.interNodeBandwidth},
                       {"intra_node_latency", c.intraNodeLatency},
                       {"inter_node_latency", c.interNodeLatency}};
  std::string text;
  llvm::raw_string_ostream out(text);
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
  return out.str();
}

std::optional<std::vector<Measurement>> readSweepResults(llvm::StringRef text,
                                                         llvm::StringRef name, std::string &error) {
  std::optional<llvm::json::Object> object = parseJsonObject(text, name, error);
  if (!object)
    return std::nullopt;
  const llvm::json::Array *list = object->getArray("measurements");
  if (!list) {
    error = name.str() + ": field 'measurements' is missing or not an array";
    return std::nullopt;
  }
  std::vector<Measurement> measurements;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string where = name.str() + ": measurements[" + std::to_string(i) + "]";
    const llvm::json::Object *entry = (*list)[i].getAsObject();
    if (!entry) {
      error = where + " is not an object";
      return std::nullopt;
    }
    JsonFields f(*entry, where, error);
    Measurement m;
    std::string kind = f.string("kind");
    if (!f.ok())
      return std::nullopt;
    std::optional<MeasuredKind> parsed = parseMeasuredKind(kind);
    if (!parsed) {
      error = where + ": field 'kind' is '" + kind +
              "'; known: matmul, attention, all_reduce, all_gather, reduce_scatter, all_to_all, "
              "send_recv";
      return std::nullopt;
    }
    m.kind = *parsed;
    m.name = f.string("name", kind);
    m.seconds = f.number("seconds", 0, 1e6, std::nullopt, true);
    if (isCollective(m.kind)) {
      m.bytes = f.number("bytes", 0, 1e15, std::nullopt, true);
      m.ranks = f.integer("ranks", 2, 1 << 24);
      m.interNode = f.boolean("inter_node", false);
    } else {
      m.flops = f.number("flops", 0, 1e21, std::nullopt, true);
    }
    if (!f.ok())
      return std::nullopt;
    measurements.push_back(std::move(m));
  }
  return measurements;
}

std::optional<double> sustainedFractionFromProfile(const std::vector<StageProfile> &measured,
                                                   const std::vector<StageProfile> &predicted,
                                                   double baseFraction, std::string &error) {
  double predictedTime = 0, measuredTime = 0;
  for (size_t s = 0; s < measured.size() && s < predicted.size(); ++s) {
    const OpProfile *m[] = {&measured[s].F, &measured[s].B, &measured[s].I, &measured[s].W};
    const OpProfile *p[] = {&predicted[s].F, &predicted[s].B, &predicted[s].I, &predicted[s].W};
    for (int k = 0; k < 4; ++k)
      if (m[k]->samples > 0) {
        measuredTime += double(m[k]->samples) * m[k]->seconds;
        predictedTime += double(m[k]->samples) * p[k]->seconds;
      }
  }
  if (!(measuredTime > 0) || !(predictedTime > 0)) {
    error = "the trace times no lone F, B, I or W op of the schedule's stages";
    return std::nullopt;
  }
  double fraction = baseFraction * predictedTime / measuredTime;
  if (!std::isfinite(fraction) || fraction > 1) {
    error = "the trace's ops run faster than the model allows at the cluster's peak_flops (a "
            "sustained fraction of " + std::to_string(fraction) +
            "): the model, the sizes or the cluster do not match the traced run";
    return std::nullopt;
  }
  return fraction;
}

} // namespace pipec::plan
