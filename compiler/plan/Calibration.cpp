#include "plan/Calibration.h"

#include "plan/JsonFields.h"
#include "plan/OpTimeModel.h"

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
    {MeasuredKind::AttentionBackward, "attention_backward"},
    {MeasuredKind::UnfusedAttention, "attention_unfused"},
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

// The bytes one link carries: the collective's bus share of the buffer, over
// the NICs of the members in a node when the group spans nodes.
double linkBytes(const Measurement &m, double share) {
  return share * m.bytes / double(m.interNode ? std::max<int64_t>(1, m.membersPerNode) : 1);
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
    double x = steps, y = linkBytes(*m, share), t = m->seconds;
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
      bytes += linkBytes(*m, share);
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
    double predicted = steps * fit.latency + linkBytes(*m, share) * inverse;
    error += std::fabs(predicted - m->seconds) / m->seconds;
  }
  fit.meanError = error / double(samples.size());
  if (!std::isfinite(fit.bandwidth) || !std::isfinite(fit.latency))
    return std::nullopt;
  return fit;
}

} // namespace

bool isCollective(MeasuredKind kind) {
  return kind != MeasuredKind::Matmul && kind != MeasuredKind::Attention &&
         kind != MeasuredKind::AttentionBackward && kind != MeasuredKind::UnfusedAttention;
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
  std::vector<const Measurement *> intra, inter;
  for (const Measurement &m : measurements) {
    if (!(m.seconds > 0) || !std::isfinite(m.seconds))
      continue; // an op that took no time says nothing
    ComputeFit *fit = m.kind == MeasuredKind::Matmul              ? &c.matmul
                      : m.kind == MeasuredKind::Attention         ? &c.attentionForward
                      : m.kind == MeasuredKind::AttentionBackward ? &c.attentionBackward
                      : m.kind == MeasuredKind::UnfusedAttention  ? &c.unfusedAttention
                                                                  : nullptr;
    if (fit && m.flops > 0) {
      fit->flops += m.flops, fit->seconds += m.seconds, ++fit->samples;
    } else if (!fit && m.bytes > 0 && m.ranks >= 2) {
      (m.interNode ? inter : intra).push_back(&m);
    }
  }
  for (ComputeFit *fit : {&c.matmul, &c.attentionForward, &c.attentionBackward,
                          &c.unfusedAttention})
    if (fit->seconds > 0)
      fit->modelEfficiency = fit->efficiency = fit->flops / (fit->seconds * base.peakFlops);
  // The model times a matmul from its shape at matmul_efficiency x its shape
  // efficiency: the efficiency at which the measured shapes take the measured
  // time (compute-bound shapes scale as 1 / efficiency).
  double predicted = 0, measured = 0;
  for (const Measurement &m : measurements)
    if (m.kind == MeasuredKind::Matmul && m.seconds > 0 && std::isfinite(m.seconds) && m.m > 0 &&
        m.n > 0 && m.k > 0) {
      predicted += gemmSeconds(base, m.m, m.n, m.k, false);
      measured += m.seconds;
    }
  if (predicted > 0 && measured > 0)
    c.matmul.modelEfficiency = base.matmulEfficiency * predicted / measured;
  c.intraNode = fitLink(intra, base.intraNodeLatency);
  c.interNode = fitLink(inter, base.interNodeLatency);
  if (!c.matmul.samples && !c.attentionForward.samples && !c.attentionBackward.samples &&
      !c.unfusedAttention.samples && !c.intraNode && !c.interNode) {
    error = "no matmul, attention or collective with a positive time and size was measured";
    return std::nullopt;
  }
  if (c.matmul.modelEfficiency > 1) {
    error = "the measured matmuls need a matmul_efficiency of " +
            std::to_string(int(100 * c.matmul.modelEfficiency)) +
            "% of the cluster's peak_flops: the peak is wrong for these GPUs (or the trace "
            "counts another precision)";
    return std::nullopt;
  }
  for (const auto &[fit, what] : {std::make_pair(&c.matmul, "matmuls"),
                                  std::make_pair(&c.attentionForward, "attention forwards"),
                                  std::make_pair(&c.attentionBackward, "attention backwards")})
    if (fit->efficiency > 1) {
      error = std::string("the measured ") + what + " run at " +
              std::to_string(int(100 * fit->efficiency)) +
              "% of the cluster's peak_flops: the peak is wrong for these GPUs (or the trace "
              "counts another precision)";
      return std::nullopt;
    }
  return c;
}

Cluster applyCalibration(const Cluster &base, const Calibration &calibration) {
  Cluster c = base;
  if (calibration.matmul.samples)
    c.matmulEfficiency = std::min(1.0, calibration.matmul.modelEfficiency);
  if (calibration.attentionForward.samples)
    c.attentionForwardEfficiency = calibration.attentionForward.efficiency;
  if (calibration.attentionBackward.samples)
    c.attentionBackwardEfficiency = calibration.attentionBackward.efficiency;
  double bus = base.busEfficiency > 0 ? base.busEfficiency : 1;
  if (calibration.intraNode) {
    c.intraNodeBandwidth = calibration.intraNode->bandwidth / bus;
    c.intraNodeLatency = calibration.intraNode->latency;
  }
  if (calibration.interNode) {
    c.interNodeBandwidth = calibration.interNode->bandwidth / bus;
    c.interNodeLatency = calibration.interNode->latency;
  }
  return c;
}

std::string clusterJson(const Cluster &c) {
  llvm::json::Object o;
  o["gpus"] = c.gpus;
  o["gpus_per_node"] = c.gpusPerNode;
  o["memory_bytes"] = c.memoryBytes;
  o["peak_flops"] = c.peakFlops;
  o["peak_flops_fp8"] = c.peakFlopsFp8;
  o["hbm_bandwidth"] = c.hbmBandwidth;
  o["sm_count"] = c.smCount;
  o["comm_sm_count"] = c.commSmCount;
  o["matmul_efficiency"] = c.matmulEfficiency;
  o["matmul_efficiency_fp8"] = c.matmulEfficiencyFp8;
  o["fp8_gemm_k_overhead"] = c.fp8GemmKOverhead;
  o["attention_forward_efficiency"] = c.attentionForwardEfficiency;
  o["attention_backward_efficiency"] = c.attentionBackwardEfficiency;
  o["memory_efficiency"] = c.memoryEfficiency;
  o["bus_efficiency"] = c.busEfficiency;
  o["dispatch_network_efficiency"] = c.dispatchNetworkEfficiency;
  o["intra_node_bandwidth"] = c.intraNodeBandwidth;
  o["inter_node_bandwidth"] = c.interNodeBandwidth;
  o["intra_node_latency"] = c.intraNodeLatency;
  o["inter_node_latency"] = c.interNodeLatency;
  o["cuda_context_bytes"] = c.cudaContextBytes;
  o["nccl_buffer_bytes"] = c.ncclBufferBytes;
  o["fragmentation"] = c.fragmentation;
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
      m.membersPerNode = f.integer("members_per_node", 1, 1 << 24, 1);
    } else {
      m.flops = f.number("flops", 0, 1e21, std::nullopt, true);
      m.m = f.number("m", 0, 1e9, 0.0);
      m.n = f.number("n", 0, 1e9, 0.0);
      m.k = f.number("k", 0, 1e9, 0.0);
    }
    if (!f.ok())
      return std::nullopt;
    measurements.push_back(std::move(m));
  }
  return measurements;
}

Cluster scaleCompute(const Cluster &base, double scale) {
  Cluster c = base;
  for (double *e : {&c.matmulEfficiency, &c.matmulEfficiencyFp8, &c.attentionForwardEfficiency,
                    &c.attentionBackwardEfficiency, &c.memoryEfficiency})
    *e = std::min(1.0, *e * scale);
  return c;
}

double maxComputeScale(const Cluster &base) {
  double largest = std::max({base.matmulEfficiency, base.matmulEfficiencyFp8,
                             base.attentionForwardEfficiency, base.attentionBackwardEfficiency,
                             base.memoryEfficiency});
  return largest > 0 ? 1 / largest : 1;
}

double profiledSeconds(const std::vector<StageProfile> &measured,
                       const std::vector<StageProfile> &weights) {
  double total = 0;
  for (size_t s = 0; s < measured.size() && s < weights.size(); ++s) {
    const OpProfile *m[] = {&measured[s].F, &measured[s].B, &measured[s].I, &measured[s].W};
    const OpProfile *w[] = {&weights[s].F, &weights[s].B, &weights[s].I, &weights[s].W};
    for (int k = 0; k < 4; ++k)
      total += double(w[k]->samples) * m[k]->seconds;
  }
  return total;
}

} // namespace pipec::plan
