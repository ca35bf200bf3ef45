#include "plan/Cluster.h"

#include "plan/JsonFields.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

namespace pipec::plan {

namespace {

constexpr int64_t kMaxGpus = int64_t(1) << 24;
constexpr double kMaxMemory = 1e15, kMaxFlops = 1e18, kMaxBandwidth = 1e15, kMaxLatency = 1;

// Latencies are not on any datasheet: a few microseconds is what NCCL's
// point-to-point takes for a small message over NVLink, about ten over
// InfiniBand. Override them from a file when measured.
constexpr double kNvlinkLatency = 5e-6, kInfinibandLatency = 10e-6;

Cluster hopper(const char *name, double memory, double nvlink) {
  Cluster c;
  c.name = name;
  c.gpus = 8;
  c.gpusPerNode = 8;
  c.memoryBytes = memory;
  c.peakFlops = 989e12; // dense BF16 tensor core, SXM (NVIDIA H100/H200 datasheets: 1,979 with sparsity)
  c.sustainedFraction = 0.5;
  c.intraNodeBandwidth = nvlink;
  // 400 Gb/s InfiniBand (ConnectX-7) per GPU = 50 GB/s; the DeepSeek-V3 report
  // (§3.2.2) measures the same 50 GB/s per GPU across H800 nodes.
  c.interNodeBandwidth = 50e9;
  c.intraNodeLatency = kNvlinkLatency;
  c.interNodeLatency = kInfinibandLatency;
  return c;
}

} // namespace

std::optional<Cluster> clusterPreset(llvm::StringRef name) {
  // H100 SXM: 80 GB HBM3, NVLink 4 at 900 GB/s bidirectional = 450 GB/s per
  // direction (NVIDIA H100 datasheet).
  if (name == "h100")
    return hopper("h100", 80e9, 450e9);
  // H800: the H100 with NVLink cut to 400 GB/s bidirectional, 200 GB/s per
  // direction (DeepSeek-V3 report §3.1; §3.2.2 achieves about 160 GB/s).
  if (name == "h800")
    return hopper("h800", 80e9, 200e9);
  // H200 SXM: 141 GB HBM3e, same compute and NVLink as the H100 (NVIDIA H200 datasheet).
  if (name == "h200")
    return hopper("h200", 141e9, 450e9);
  return std::nullopt;
}

bool validateCluster(const Cluster &c, std::string &error) {
  auto bad = [&](const char *field, const std::string &problem) {
    error = c.name + ": field '" + field + "' " + problem;
    return false;
  };
  auto positive = [](double v, double max) { return std::isfinite(v) && v > 0 && v <= max; };
  if (c.gpus < 1 || c.gpus > kMaxGpus)
    return bad("gpus", "must be 1 to " + std::to_string(kMaxGpus));
  if (c.gpusPerNode < 1 || c.gpusPerNode > kMaxGpus)
    return bad("gpus_per_node", "must be 1 to " + std::to_string(kMaxGpus));
  if (c.gpus > c.gpusPerNode && c.gpus % c.gpusPerNode != 0)
    return bad("gpus", "is " + std::to_string(c.gpus) + ", not a whole number of nodes of " +
                           std::to_string(c.gpusPerNode));
  if (!positive(c.memoryBytes, kMaxMemory))
    return bad("memory_bytes", "must be above 0 and at most 1e15");
  if (!positive(c.peakFlops, kMaxFlops))
    return bad("peak_flops", "must be above 0 and at most 1e18");
  if (!positive(c.sustainedFraction, 1))
    return bad("sustained_fraction", "must be above 0 and at most 1");
  if (!positive(c.intraNodeBandwidth, kMaxBandwidth))
    return bad("intra_node_bandwidth", "must be above 0 and at most 1e15");
  if (!positive(c.interNodeBandwidth, kMaxBandwidth))
    return bad("inter_node_bandwidth", "must be above 0 and at most 1e15");
  if (!std::isfinite(c.intraNodeLatency) || c.intraNodeLatency < 0 || c.intraNodeLatency > kMaxLatency)
    return bad("intra_node_latency", "must be 0 to 1 second");
  if (!std::isfinite(c.interNodeLatency) || c.interNodeLatency < 0 || c.interNodeLatency > kMaxLatency)
    return bad("inter_node_latency", "must be 0 to 1 second");
  return true;
}

std::optional<Cluster> parseCluster(llvm::StringRef text, llvm::StringRef name, std::string &error) {
  std::optional<llvm::json::Object> object = parseJsonObject(text, name, error);
  if (!object)
    return std::nullopt;
  JsonFields f(*object, name, error);
  Cluster c;
  bool fromPreset = f.has("preset");
  if (fromPreset) {
    std::string preset = f.string("preset");
    std::optional<Cluster> base = clusterPreset(preset);
    if (!base) {
      f.fail("preset", "is '" + preset + "'; known: h100, h800, h200");
      return std::nullopt;
    }
    c = *base;
  }
  auto fallback = [&](auto value) {
    return fromPreset ? std::optional<decltype(value)>(value) : std::nullopt;
  };
  c.name = name.str();
  c.gpus = f.integer("gpus", 1, kMaxGpus, fallback(c.gpus));
  c.gpusPerNode = f.integer("gpus_per_node", 1, kMaxGpus, fallback(c.gpusPerNode));
  c.memoryBytes = f.number("memory_bytes", 0, kMaxMemory, fallback(c.memoryBytes), true);
  c.peakFlops = f.number("peak_flops", 0, kMaxFlops, fallback(c.peakFlops), true);
  c.sustainedFraction = f.number("sustained_fraction", 0, 1, c.sustainedFraction, true);
  c.intraNodeBandwidth =
      f.number("intra_node_bandwidth", 0, kMaxBandwidth, fallback(c.intraNodeBandwidth), true);
  c.interNodeBandwidth =
      f.number("inter_node_bandwidth", 0, kMaxBandwidth, fallback(c.interNodeBandwidth), true);
  c.intraNodeLatency = f.number("intra_node_latency", 0, kMaxLatency, fallback(c.intraNodeLatency));
  c.interNodeLatency = f.number("inter_node_latency", 0, kMaxLatency, fallback(c.interNodeLatency));
  for (const auto &entry : *object) {
    static const char *kKnown[] = {"preset", "gpus", "gpus_per_node", "memory_bytes", "peak_flops",
                                   "sustained_fraction", "intra_node_bandwidth",
                                   "inter_node_bandwidth", "intra_node_latency", "inter_node_latency",
                                   "topology" /* read by ClusterTopology.cpp */};
    if (!llvm::is_contained(kKnown, entry.first.str()))
      f.fail(entry.first.str(), "is not a cluster field");
  }
  if (!f.ok() || !validateCluster(c, error))
    return std::nullopt;
  return c;
}

std::optional<Cluster> readCluster(llvm::StringRef presetOrPath, std::string &error) {
  if (std::optional<Cluster> preset = clusterPreset(presetOrPath))
    return preset;
  std::optional<std::string> text = readTextFile(presetOrPath, error);
  if (!text)
    return std::nullopt;
  return parseCluster(*text, presetOrPath, error);
}

} // namespace pipec::plan
