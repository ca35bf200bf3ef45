#include "plan/ClusterTopology.h"

#include "plan/Cluster.h"
#include "plan/JsonFields.h"

#include "llvm/ADT/STLExtras.h"

namespace pipec::plan {

std::optional<Topology> readTopology(llvm::StringRef presetOrPath, std::string &error) {
  std::optional<Cluster> cluster = readCluster(presetOrPath, error);
  if (!cluster)
    return std::nullopt;
  Topology topology;
  topology.name = presetOrPath.str();
  topology.gpusPerNode = cluster->gpusPerNode;
  if (clusterPreset(presetOrPath))
    return topology;
  std::optional<std::string> text = readTextFile(presetOrPath, error);
  std::optional<llvm::json::Object> object =
      text ? parseJsonObject(*text, presetOrPath, error) : std::nullopt;
  if (!object)
    return std::nullopt;
  const llvm::json::Value *value = object->get("topology");
  if (!value || value->kind() == llvm::json::Value::Null)
    return topology;
  const llvm::json::Object *fields = value->getAsObject();
  if (!fields) {
    error = presetOrPath.str() + ": field 'topology' is not an object";
    return std::nullopt;
  }
  JsonFields f(*fields, presetOrPath.str() + ": topology", error);
  constexpr int64_t kMax = 1 << 20;
  topology.nvlinkDomain = f.integer("nvlink_domain", 1, kMax, 0);
  topology.nicsPerNode = f.integer("nics_per_node", 1, kMax, 0);
  topology.nicsPerGpu = f.integer("nics_per_gpu", 1, 64, 1);
  topology.stride = f.integer("pipeline_stride", 1, kMax, 1);
  for (const auto &entry : *fields) {
    static const char *kKnown[] = {"nvlink_domain", "nics_per_node", "nics_per_gpu",
                                   "pipeline_stride"};
    if (!llvm::is_contained(kKnown, entry.first.str()))
      f.fail(entry.first.str(), "is not a topology field (known: nvlink_domain, nics_per_node, "
                                "nics_per_gpu, pipeline_stride)");
  }
  if (!f.ok())
    return std::nullopt;
  if (std::string problem = topology.validate(); !problem.empty()) {
    error = presetOrPath.str() + ": topology: " + problem;
    return std::nullopt;
  }
  return topology;
}

} // namespace pipec::plan
