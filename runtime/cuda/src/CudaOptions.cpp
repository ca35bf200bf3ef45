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
           "inproc: every rank on this process's GPU; nccl: one process\nper rank, started by "
           "torchrun, srun or mpirun (see below)\n(default: nccl when WORLD_SIZE is set or a "
           "launcher started\nseveral processes, else inproc)"},
          {"rank", K::Integer, "R", nullptr, 0, 1 << 20,
           "nccl: this process's rank (overrides the launcher's)"},
          {"world-size", K::Integer, "N", nullptr, 1, 1 << 20,
           "nccl: the number of processes (overrides the launcher's)"},
          {"local-rank", K::Integer, "R", nullptr, 0, 1 << 20,
           "nccl: this process's GPU on its node (overrides the\nlauncher's)"},
          {"master-addr", K::Text, "HOST", nullptr, 0, 0,
           "nccl: rank 0's host, where it hands out the NCCL id\n(overrides MASTER_ADDR)"},
          {"master-port", K::Integer, "PORT", nullptr, 1, 65535,
           "nccl: rank 0's TCP port (overrides MASTER_PORT; default\n29500 under srun and mpirun)"},
          {"cuda-graphs", K::Flag, "", nullptr, 0, 0,
           "capture the step into a CUDA graph and replay it; checks\nthat the replay matches an "
           "eager step bit for bit"},
          {"serial-pairs", K::Flag, "", nullptr, 0, 0,
           "run both halves of an overlap pair on the compute stream,\none after the other (the "
           "baseline of the overlap)"},
          {"ep", K::Choice, "1|2|4", "1", 0, 0,
           "expert parallelism: as many pipeline replicas, each with its\nown micro-batches; the "
           "MoE experts are sharded over them and\ndispatch and combine are NCCL all-to-alls "
           "(nccl, --model\nmoe; world rank g runs rank g % P of replica g / P)"},
      }),
      "a micro-batch is one sequence; --trace times ops with CUDA events (eager steps), and\n"
      "with NCCL each rank writes FILE.rank<r>\n"
      "\n"
      "nccl: which process this is comes from, first that applies: the flags above;\n"
      "torchrun's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; Slurm's\n"
      "SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (rank 0's host: the first of\n"
      "SLURM_STEP_NODELIST or SLURM_JOB_NODELIST unless MASTER_ADDR is set); Open MPI's\n"
      "OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK (with MASTER_ADDR or --master-addr).\n"
      "PIPERT_NCCL_ID_FILE (a path all ranks share) replaces the address and port.\n"
      "Every wait (rank 0's id, NCCL set-up, a step) gives up after --timeout seconds.\n"
      "\n"
      "exit status: 0 ok; 1 check failed (gradients or loss differ from the reference,\n"
      "or a graph replay from the eager step); 2 bad usage, environment or I/O; 3 a\n"
      "wait timed out (NCCL communicators aborted); 4 CUDA, cuBLAS or NCCL error;\n"
      "77 no CUDA device\n");
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
  if (model != "mlp" && model != "moe" && model != "empty")
    return parser().fail("--model " + model + ": CUDA programs run the built-in mlp, moe or empty "
                         "stages; stage providers run on the CPU runtime",
                         status);
  if (!v.text("model-path").empty())
    return parser().fail("--model-path is for a stage provider, which CUDA programs do not take",
                         status);
  o.model = model == "mlp" ? ModelKind::Mlp : model == "moe" ? ModelKind::Moe : ModelKind::Empty;
  o.dtype = v.text("dtype") == "fp32" ? DType::F32 : DType::BF16;
  o.launch.rank = v.given("rank") ? int(v.integer("rank")) : -1;
  o.launch.worldSize = v.given("world-size") ? int(v.integer("world-size")) : -1;
  o.launch.localRank = v.given("local-rank") ? int(v.integer("local-rank")) : -1;
  o.launch.masterAddr = v.text("master-addr");
  o.launch.masterPort = v.given("master-port") ? int(v.integer("master-port")) : -1;
  o.transportGiven = v.given("transport");
  bool nccl = o.transportGiven ? v.text("transport") == "nccl"
                               : launchedAsGroup(o.launch, processEnvironment());
  o.transport = nccl ? TransportKind::Nccl : TransportKind::InProcess;
  o.graphs = v.flag("cuda-graphs");
  o.serialPairs = v.flag("serial-pairs");
  o.ep = std::stoi(v.text("ep"));
  o.check = v.flag("check");
  o.tolerance = v.given("tolerance") ? v.number("tolerance") : -1;
  o.tracePath = v.text("trace");
  o.seed = uint64_t(v.integer("seed"));
  o.timeoutSeconds = v.number("timeout");
  if (static_cast<long long>(o.seq) * o.hidden > (1LL << 28))
    return parser().fail("--seq times --hidden is too large (an activation over 2^28 elements)", status);
  if (o.model == ModelKind::Empty && o.check)
    return parser().fail("--model empty does no work: there is nothing to --check", status);
  if (o.ep > 1 && o.model != ModelKind::Moe)
    return parser().fail("--ep " + std::to_string(o.ep) +
                             " shards the experts of MoE stages: it needs --model moe",
                         status);
  if (o.ep > 1 && !nccl)
    return parser().fail("--ep " + std::to_string(o.ep) +
                             " runs one process per rank of each replica: it needs the nccl "
                             "transport (a launcher with WORLD_SIZE = ranks x " +
                             std::to_string(o.ep) + ", or --transport nccl)",
                         status);
  return true;
}

} // namespace pipert::cuda
