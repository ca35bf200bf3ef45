#include "exec/RunOptions.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace pipert {

static const char *kUsage =
    "options:\n"
    "  --steps N               training steps to run (default 1)\n"
    "  --hidden H              hidden size (default 16)\n"
    "  --seq S                 tokens per sequence (default 8)\n"
    "  --micro-batch-size N    sequences per micro-batch (default 1)\n"
    "  --model mlp|moe|empty   stage type (default mlp); empty: no work, to time the runtime\n"
    "  --dtype fp32|fp64       precision (default fp32)\n"
    "  --ep N                  expert parallelism: N pipeline replicas (threads) with their\n"
    "                          own data; MoE experts sharded over them (1, 2 or 4)\n"
    "  --check                 compare loss and every gradient with a single-device run\n"
    "  --tolerance X           relative error allowed by --check (default 1e-4 fp32, 1e-10 fp64)\n"
    "  --trace FILE            write a Chrome trace of every op\n"
    "  --seed N                initialization and data seed (default 1)\n"
    "  --timeout SECONDS       watchdog: abort when a rank waits this long (default 30)\n"
    "  --drop-message ID       testing only: never send message ID\n";

bool parseRunOptions(int argc, char **argv, RunOptions &o, int &status) {
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
    if (arg == "--check") {
      o.check = true;
      continue;
    }
    if (i + 1 >= argc)
      return fail("'" + arg + "' needs a value, or is not an option");
    std::string value = argv[++i];
    char *end = nullptr;
    auto integer = [&](long long lo, long long hi, long long &out) {
      out = std::strtoll(value.c_str(), &end, 10);
      return *end == '\0' && !value.empty() && out >= lo && out <= hi;
    };
    long long n = 0;
    if (arg == "--steps") {
      if (!integer(1, 1000000, n)) return fail("--steps expects 1 to 1000000");
      o.steps = int(n);
    } else if (arg == "--hidden") {
      if (!integer(1, 65536, n)) return fail("--hidden expects 1 to 65536");
      o.hidden = int(n);
    } else if (arg == "--seq") {
      if (!integer(1, 1 << 20, n)) return fail("--seq expects 1 to 1048576");
      o.seq = int(n);
    } else if (arg == "--micro-batch-size") {
      if (!integer(1, 1 << 16, n)) return fail("--micro-batch-size expects 1 to 65536");
      o.microBatchSize = int(n);
    } else if (arg == "--ep") {
      if (!integer(1, 4, n) || 4 % n != 0) return fail("--ep expects 1, 2 or 4 (it must divide the 4 experts)");
      o.ep = int(n);
    } else if (arg == "--seed") {
      if (!integer(0, (1LL << 62), n)) return fail("--seed expects a non-negative integer");
      o.seed = uint64_t(n);
    } else if (arg == "--drop-message") {
      if (!integer(0, (1LL << 40), n)) return fail("--drop-message expects a message id");
      o.dropMessage = n;
    } else if (arg == "--model") {
      if (value != "mlp" && value != "moe" && value != "empty")
        return fail("--model expects mlp, moe or empty");
      o.moe = value == "moe";
      o.empty = value == "empty";
    } else if (arg == "--dtype") {
      if (value != "fp32" && value != "fp64") return fail("--dtype expects fp32 or fp64");
      o.fp64 = value == "fp64";
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
  if (static_cast<long long>(o.seq) * o.microBatchSize > (1 << 24))
    return fail("--seq times --micro-batch-size is too large");
  if (o.empty && o.check)
    return fail("--model empty does no work: there is nothing to --check");
  return true;
}

} // namespace pipert
