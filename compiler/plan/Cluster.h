// The machines a plan runs on: GPUs, their memory and speed, and the links
// between them. Read from a small JSON file or taken from a built-in preset.
//
// File format (units are plain SI numbers: bytes, FLOP/s, bytes/s, seconds):
//   { "preset": "h100",                  // optional: a100, h100, h800, h200, b200, gb200
//     "gpus": 64, "gpus_per_node": 8,
//     "memory_bytes": 80e9,              // per GPU
//     "peak_flops": 989e12,              // dense bf16, per GPU
//     "peak_flops_fp8": 1979e12,         // dense fp8 (0: none)
//     "hbm_bandwidth": 3.35e12,          // bytes/s
//     "sm_count": 132,
//     "comm_sm_count": 20,               // SMs an overlapped all-to-all holds
//     "matmul_efficiency": 0.8,          // large GEMM, achieved / peak
//     "matmul_efficiency_fp8": 0.7,      // the same of the FP8 peak
//     "attention_forward_efficiency": 0.58, "attention_backward_efficiency": 0.45,
//     "memory_efficiency": 0.8,          // elementwise kernels, achieved / HBM
//     "intra_node_bandwidth": 450e9,     // bytes/s per GPU, one direction
//     "inter_node_bandwidth": 50e9,
//     "bus_efficiency": 0.8,             // collectives' achieved bus bandwidth / link
//     "dispatch_network_efficiency": 0.89, // a deduplicated EP dispatch's network share / link
//     "intra_node_latency": 5e-6,        // seconds per message
//     "inter_node_latency": 10e-6,
//     "cuda_context_bytes": 0.6e9, "nccl_buffer_bytes": 268435456,  // per communicator
//     "fragmentation": 0.05 }            // allocator margin, share of the rest
// Every field but "preset" is required when there is no preset, except the
// efficiencies and overheads, which default to the documented values.
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
  double peakFlopsFp8 = 0;         // dense fp8 FLOP/s per GPU; 0: no fp8
  double hbmBandwidth = 0;         // bytes/s
  int64_t smCount = 0;             // for wave quantization; 0: no shape losses
  // SMs the expert-parallel dispatch and combine kernels hold while they run,
  // taken from the compute they overlap in an overlap pair (OverlapPlan.h):
  // DeepSeek-V3 gives them 20 of the H800's 132 (report, Sec. 3.2.2), and
  // DeepEP, its open kernels (also what Megatron's flex dispatcher runs), holds
  // 20 by default (deep_ep/buffer.py, `Buffer.num_sms = 20`). Below sm_count
  // (not given on a GPU of 20 SMs or fewer: the same share, sm_count x 20 / 132);
  // ignored when sm_count is 0.
  int64_t commSmCount = 20;
  // The share of the SMs that communication holds while it runs.
  double commSmShare() const { return smCount > 0 ? double(commSmCount) / double(smCount) : 0.0; }
  double matmulEfficiency = 0.8;   // large, well-tiled GEMM: achieved / peak
  double matmulEfficiencyFp8 = 0.7; // the same for FP8 GEMMs, of the FP8 peak
  // A thread-block tile's fixed cost (pipeline fill, epilogue) in FP8 GEMMs,
  // as the number of K elements the main loop would run in that time: an FP8
  // GEMM of inner dimension k reaches matmulEfficiencyFp8 x k / (k + this)
  // (gemmSeconds, OpTimeModel.h). 0: no dependence on k. The presets take it
  // from DeepGEMM's measured table (GpuPresets.cpp).
  double fp8GemmKOverhead = 0;
  double attentionForwardEfficiency = 0.58;
  double attentionBackwardEfficiency = 0.45;
  double memoryEfficiency = 0.8;   // elementwise kernels: achieved / HBM bandwidth
  double intraNodeBandwidth = 0;   // bytes/s per GPU per direction
  double interNodeBandwidth = 0;
  // Achieved bus bandwidth of NCCL collectives over the link rate at large
  // messages: nccl-tests on DGX A100 and H100 report about 80%.
  double busEfficiency = 0.8;
  // The share of the network link that a deduplicated expert-parallel dispatch
  // and combine (DeepEP's normal kernels, which send a token once per node and
  // forward it over NVLink) achieve across nodes. DeepEP's first published
  // table (deepseek-ai/DeepEP README at ebfe47e, H800 with CX7 400 Gb/s, "~50
  // GB/s maximum", DeepSeek-V3's pretraining setting) measures 43, 44 and 46
  // GB/s dispatch and 43, 47 and 45 GB/s combine at EP 16, 32 and 64: 44.7 GB/s
  // on average, 0.89 of 50. The plain all-to-all keeps bus_efficiency.
  double dispatchNetworkEfficiency = 0.89;
  double intraNodeLatency = 0;     // seconds
  double interNodeLatency = 0;
  // Memory outside the framework's tensors: the CUDA context (with lazy
  // module loading, about 0.5-0.6 GB on Hopper), NCCL's buffers per
  // communicator (NCCL_BUFFSIZE 4 MiB per channel, send and receive, up to 32
  // channels: 256 MiB), and the caching allocator's fragmentation as a share
  // of everything else (a stated margin, not a measurement).
  double cudaContextBytes = 0.6e9;
  double ncclBufferBytes = 268435456;
  double fragmentation = 0.05;
  std::string gpu;                 // the GPU preset this cluster started from, if any
  int64_t nodeOf(int64_t gpu) const { return gpusPerNode > 0 ? gpu / gpusPerNode : 0; }
  double bandwidth(bool sameNode) const { return sameNode ? intraNodeBandwidth : interNodeBandwidth; }
  // What a collective achieves: the link rate x bus efficiency.
  double busBandwidth(bool sameNode) const { return bandwidth(sameNode) * busEfficiency; }
  double latency(bool sameNode) const { return sameNode ? intraNodeLatency : interNodeLatency; }
};

// "a100", "h100", "h800", "h200", "b200" (one node of 8 GPUs; set "gpus" for
// more), from GpuPresets.h; nullopt otherwise.
std::optional<Cluster> clusterPreset(llvm::StringRef name);
// Checks every field (positive, finite, gpus a multiple of gpus_per_node, fractions in (0, 1]);
// false with `error` naming the field.
bool validateCluster(const Cluster &cluster, std::string &error);
// Parses the JSON text; `name` is the file name for messages.
std::optional<Cluster> parseCluster(llvm::StringRef text, llvm::StringRef name, std::string &error);
// A preset name, or a JSON file's path.
std::optional<Cluster> readCluster(llvm::StringRef presetOrPath, std::string &error);

} // namespace pipec::plan
