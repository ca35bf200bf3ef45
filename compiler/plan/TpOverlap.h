// Tensor-parallel communication overlapped with the matmuls as Transformer
// Engine's userbuffers run it (Megatron --tp-comm-overlap, its configuration
// --tp-comm-overlap-cfg): what each overlap point does, TE's defaults, the
// training file's `tp_comm_overlap_cfg` in TE's own format, and what the
// overlap costs a block of two matmuls.
#pragma once

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace pipec::plan {

struct Cluster;
struct Training;

// How one overlap point runs (TE's "method"; None: that collective is not
// overlapped, a null entry in the configuration).
//  - RingExchange: the matmul runs as t chunks (t / 2 with `aggregate`), each
//    beside the point-to-point transfer of the next chunk (an all-gather) or
//    of the previous chunk's partial output (a reduce-scatter, whose last
//    transfer is exposed and whose received partials one kernel then sums).
//    Copy engines move the data.
//  - Pipeline: the matmul runs as `numSplits` chunks, each chunk's output
//    reduce-scattered by a kernel on `numSm` SMs beside the next chunk; the
//    last chunk's reduce-scatter is exposed.
//  - Bulk: one whole collective beside one whole matmul, the collective's
//    kernel on `numSm` SMs.
// With `setSmMargin` the matmul is launched on the SMs the collective leaves,
// for its whole run; without, both are launched on the GPU and the
// collective's SMs are lost to the matmul while it runs.
enum class TpOverlapMethod { None, RingExchange, Pipeline, Bulk };

struct TpOverlapPoint {
  TpOverlapMethod method = TpOverlapMethod::RingExchange;
  // SMs the collective holds. TE's default (`numSmGiven` false) is sized for
  // its GPUs; on a GPU of few SMs it takes the same share of an H100's 132
  // (smsHeld), as comm_sm_count does.
  int64_t numSm = 1;
  bool setSmMargin = false;
  int64_t numSplits = 4; // pipeline chunks; ring exchange always runs t (t / 2 aggregated)
  bool aggregate = false;
  bool numSmGiven = false;
};

// The SMs `point` holds on a GPU of `smCount` SMs: a given num_sm as it is,
// TE's default scaled to at most the share it has of an H100's 132 SMs.
int64_t smsHeld(const TpOverlapPoint &point, int64_t smCount);

// The ten points of a transformer layer, by TE's names: an all-gather before
// the first matmul of each block forward (qkv_fprop, fc1_fprop) and before the
// second's dgrad (proj_dgrad, fc2_dgrad); a reduce-scatter after the second
// matmul forward (proj_fprop, fc2_fprop); in the backward of the first
// matmul, the input's all-gather for the weight gradient beside its dgrad
// (qkv_dgrad, fc1_dgrad) and the dgrad's reduce-scatter beside its wgrad
// (qkv_wgrad, fc1_wgrad).
struct TpOverlapConfig {
  TpOverlapPoint qkvFprop, fc1Fprop, projDgrad, fc2Dgrad;
  TpOverlapPoint projFprop, fc2Fprop;
  TpOverlapPoint qkvDgrad, fc1Dgrad, qkvWgrad, fc1Wgrad;
};

// TE's defaults (transformer_engine/pytorch/module/base.py, initialize_ub,
// get_default_config): ring exchange with 1 SM and no margin for the
// all-gathers before a matmul; pipeline with 16 SMs, 4 splits and the margin
// for the reduce-scatters after one; bulk with 16 SMs and the margin for the
// backward's four.
TpOverlapConfig defaultTpOverlap();

// Reads `tp_comm_overlap_cfg`: an object of TE's point names, each an object
// of TE's fields (method, num_sm, set_sm_margin, num_splits, aggregate; also
// cga_size, fp8_buf and atomic_gemm, read and not modelled) or null (not
// overlapped). A point takes TE's default for its fields not given, as
// initialize_ub merges them. `file` and `error` as JsonFields writes them.
std::optional<TpOverlapConfig> parseTpOverlapConfig(const llvm::json::Value &value, llvm::StringRef file,
                                                    std::string &error);

// Empty, or why a configuration cannot run on `cluster`: a point given a
// num_sm of every SM the GPU has.
std::string tpOverlapClusterProblem(const TpOverlapConfig &config, const Cluster &cluster);

// One tensor-parallel block: its first matmul (column-parallel, fed by the
// sequence's all-gather) and its second (row-parallel, followed by the
// reduce-scatter), on `tokens` rows, already split by tensor parallelism.
struct TpBlock {
  double tokens = 0;
  double firstIn = 0, firstOut = 0, secondIn = 0, secondOut = 0;
  bool fp8 = false;
  bool attention = true; // the attention block (qkv, proj) or the MLP (fc1, fc2)
};

// What the overlap costs the block beyond its matmuls timed whole: extra
// computation seconds (split matmuls, matmuls on fewer SMs or beside a
// collective) and the communication left exposed, forward and backward.
struct TpOverlapCost {
  double forwardCompute = 0, inputGradCompute = 0, weightGradCompute = 0;
  double forwardExposed = 0, backwardExposed = 0;
};

// Whether any of the attention block's (or the MLP's) five points is overlapped.
bool overlapsBlock(const TpOverlapConfig &config, bool attention);

// `collectiveBytes`: the block's whole gathered tensor in the activation type
// (T x h x bytes); all-gathers move FP8 under FP8 training (TE's fp8_buf for
// them), reduce-scatters the activation type. `inNode`: the tensor-parallel
// group lies in one node. A point that is not overlapped (None) costs what
// the plain model charges for its collective (LayerTimes.cpp): whole, but
// the input's re-gather hidden behind the dgrad matmul as Megatron does it.
// Chunks never get fewer than one row.
TpOverlapCost userbufferOverlap(const Cluster &cluster, const Training &training, const TpBlock &block,
                                double collectiveBytes, bool inNode);

} // namespace pipec::plan
