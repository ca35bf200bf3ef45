#include "CudaOptions.h"

#include <cstdio>
#include <cstdlib>

namespace pipert::cuda {

static const char *kUsage =
    "options:\n"
    "  --steps N                 training steps (default 1)\n"
    "  --hidden H                hidden size (default 64)\n"
    "  --seq S                   tokens per micro-batch (default 64)\n"
    "  --model mlp|moe|empty     stage type (default mlp); empty: one tiny kernel per op,\n"
    "                            to time the runtime itself\n"
    "  --dtype fp32|bf16         activation precision (default fp32; bf16 GEMMs accumulate\n"
    "                            in fp32, gradients are fp32)\n"
    "  --transport inproc|nccl   inproc: every rank on this process's GPU; nccl: one process\n"
    "                            per rank from RANK/WORLD_SIZE/LOCAL_RANK with MASTER_ADDR/\n"
    "                            MASTER_PORT or PIPERT_NCCL_ID_FILE (default: nccl when\n"
    "                            WORLD_SIZE is set)\n"
    "  --cuda-graphs             capture the step into a CUDA graph and replay it; checks\n"
    "                            that the replay matches an eager step bit for bit\n"
    "  --serial-pairs            run both halves of an overlap pair on the compute stream,\n"
    "                            one after the other (the baseline of the overlap)\n"
    "  --check                   compare loss and every gradient with the fp64 CPU reference\n"
    "  --tolerance X             relative error allowed (default 1e-4 fp32, 5e-2 bf16)\n"
    "  --trace FILE              Chrome trace of every op, from CUDA events (eager steps);\n"
    "                            with NCCL each rank writes FILE.rank<r>\n"
    "  --seed N                  initialization and data seed (default 1)\n"
    "  --timeout SECONDS         give up (ncclCommAbort with NCCL) when a step takes longer\n"
    "                            (default 60)\n"
    "exit status: 0 ok, 1 check failed, 2 usage or setup error, 3 timeout, 77 no CUDA device\n";

bool parseCudaOptions(int argc, char **argv, CudaOptions &o, int &status) {
  auto fail = [&](const std::string &message) {
    std::fprintf(stderr, "error: %s\n%s", message.c_str(), kUsage);
    status = 2;
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fprintf(stdout, "%s", kUsage);
      status = 0;
      return false;
    }
    if (arg == "--check" || arg == "--cuda-graphs" || arg == "--serial-pairs") {
      (arg == "--check" ? o.check : arg == "--cuda-graphs" ? o.graphs : o.serialPairs) = true;
      continue;
    }
    if (i + 1 >= argc)
      return fail("'" + arg + "' needs a value, or is not an option");
    std::string value = argv[++i];
    char *end = nullptr;
    long long n = 0;
    auto integer = [&](long long lo, long long hi) {
      n = std::strtoll(value.c_str(), &end, 10);
      return *end == '\0' && !value.empty() && n >= lo && n <= hi;
    };
    if (arg == "--steps") {
      if (!integer(1, 1000000)) return fail("--steps expects 1 to 1000000");
      o.steps = int(n);
    } else if (arg == "--hidden") {
      if (!integer(1, 65536)) return fail("--hidden expects 1 to 65536");
      o.hidden = int(n);
    } else if (arg == "--seq") {
      if (!integer(1, 1 << 20)) return fail("--seq expects 1 to 1048576");
      o.seq = int(n);
    } else if (arg == "--seed") {
      if (!integer(0, 1LL << 62)) return fail("--seed expects a non-negative integer");
      o.seed = uint64_t(n);
    } else if (arg == "--model") {
      if (value != "mlp" && value != "moe" && value != "empty")
        return fail("--model expects mlp, moe or empty");
      o.model = value == "mlp" ? ModelKind::Mlp : value == "moe" ? ModelKind::Moe : ModelKind::Empty;
    } else if (arg == "--dtype") {
      if (value != "fp32" && value != "bf16") return fail("--dtype expects fp32 or bf16");
      o.dtype = value == "fp32" ? DType::F32 : DType::BF16;
    } else if (arg == "--transport") {
      if (value != "inproc" && value != "nccl") return fail("--transport expects inproc or nccl");
      o.transport = value == "inproc" ? TransportKind::InProcess : TransportKind::Nccl;
      o.transportGiven = true;
    } else if (arg == "--trace") {
      o.tracePath = value;
    } else if (arg == "--timeout" || arg == "--tolerance") {
      double x = std::strtod(value.c_str(), &end);
      if (*end != '\0' || value.empty() || !(x > 0)) return fail(arg + " expects a positive number");
      (arg == "--timeout" ? o.timeoutSeconds : o.tolerance) = x;
    } else {
      return fail("unknown option '" + arg + "'");
    }
  }
  if (static_cast<long long>(o.seq) * o.hidden > (1LL << 28))
    return fail("--seq times --hidden is too large (an activation over 2^28 elements)");
  if (o.model == ModelKind::Empty && o.check)
    return fail("--model empty does no work: there is nothing to --check");
  if (!o.transportGiven && std::getenv("WORLD_SIZE"))
    o.transport = TransportKind::Nccl;
  return true;
}

} // namespace pipert::cuda
