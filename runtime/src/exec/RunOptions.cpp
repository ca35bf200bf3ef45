#include "exec/RunOptions.h"

#include "exec/Watchdog.h"

#include "pipert/ExitStatus.h"
#include "pipert/SharedOptions.h"

namespace pipert {

// The watchdog and a failing rank end the program themselves, with the
// statuses the help lists.
static_assert(kWatchdogExit == kExitTimeout && kRankErrorExit == kExitDeviceError);

// The CPU program's own options; the rest are shared with the CUDA program.
static const OptionParser &parser() {
  using K = OptionKind;
  static const OptionParser table(withOwnOptions({
      {"micro-batch-size", K::Integer, "N", "1", 1, 1 << 16, "sequences per micro-batch"},
      {"dtype", K::Choice, "fp32|fp64", "fp32", 0, 0, "precision"},
      {"ep", K::Choice, "1|2|4", "1", 0, 0,
       "expert parallelism: as many pipeline replicas (threads), each\nwith its own data; MoE experts sharded over them"},
      {"drop-message", K::Integer, "ID", nullptr, 0, double(1LL << 40),
       "testing only: never send message ID"},
  }),
      "exit status: 0 ok; 1 check failed (loss, gradients or peak activations differ from\n"
      "the reference or the prediction); 2 bad usage, invalid program table or I/O error;\n"
      "3 the watchdog fired (no progress for --timeout); 4 a rank failed (a runtime error,\n"
      "e.g. a message delivered out of order)\n");
  return table;
}

bool parseRunOptions(int argc, char **argv, RunOptions &o, int &status) {
  OptionValues v;
  if (!parser().parse(argc, argv, v, status))
    return false;
  o.steps = int(v.integer("steps"));
  o.hidden = int(v.integer("hidden"));
  o.seq = int(v.integer("seq"));
  o.microBatchSize = int(v.integer("micro-batch-size"));
  o.moe = v.text("model") == "moe";
  o.empty = v.text("model") == "empty";
  o.ep = std::stoi(v.text("ep"));
  o.fp64 = v.text("dtype") == "fp64";
  o.check = v.flag("check");
  o.tracePath = v.text("trace");
  o.seed = uint64_t(v.integer("seed"));
  o.timeoutSeconds = v.number("timeout");
  o.dropMessage = v.given("drop-message") ? v.integer("drop-message") : -1;
  o.tolerance = v.given("tolerance") ? v.number("tolerance") : -1;
  if (static_cast<long long>(o.seq) * o.microBatchSize > (1 << 24))
    return parser().fail("--seq times --micro-batch-size is too large (over 2^24 tokens)", status);
  if (o.empty && o.check)
    return parser().fail("--model empty does no work: there is nothing to --check", status);
  return true;
}

} // namespace pipert
