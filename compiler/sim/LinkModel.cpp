#include "sim/LinkModel.h"

#include <algorithm>

namespace pipec {

std::string Topology::describe() const {
  std::string nics = nicPerGpu() ? std::to_string(nicsPerGpu) + " NIC(s) per GPU"
                                 : std::to_string(nicsPerNode) + " NIC(s) per node";
  return std::to_string(gpusPerNode) + " GPUs/node, NVLink domain " + std::to_string(domainSize()) +
         ", " + nics + ", rank stride " + std::to_string(stride);
}

std::string Topology::validate() const {
  if (gpusPerNode < 1)
    return "'gpus_per_node' must be at least 1, got " + std::to_string(gpusPerNode);
  if (nvlinkDomain < 0 || (nvlinkDomain > 0 && nvlinkDomain % gpusPerNode != 0 &&
                           gpusPerNode % nvlinkDomain != 0))
    return "'nvlink_domain' must divide 'gpus_per_node' or be a multiple of it, got " +
           std::to_string(nvlinkDomain);
  if (nicsPerNode < 0 || (nicsPerNode > 0 && gpusPerNode % nicsPerNode != 0))
    return "'nics_per_node' must divide 'gpus_per_node' (" + std::to_string(gpusPerNode) +
           "), got " + std::to_string(nicsPerNode);
  if (nicsPerGpu < 1 || (nicsPerNode > 0 && nicsPerGpu != 1))
    return "'nics_per_gpu' must be at least 1, and 1 when 'nics_per_node' is given, got " +
           std::to_string(nicsPerGpu);
  if (stride < 1)
    return "'pipeline_stride' must be at least 1, got " + std::to_string(stride);
  return "";
}

LinkModel::LinkModel(const Topology &topology, size_t ranks) : topology_(topology) {
  gpus_ = ranks == 0 ? 1 : gpuOf(ranks - 1) + 1;
  int64_t nodes = (gpus_ + topology_.gpusPerNode - 1) / topology_.gpusPerNode;
  nics_ = topology_.nicPerGpu() ? nodes * topology_.gpusPerNode : nodes * topology_.nicsPerNode;
  // [nvlink-out | nvlink-in] per GPU, then [nic-out | nic-in] per NIC.
  numLinks_ = size_t(2 * gpus_ + 2 * nics_);
}

int64_t LinkModel::nicOf(int64_t gpu) const {
  if (topology_.nicPerGpu())
    return gpu;
  int64_t node = gpu / topology_.gpusPerNode, local = gpu % topology_.gpusPerNode;
  int64_t perNic = topology_.gpusPerNode / topology_.nicsPerNode;
  return node * topology_.nicsPerNode + local / perNic;
}

LinkModel::Path LinkModel::path(size_t from, size_t to) const {
  int64_t a = gpuOf(from), b = gpuOf(to);
  int64_t domain = topology_.domainSize();
  if (a / domain == b / domain)
    return {{uint32_t(a), uint32_t(gpus_ + b)}};
  uint32_t nicBase = uint32_t(2 * gpus_);
  return {{uint32_t(nicBase + nicOf(a)), uint32_t(nicBase + nics_ + nicOf(b))}};
}

LinkModel::Path LinkModel::nicPath(size_t rank) const {
  uint32_t nicBase = uint32_t(2 * gpus_);
  int64_t nic = nicOf(gpuOf(rank));
  return {{uint32_t(nicBase + nic), uint32_t(nicBase + nics_ + nic)}};
}

std::string LinkModel::linkName(uint32_t link) const {
  int64_t l = link;
  if (l < gpus_)
    return "nvlink-out " + std::to_string(l);
  if (l < 2 * gpus_)
    return "nvlink-in " + std::to_string(l - gpus_);
  l -= 2 * gpus_;
  return l < nics_ ? "nic-out " + std::to_string(l) : "nic-in " + std::to_string(l - nics_);
}

} // namespace pipec
