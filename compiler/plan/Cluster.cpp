#include "plan/Cluster.h"

#include "plan/GpuPresets.h"
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

} // namespace

std::optional<Cluster> clusterPreset(llvm::StringRef name) {
  std::optional<GpuSpec> g = gpuPreset(name);
  if (!g)
    return std::nullopt;
  Cluster c;
  c.name = g->name;
  c.gpu = g->name;
  c.gpus = g->gpusPerNode;
  c.gpusPerNode = g->gpusPerNode;
  c.memoryBytes = g->memoryBytes;
  c.peakFlops = g->peakFlops;
  c.peakFlopsFp8 = g->peakFlopsFp8;
  c.hbmBandwidth = g->hbmBandwidth;
  c.smCount = g->smCount;
  c.matmulEfficiency = g->matmulEfficiency;
  c.matmulEfficiencyFp8 = g->matmulEfficiencyFp8;
  c.fp8GemmKOverhead = g->fp8GemmKOverhead;
  c.attentionForwardEfficiency = g->attentionForwardEfficiency;
  c.attentionBackwardEfficiency = g->attentionBackwardEfficiency;
  c.memoryEfficiency = g->memoryEfficiency;
  c.intraNodeBandwidth = g->nvlinkBandwidth;
  c.interNodeBandwidth = g->networkBandwidth;
  c.intraNodeLatency = kNvlinkLatency;
  c.interNodeLatency = kInfinibandLatency;
  return c;
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
  // Magnitudes no GPU has are input errors (a unit slip), not clusters.
  if (!positive(c.peakFlops, kMaxFlops) || c.peakFlops < 1e9)
    return bad("peak_flops", "must be 1e9 to 1e18 FLOP/s");
  if (!std::isfinite(c.peakFlopsFp8) || c.peakFlopsFp8 < 0 || c.peakFlopsFp8 > kMaxFlops)
    return bad("peak_flops_fp8", "must be 0 (none) to 1e18");
  if (!positive(c.hbmBandwidth, kMaxBandwidth) || c.hbmBandwidth < 1e6)
    return bad("hbm_bandwidth", "must be 1e6 to 1e15 bytes/s");
  if (c.smCount < 0 || c.smCount > 1000000)
    return bad("sm_count", "must be 0 (no shape losses) to 1000000");
  if (c.commSmCount < 0 || (c.smCount > 0 && c.commSmCount >= c.smCount))
    return bad("comm_sm_count", "is " + std::to_string(c.commSmCount) + "; must be 0 to below sm_count (" +
                                    std::to_string(c.smCount) + "): compute overlapped with communication needs SMs");
  for (auto [field, value] : {std::pair<const char *, double>{"matmul_efficiency", c.matmulEfficiency},
                              {"matmul_efficiency_fp8", c.matmulEfficiencyFp8},
                              {"attention_forward_efficiency", c.attentionForwardEfficiency},
                              {"attention_backward_efficiency", c.attentionBackwardEfficiency},
                              {"memory_efficiency", c.memoryEfficiency},
                              {"bus_efficiency", c.busEfficiency},
                              {"dispatch_network_efficiency", c.dispatchNetworkEfficiency}})
    if (!positive(value, 1))
      return bad(field, "must be above 0 and at most 1");
  if (!std::isfinite(c.cudaContextBytes) || c.cudaContextBytes < 0 || c.cudaContextBytes > kMaxMemory)
    return bad("cuda_context_bytes", "must be 0 to 1e15");
  if (!std::isfinite(c.ncclBufferBytes) || c.ncclBufferBytes < 0 || c.ncclBufferBytes > kMaxMemory)
    return bad("nccl_buffer_bytes", "must be 0 to 1e15");
  if (!std::isfinite(c.fragmentation) || c.fragmentation < 0 || c.fragmentation >= 1)
    return bad("fragmentation", "must be 0 to below 1");
  if (!positive(c.intraNodeBandwidth, kMaxBandwidth) || c.intraNodeBandwidth < 1e6)
    return bad("intra_node_bandwidth", "must be 1e6 to 1e15 bytes/s");
  if (!positive(c.interNodeBandwidth, kMaxBandwidth) || c.interNodeBandwidth < 1e6)
    return bad("inter_node_bandwidth", "must be 1e6 to 1e15 bytes/s");
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
      f.fail("preset", "is '" + preset + "'; known: " + gpuPresetNames());
      return std::nullopt;
    }
    c = *base;
  }
  auto fallback = [&](auto value) {
    return fromPreset ? std::optional<decltype(value)>(value) : std::nullopt;
  };
  c.name = name.str();
  c.gpusPerNode = f.integer("gpus_per_node", 1, kMaxGpus, fallback(c.gpusPerNode));
  // A preset's cluster is one node: with gpus_per_node changed and no gpus
  // given, that is the changed node.
  c.gpus = f.integer("gpus", 1, kMaxGpus, fallback(c.gpusPerNode));
  c.memoryBytes = f.number("memory_bytes", 0, kMaxMemory, fallback(c.memoryBytes), true);
  c.peakFlops = f.number("peak_flops", 0, kMaxFlops, fallback(c.peakFlops), true);
  c.peakFlopsFp8 = f.number("peak_flops_fp8", 0, kMaxFlops, c.peakFlopsFp8);
  c.hbmBandwidth = f.number("hbm_bandwidth", 0, kMaxBandwidth, fallback(c.hbmBandwidth), true);
  c.smCount = f.integer("sm_count", 0, 1000000, c.smCount);
  if (f.has("comm_sm_count"))
    c.commSmCount = f.integer("comm_sm_count", 0, 1000000, c.commSmCount);
  else if (c.smCount > 0 && c.commSmCount >= c.smCount)
    // Not given, and the default 20 would leave a small GPU no SMs: DeepSeek-V3's
    // share of them (20 of 132) instead.
    c.commSmCount = c.smCount * 20 / 132;
  c.matmulEfficiency = f.number("matmul_efficiency", 0, 1, c.matmulEfficiency, true);
  c.matmulEfficiencyFp8 = f.number("matmul_efficiency_fp8", 0, 1, c.matmulEfficiencyFp8, true);
  c.fp8GemmKOverhead = f.number("fp8_gemm_k_overhead", 0, 1e6, c.fp8GemmKOverhead);
  c.attentionForwardEfficiency =
      f.number("attention_forward_efficiency", 0, 1, c.attentionForwardEfficiency, true);
  c.attentionBackwardEfficiency =
      f.number("attention_backward_efficiency", 0, 1, c.attentionBackwardEfficiency, true);
  c.memoryEfficiency = f.number("memory_efficiency", 0, 1, c.memoryEfficiency, true);
  c.busEfficiency = f.number("bus_efficiency", 0, 1, c.busEfficiency, true);
  c.dispatchNetworkEfficiency =
      f.number("dispatch_network_efficiency", 0, 1, c.dispatchNetworkEfficiency, true);
  c.cudaContextBytes = f.number("cuda_context_bytes", 0, kMaxMemory, c.cudaContextBytes);
  c.ncclBufferBytes = f.number("nccl_buffer_bytes", 0, kMaxMemory, c.ncclBufferBytes);
  c.fragmentation = f.number("fragmentation", 0, 0.99, c.fragmentation);
  c.intraNodeBandwidth =
      f.number("intra_node_bandwidth", 0, kMaxBandwidth, fallback(c.intraNodeBandwidth), true);
  c.interNodeBandwidth =
      f.number("inter_node_bandwidth", 0, kMaxBandwidth, fallback(c.interNodeBandwidth), true);
  c.intraNodeLatency = f.number("intra_node_latency", 0, kMaxLatency, fallback(c.intraNodeLatency));
  c.interNodeLatency = f.number("inter_node_latency", 0, kMaxLatency, fallback(c.interNodeLatency));
  for (const auto &entry : *object) {
    static const char *kKnown[] = {"preset", "gpus", "gpus_per_node", "memory_bytes", "peak_flops",
                                   "peak_flops_fp8", "hbm_bandwidth", "sm_count", "comm_sm_count", "matmul_efficiency", "matmul_efficiency_fp8",
                                   "fp8_gemm_k_overhead",
                                   "attention_forward_efficiency", "attention_backward_efficiency",
                                   "memory_efficiency", "bus_efficiency", "dispatch_network_efficiency",
                                   "intra_node_bandwidth",
                                   "inter_node_bandwidth", "intra_node_latency", "inter_node_latency",
                                   "cuda_context_bytes", "nccl_buffer_bytes", "fragmentation",
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
