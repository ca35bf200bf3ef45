// The CPU executor on schedules it was not written for: random ones from the
// test generator (ScheduleGenerator.h, valid and mutated; whatever passes the
// checks) and the library's, each lowered to stream programs as `pipec build`
// lowers them and run against the single-device reference in fp64 (loss,
// gradients and parameters within 1e-10, the measured peak activations equal to
// the prediction). Cooperative workers and one thread per stream alike, and
// two expert-parallel replicas; the
// ThreadSanitizer build of this test (PIPEC_EXECUTOR_TSAN) runs every stream on
// its own thread. Deterministic cases (fixed seeds); a failure prints the source.
#include "ExecutorPrograms.h"
#include "ScheduleGenerator.h"
#include "TestSupport.h"

#include <catch2/catch.hpp>

using namespace pipec;
using namespace pipec::test;

namespace {

#ifdef PIPEC_EXECUTOR_TSAN
constexpr bool kAlwaysStreamThreads = true;
constexpr int kRandomCases = 60;
#else
constexpr bool kAlwaysStreamThreads = false;
constexpr int kRandomCases = 300;
#endif

std::vector<std::string> checkArgs(int variant) {
  std::vector<std::string> args{"--check", "--dtype", "fp64", "--hidden", "4", "--seq", "2",
                                "--timeout", "60", "--model", variant % 2 ? "moe" : "mlp"};
  if (kAlwaysStreamThreads || variant % 3 == 0)
    args.push_back("--stream-threads");
  if (variant % 5 == 0)
    args.insert(args.end(), {"--steps", "2", "--optimizer", "adamw"});
  return args;
}

} // namespace

TEST_CASE("random schedules run exactly as the reference on the CPU executor", "[executor]") {
  ScheduleGenerator gen(0xe7ec0001u);
  int ran = 0;
  for (int c = 0; c < kRandomCases; ++c) {
    GenSchedule g = gen.valid();
    if (c % 3 == 0) // a mutated schedule runs when the checks still accept it
      gen.mutate(g);
    const std::string source = g.source();
    pipert::ProgramData data;
    if (!lowerProgram(source, {}, data).empty())
      continue; // refused by the checks (e.g. a deadlock): nothing to run
    INFO("case " << c << " (" << g.history << "):\n" << source);
    CHECK(runLowered(data, checkArgs(c)) == 0);
    ++ran;
  }
  CHECK(ran >= kRandomCases / 2);
}

TEST_CASE("library schedules run exactly as the reference on the CPU executor", "[executor]") {
  struct Case {
    const char *name;
    int64_t P, M;
  };
  const Case cases[] = {{"gpipe", 4, 6},   {"1f1b", 4, 6},     {"interleaved_1f1b", 4, 8},
                        {"zb_h1", 4, 6},   {"zbv", 4, 9},      {"chimera", 4, 8},
                        {"dualpipe", 4, 10}, {"dualpipev", 4, 9},
                        // Offload/Reload on the copy stream (K = 2: ranks 0 and 1 offload)
                        {"1f1b_offload", 4, 7},
                        // BPipe's Evict/Hold/Return/Load: evictors 0 and 1
                        // (P = 5: T = 3) send to acceptors 4 and 3 and back
                        {"bpipe", 5, 11}, {"bpipe", 4, 8}};
  int variant = 0;
  for (const Case &c : cases) {
    pipert::ProgramData data;
    REQUIRE(lowerProgram(readExample(c.name), {{"P", c.P}, {"M", c.M}}, data) == "");
    for (int k = 0; k < 2; ++k, ++variant) {
      INFO(c.name << " P=" << c.P << " M=" << c.M << " variant " << variant);
      CHECK(runLowered(data, checkArgs(variant)) == 0);
    }
    // Expert parallelism: two replicas whose MoE all-to-alls block inside the
    // stage, each stream on its own thread.
    std::vector<std::string> ep = checkArgs(1);
    ep.insert(ep.end(), {"--ep", "2"});
    INFO(c.name << " P=" << c.P << " M=" << c.M << " --ep 2");
    CHECK(runLowered(data, ep) == 0);
  }
}

TEST_CASE("bpipe runs exactly as the reference across its domain", "[executor]") {
  // BPipe's transfers at every P the library allows up to 12 and M at both
  // ends of its domain and between: the evictor/acceptor pairs, how many
  // micro-batches travel, and where the Holds and Returns sit all change with
  // P and M; --check compares with the reference and the measured peaks with
  // the prediction (held activations counted on the acceptor).
  int variant = 0, ran = 0;
  for (int64_t P = 1; P <= 12; ++P)
    for (int64_t M : {P, P + 1, 2 * P + 1, 3 * P + 1}) {
      pipert::ProgramData data;
      REQUIRE(lowerProgram(readExample("bpipe"), {{"P", P}, {"M", M}}, data) == "");
      INFO("bpipe P=" << P << " M=" << M << " variant " << variant);
      CHECK(runLowered(data, checkArgs(variant++)) == 0);
      ++ran;
    }
  CHECK(ran == 48);
}
