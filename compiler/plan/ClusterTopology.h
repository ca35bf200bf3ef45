// The network topology of a cluster, for the simulator's contention model
// (`pipec sim --topology FILE|preset`): GPUs per node from the cluster, and the
// cluster file's optional "topology" object:
//   "topology": { "nvlink_domain": 8,    // GPUs per NVLink domain (default: a node)
//                 "nics_per_node": 4,    // NICs shared by a node's GPUs, or
//                 "nics_per_gpu": 1,     // NICs of each GPU (default 1)
//                 "pipeline_stride": 8 } // GPUs from one pipeline rank to the next (default 1)
// Kept apart from Cluster.cpp, which only lets the key through: the planner's
// cluster does not need it. Presets (h100, h800, h200) are 8-GPU NVLink nodes
// with one 400 Gb/s NIC per GPU (DeepSeek-V3 report §3.1).
#pragma once

#include "sim/LinkModel.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace pipec::plan {

// A preset name or a cluster JSON file; nullopt with `error` naming the file and field.
std::optional<Topology> readTopology(llvm::StringRef presetOrPath, std::string &error);

} // namespace pipec::plan
