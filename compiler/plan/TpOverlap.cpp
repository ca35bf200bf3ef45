// Transformer Engine's userbuffers overlap: its configuration and what it
// costs a tensor-parallel block (TpOverlap.h).
#include "plan/TpOverlap.h"

#include "plan/Cluster.h"
#include "plan/JsonFields.h"
#include "plan/OpTimeModel.h"
#include "plan/StageCosts.h"
#include "plan/Training.h"

#include <algorithm>
#include <cmath>

namespace pipec::plan {

namespace {

TpOverlapPoint ringExchange() { return {TpOverlapMethod::RingExchange, 1, false, 4, false}; }
TpOverlapPoint pipeline() { return {TpOverlapMethod::Pipeline, 16, true, 4, false}; }
TpOverlapPoint bulk() { return {TpOverlapMethod::Bulk, 16, true, 4, false}; }

// What a point may run, as TE builds them: the all-gathers before a matmul by
// ring exchange, the reduce-scatters after one by ring exchange or pipeline,
// the backward's collectives beside a whole matmul in bulk.
enum class PointKind { Gather, Scatter, Bulk };

struct PointName {
  const char *name;
  TpOverlapPoint TpOverlapConfig::*point;
  PointKind kind;
};

const PointName kPoints[] = {
    {"qkv_fprop", &TpOverlapConfig::qkvFprop, PointKind::Gather},
    {"fc1_fprop", &TpOverlapConfig::fc1Fprop, PointKind::Gather},
    {"proj_dgrad", &TpOverlapConfig::projDgrad, PointKind::Gather},
    {"fc2_dgrad", &TpOverlapConfig::fc2Dgrad, PointKind::Gather},
    {"proj_fprop", &TpOverlapConfig::projFprop, PointKind::Scatter},
    {"fc2_fprop", &TpOverlapConfig::fc2Fprop, PointKind::Scatter},
    {"qkv_dgrad", &TpOverlapConfig::qkvDgrad, PointKind::Bulk},
    {"fc1_dgrad", &TpOverlapConfig::fc1Dgrad, PointKind::Bulk},
    {"qkv_wgrad", &TpOverlapConfig::qkvWgrad, PointKind::Bulk},
    {"fc1_wgrad", &TpOverlapConfig::fc1Wgrad, PointKind::Bulk},
};

bool readPoint(const llvm::json::Object &object, const PointName &p, TpOverlapPoint &point, llvm::StringRef file,
               std::string &error) {
  std::string prefix = std::string("tp_comm_overlap_cfg.") + p.name + ".";
  JsonFields f(object, file, error, prefix);
  std::string method = f.string("method", p.kind == PointKind::Gather    ? "ring_exchange"
                                          : p.kind == PointKind::Scatter ? "pipeline"
                                                                         : "bulk");
  bool allowed = (method == "ring_exchange" && p.kind != PointKind::Bulk) ||
                 (method == "pipeline" && p.kind == PointKind::Scatter) ||
                 (method == "bulk" && p.kind == PointKind::Bulk);
  if (!allowed) {
    const char *expected = p.kind == PointKind::Gather    ? "ring_exchange"
                           : p.kind == PointKind::Scatter ? "ring_exchange or pipeline"
                                                          : "bulk";
    f.fail("method", "is '" + method + "'; this point runs " + expected);
    return false;
  }
  point.method = method == "ring_exchange" ? TpOverlapMethod::RingExchange
                 : method == "pipeline"    ? TpOverlapMethod::Pipeline
                                           : TpOverlapMethod::Bulk;
  if (f.has("num_sm")) {
    point.numSm = f.integer("num_sm", 0, 100000, point.numSm);
    point.numSmGiven = true;
  }
  point.setSmMargin = f.boolean("set_sm_margin", point.setSmMargin);
  point.numSplits = f.integer("num_splits", 1, 1024, point.numSplits);
  point.aggregate = f.boolean("aggregate", point.aggregate);
  // Read so that a typo is not taken for them; they do not change the time.
  f.integer("cga_size", 1, 1024, 1);
  f.boolean("fp8_buf", false);
  f.boolean("atomic_gemm", false);
  static const char *kKnown[] = {"method",  "num_sm",      "set_sm_margin", "num_splits",
                                 "aggregate", "cga_size", "fp8_buf",       "atomic_gemm"};
  for (const auto &entry : object)
    if (!llvm::is_contained(kKnown, entry.first.str()))
      f.fail(entry.first.str(), "is not a userbuffers field");
  return f.ok();
}

// A matmul beside a collective of `comm` seconds on `numSm` SMs: with the
// margin the matmul ran on the SMs left for all of `narrow`; without it, it
// has all of them (`full`) but loses the collective's share while that runs.
// Returns the matmul's seconds and sets the collective's exposed part.
double beside(const Cluster &c, const TpOverlapPoint &p, double full, double narrow, double comm,
              double &exposedComm) {
  if (p.setSmMargin) {
    exposedComm = std::max(0.0, comm - narrow);
    return narrow;
  }
  double rate = c.smCount > 0 ? std::max(0.0, 1 - double(smsHeld(p, c.smCount)) / double(c.smCount)) : 1.0;
  if (rate <= 0 || comm * rate < full) {
    exposedComm = 0;
    return full + comm * (1 - rate);
  }
  exposedComm = comm - full / rate; // the matmul finishes while the collective still runs
  return full / rate;
}

// One block's five points: the attention's (qkv, proj) or the MLP's (fc1, fc2).
struct BlockPoints {
  const TpOverlapPoint &gatherForward, &scatterForward, &gatherDgrad, &bulkDgrad, &bulkWgrad;
};

BlockPoints blockPoints(const TpOverlapConfig &c, bool attention) {
  if (attention)
    return {c.qkvFprop, c.projFprop, c.projDgrad, c.qkvDgrad, c.qkvWgrad};
  return {c.fc1Fprop, c.fc2Fprop, c.fc2Dgrad, c.fc1Dgrad, c.fc1Wgrad};
}

int64_t smsLeft(const Cluster &c, const TpOverlapPoint &p) {
  return c.smCount > 0 ? std::max<int64_t>(1, c.smCount - smsHeld(p, c.smCount)) : 0;
}

} // namespace

int64_t smsHeld(const TpOverlapPoint &point, int64_t smCount) {
  if (point.numSmGiven || smCount <= 0)
    return point.numSm;
  return std::min(point.numSm, std::max<int64_t>(point.numSm > 0 ? 1 : 0, smCount * point.numSm / 132));
}

TpOverlapConfig defaultTpOverlap() {
  TpOverlapConfig c;
  c.qkvFprop = c.fc1Fprop = c.projDgrad = c.fc2Dgrad = ringExchange();
  c.projFprop = c.fc2Fprop = pipeline();
  c.qkvDgrad = c.fc1Dgrad = c.qkvWgrad = c.fc1Wgrad = bulk();
  return c;
}

std::optional<TpOverlapConfig> parseTpOverlapConfig(const llvm::json::Value &value, llvm::StringRef file,
                                                    std::string &error) {
  const llvm::json::Object *object = value.getAsObject();
  if (!object) {
    error = file.str() + ": field 'tp_comm_overlap_cfg' must be an object of Transformer Engine's overlap points";
    return std::nullopt;
  }
  TpOverlapConfig config = defaultTpOverlap();
  for (const auto &entry : *object) {
    const PointName *p = std::find_if(std::begin(kPoints), std::end(kPoints),
                                      [&](const PointName &n) { return entry.first.str() == n.name; });
    if (p == std::end(kPoints)) {
      std::string known;
      for (const PointName &n : kPoints)
        known += (known.empty() ? "" : ", ") + std::string(n.name);
      error = file.str() + ": field 'tp_comm_overlap_cfg." + entry.first.str() + "' is not an overlap point (" +
              known + ")";
      return std::nullopt;
    }
    TpOverlapPoint &point = config.*(p->point);
    if (entry.second.kind() == llvm::json::Value::Null) {
      point.method = TpOverlapMethod::None;
      continue;
    }
    const llvm::json::Object *fields = entry.second.getAsObject();
    if (!fields) {
      error = file.str() + ": field 'tp_comm_overlap_cfg." + entry.first.str() + "' must be an object or null";
      return std::nullopt;
    }
    if (!readPoint(*fields, *p, point, file, error))
      return std::nullopt;
  }
  return config;
}

std::string tpOverlapClusterProblem(const TpOverlapConfig &config, const Cluster &cluster) {
  if (cluster.smCount <= 0)
    return "";
  for (const PointName &p : kPoints) {
    const TpOverlapPoint &point = config.*(p.point);
    if (point.method != TpOverlapMethod::None && point.numSmGiven && point.numSm >= cluster.smCount)
      return std::string("field 'tp_comm_overlap_cfg.") + p.name + ".num_sm' is " + std::to_string(point.numSm) +
             ", but the cluster's GPU has " + std::to_string(cluster.smCount) +
             " SMs: the matmul it overlaps needs some";
  }
  return "";
}

bool overlapsBlock(const TpOverlapConfig &c, bool attention) {
  BlockPoints p = blockPoints(c, attention);
  for (const TpOverlapPoint *point : {&p.gatherForward, &p.scatterForward, &p.gatherDgrad, &p.bulkDgrad, &p.bulkWgrad})
    if (point->method != TpOverlapMethod::None)
      return true;
  return false;
}

TpOverlapCost userbufferOverlap(const Cluster &c, const Training &tr, const TpBlock &b, double collective,
                                bool inNode) {
  const auto [gatherForward, scatterForward, gatherDgrad, bulkDgrad, bulkWgrad] =
      blockPoints(tr.tpOverlapConfig, b.attention);
  const double t = double(tr.tensorParallel), T = b.tokens;
  const double gatherBytes = b.fp8 ? collective / bytesOf(tr.activationType) : collective;
  const double bw = c.busBandwidth(inNode), latency = c.latency(inNode);
  const double gather = reduceScatterSeconds(gatherBytes, tr.tensorParallel, bw, latency);
  const double scatter = reduceScatterSeconds(collective, tr.tensorParallel, bw, latency);
  auto gemm = [&](double m, double n, double k, int64_t sms) { return gemmSecondsOnSms(c, m, n, k, b.fp8, sms); };
  // Never fewer than one row a chunk.
  auto chunksOf = [&](double wanted) { return std::max(1.0, std::min(wanted, std::floor(T))); };
  TpOverlapCost r;

  // A matmul of T rows (n x k) whose input (`gathers`) or output is exchanged
  // around the ring, one chunk a step; `bytes`: the whole exchanged tensor.
  auto ring = [&](const TpOverlapPoint &p, double n, double k, double bytes, bool gathers, double &compute,
                  double &exposedComm) {
    double chunks = chunksOf(p.aggregate && tr.tensorParallel >= 4 ? t / 2 : t);
    int64_t sms = p.setSmMargin ? smsLeft(c, p) : c.smCount;
    double chunk = gemm(T / chunks, n, k, sms);
    double step = messageSeconds(bytes / chunks, bw, latency);
    compute += chunks * chunk - gemm(T, n, k, c.smCount);
    exposedComm += (chunks - 1) * std::max(0.0, step - chunk) + (gathers ? 0 : step);
    // A reduce-scatter ends in one kernel summing the t partial chunks it
    // received into this rank's share (TE's split_overlap_rs_p2p, "Reduce
    // GEMM output chunks"): it reads them all and writes one.
    if (!gathers)
      compute += memoryBoundSeconds(c, bytes * (1 + 1 / t));
  };
  // Not overlapped: what the plain model charges, a whole collective of the
  // activation type.
  auto none = [&](double &exposedComm) { exposedComm += scatter; };

  // Forward: the first matmul after the all-gather, the second before the reduce-scatter.
  if (gatherForward.method == TpOverlapMethod::None)
    none(r.forwardExposed);
  else
    ring(gatherForward, b.firstOut, b.firstIn, gatherBytes, true, r.forwardCompute, r.forwardExposed);
  if (scatterForward.method == TpOverlapMethod::None) {
    none(r.forwardExposed);
  } else if (scatterForward.method == TpOverlapMethod::RingExchange) {
    ring(scatterForward, b.secondOut, b.secondIn, collective, false, r.forwardCompute, r.forwardExposed);
  } else {
    double splits = chunksOf(double(scatterForward.numSplits));
    double piece = reduceScatterSeconds(collective / splits, tr.tensorParallel, bw, latency);
    double full = gemm(T / splits, b.secondOut, b.secondIn, c.smCount);
    double narrow = gemm(T / splits, b.secondOut, b.secondIn, smsLeft(c, scatterForward));
    double hidden = 0;
    double chunk = beside(c, scatterForward, full, narrow, piece, hidden);
    r.forwardCompute += splits * chunk - gemm(T, b.secondOut, b.secondIn, c.smCount);
    r.forwardExposed += (splits - 1) * hidden + piece;
  }

  // Backward: the second matmul's dgrad after its output gradient's
  // all-gather; the first matmul's dgrad beside the input's all-gather, its
  // wgrad beside the dgrad's reduce-scatter.
  if (gatherDgrad.method == TpOverlapMethod::None)
    none(r.backwardExposed);
  else
    ring(gatherDgrad, b.secondIn, b.secondOut, gatherBytes, true, r.inputGradCompute, r.backwardExposed);
  auto bulkBeside = [&](const TpOverlapPoint &p, double m, double n, double k, double comm, double &compute,
                        bool hiddenWhenPlain) {
    if (p.method == TpOverlapMethod::None) {
      // The plain model hides the input's re-gather behind the dgrad matmul
      // (Megatron launches it asynchronously); the reduce-scatter shows whole.
      r.backwardExposed += hiddenWhenPlain ? std::max(0.0, scatter - gemm(m, n, k, c.smCount)) : scatter;
      return;
    }
    double full = gemm(m, n, k, c.smCount), narrow = gemm(m, n, k, smsLeft(c, p)), exposedComm = 0;
    compute += beside(c, p, full, narrow, comm, exposedComm) - full;
    r.backwardExposed += exposedComm;
  };
  bulkBeside(bulkDgrad, T, b.firstIn, b.firstOut, gather, r.inputGradCompute, true);
  bulkBeside(bulkWgrad, b.firstIn, b.firstOut, T, scatter, r.weightGradCompute, false);
  return r;
}

} // namespace pipec::plan
