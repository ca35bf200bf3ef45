#include "CudaOptions.h"

#include "pipert/SharedOptions.h"

#include <cstdlib>

namespace pipert::cuda {

// The CUDA program's own options; the rest are shared with the CPU program.
static const OptionParser &parser() {
  using K = OptionKind;
  static const OptionParser table(
      withOwnOptions({
          {"dtype", K::Choice, "fp32|bf16", "fp32", 0, 0,
           "activation precision (bf16 GEMMs accumulate in fp32, gradients\nare fp32)"},
          {"transport", K::Choice, "inproc|nccl", nullptr, 0, 0,
           "inproc: every rank on this process's GPU; nccl: one process\nper rank from "
           "RANK/WORLD_SIZE/LOCAL_RANK with MASTER_ADDR/\nMASTER_PORT or PIPERT_NCCL_ID_FILE "
           "(default: nccl when\nWORLD_SIZE is set, else inproc)"},
          {"cuda-graphs", K::Flag, "", nullptr, 0, 0,
           "capture the step into a CUDA graph and replay it; checks\nthat the replay matches an "
           "eager step bit for bit"},
          {"serial-pairs", K::Flag, "", nullptr, 0, 0,
           "run both halves of an overlap pair on the compute stream,\none after the other (the "
           "baseline of the overlap)"},
      }),
      "a micro-batch is one sequence; --trace times ops with CUDA events (eager steps), and\n"
      "with NCCL each rank writes FILE.rank<r>\n"
      "exit status: 0 ok, 1 check failed, 2 usage or setup error, 3 timeout, 77 no CUDA device\n");
  return table;
}

bool parseCudaOptions(int argc, char **argv, CudaOptions &o, int &status) {
  OptionValues v;
  if (!parser().parse(argc, argv, v, status))
    return false;
  o.steps = int(v.integer("steps"));
  o.hidden = int(v.integer("hidden"));
  o.seq = int(v.integer("seq"));
  const std::string &model = v.text("model");
  o.model = model == "mlp" ? ModelKind::Mlp : model == "moe" ? ModelKind::Moe : ModelKind::Empty;
  o.dtype = v.text("dtype") == "fp32" ? DType::F32 : DType::BF16;
  o.transportGiven = v.given("transport");
  bool nccl = o.transportGiven ? v.text("transport") == "nccl" : std::getenv("WORLD_SIZE") != nullptr;
  o.transport = nccl ? TransportKind::Nccl : TransportKind::InProcess;
  o.graphs = v.flag("cuda-graphs");
  o.serialPairs = v.flag("serial-pairs");
  o.check = v.flag("check");
  o.tolerance = v.given("tolerance") ? v.number("tolerance") : -1;
  o.tracePath = v.text("trace");
  o.seed = uint64_t(v.integer("seed"));
  o.timeoutSeconds = v.number("timeout");
  if (static_cast<long long>(o.seq) * o.hidden > (1LL << 28))
    return parser().fail("--seq times --hidden is too large (an activation over 2^28 elements)", status);
  if (o.model == ModelKind::Empty && o.check)
    return parser().fail("--model empty does no work: there is nothing to --check", status);
  return true;
}

} // namespace pipert::cuda
