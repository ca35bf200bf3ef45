// The network under a pipeline: which links a message between two ranks
// occupies, for the simulator's contention model (`pipec sim --topology`).
//
// A topology is nodes of G GPUs; GPUs in one NVLink domain (by default one node)
// reach each other over NVLink, others over NICs (N per GPU, or K per node
// shared by its GPUs in equal consecutive groups). Every link is one direction:
// per GPU an NVLink port out and in, per NIC an uplink and a downlink; the fabric
// between NICs is taken as non-blocking (a fat tree), so a path is two links:
//   same NVLink domain: nvlink-out(a), nvlink-in(b); otherwise nic-out(nic(a)), nic-in(nic(b)).
// Pipeline rank r sits on GPU r x stride (stride: GPUs between consecutive
// pipeline ranks, e.g. the tensor-parallel size, or G to put each rank on its own node).
//
// Sharing rule: while n messages occupy a link of c lanes each gets min(1, c/n)
// of its full rate (c = N for a GPU's NICs, 1 for any other link); a message
// moves at the smallest share along its path (no redistribution of a share a
// message cannot use). Only a message's serialisation (bytes / bandwidth, its
// transfer time less latency) is slowed; its latency is not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipec {

struct Topology {
  std::string name;            // for reports: the cluster file or preset
  int64_t gpusPerNode = 8;
  int64_t nvlinkDomain = 0;    // GPUs per NVLink domain; 0: one node
  int64_t nicsPerNode = 0;     // 0: NICs per GPU
  int64_t nicsPerGpu = 1;      // lanes of a GPU's NIC link (nicsPerNode 0 only)
  int64_t stride = 1;          // GPUs from one pipeline rank to the next

  int64_t domainSize() const { return nvlinkDomain > 0 ? nvlinkDomain : gpusPerNode; }
  bool nicPerGpu() const { return nicsPerNode <= 0; }
  // "8 GPUs/node, NVLink domain 8, 1 NIC per GPU, rank stride 1"
  std::string describe() const;
  // "" when usable, else what is wrong (a field out of range), naming the field.
  std::string validate() const;
};

class LinkModel {
public:
  LinkModel(const Topology &topology, size_t ranks);

  size_t numLinks() const { return numLinks_; }
  // The two links of a message from rank `from` to rank `to`.
  struct Path {
    uint32_t link[2];
  };
  Path path(size_t from, size_t to) const;
  // The links of traffic that leaves the pipeline (a data-parallel reduction with
  // peers on other nodes): the rank's NIC, up and down.
  Path nicPath(size_t rank) const;
  // Messages the link carries at full rate at once.
  double lanes(uint32_t link) const {
    return topology_.nicPerGpu() && link >= uint32_t(2 * gpus_) ? double(topology_.nicsPerGpu) : 1.0;
  }
  // "nic-out 3", "nvlink-in 5": for reports and tests.
  std::string linkName(uint32_t link) const;
  const Topology &topology() const { return topology_; }

private:
  int64_t gpuOf(size_t rank) const { return int64_t(rank) * topology_.stride; }
  int64_t nicOf(int64_t gpu) const;

  Topology topology_;
  int64_t gpus_ = 0, nics_ = 0;
  size_t numLinks_ = 0;
};

} // namespace pipec
