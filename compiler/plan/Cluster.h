// The machines a plan runs on: GPUs, their memory and speed, and the links
// between them. Read from a small JSON file or taken from a built-in preset.
//
// File format (units are plain SI numbers: bytes, FLOP/s, bytes/s, seconds):
//   { "preset": "h100",                  // optional: start from a preset
//     "gpus": 64, "gpus_per_node": 8,
//     "memory_bytes": 80e9,              // per GPU
//     "peak_flops": 989e12,              // dense bf16, per GPU
//     "sustained_fraction": 0.5,         // share of peak that matmuls reach (MFU-like)
//     "intra_node_bandwidth": 450e9,     // bytes/s per GPU, one direction
//     "inter_node_bandwidth": 50e9,
//     "intra_node_latency": 3e-6,        // seconds per message
//     "inter_node_latency": 10e-6 }
// Every field but "preset" is required when there is no preset.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace pipec::plan {

struct Cluster {
  std::string name;                // preset name or file name, for reports
  int64_t gpus = 0;
  int64_t gpusPerNode = 0;
  double memoryBytes = 0;          // per GPU
  double peakFlops = 0;            // dense bf16 FLOP/s per GPU
  double sustainedFraction = 0.5;  // default: half of peak, a typical large-run MFU
  double intraNodeBandwidth = 0;   // bytes/s per GPU per direction
  double interNodeBandwidth = 0;
  double intraNodeLatency = 0;     // seconds
  double interNodeLatency = 0;

  // FLOP/s a matmul-bound op reaches: peak x sustained fraction.
  double sustainedFlops() const { return peakFlops * sustainedFraction; }
  int64_t nodeOf(int64_t gpu) const { return gpusPerNode > 0 ? gpu / gpusPerNode : 0; }
  double bandwidth(bool sameNode) const { return sameNode ? intraNodeBandwidth : interNodeBandwidth; }
  double latency(bool sameNode) const { return sameNode ? intraNodeLatency : interNodeLatency; }
};

// "h100", "h800", "h200" (one node of 8 GPUs; set "gpus" for more); nullopt otherwise.
std::optional<Cluster> clusterPreset(llvm::StringRef name);
// Checks every field (positive, finite, gpus a multiple of gpus_per_node, fraction in (0, 1]);
// false with `error` naming the field.
bool validateCluster(const Cluster &cluster, std::string &error);
// Parses the JSON text; `name` is the file name for messages.
std::optional<Cluster> parseCluster(llvm::StringRef text, llvm::StringRef name, std::string &error);
// A preset name, or a JSON file's path.
std::optional<Cluster> readCluster(llvm::StringRef presetOrPath, std::string &error);

} // namespace pipec::plan
