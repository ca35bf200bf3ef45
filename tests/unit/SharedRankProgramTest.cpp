// The one .pipe writer's shared rank programs (interop/RankPrograms.h): where
// ranks share a shape it writes one `rank r { }` program with bounds and
// micro-batches affine in r, and the file elaborates to exactly the ops it
// was given. Checked against the writer's literal form (one op a line, one
// block a rank), through the real front end: 1F1B at every small size, and
// random synth orders on every placement family (torch-csv imports are
// compared the same way in TorchCsvRoundTripTest). Deterministic: fixed seeds.
#include "TestSupport.h"

#include "interop/PipeWriter.h"
#include "interop/RankPrograms.h"
#include "synth/ListScheduler.h"
#include "synth/PlacementFamilies.h"
#include "synth/SynthWriter.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <random>

using namespace pipec;
using namespace pipec::test;

namespace {

// 1F1B's rank r: P - r - 1 forwards, then F and B in turn, then the rest of the B's.
std::vector<PipeStep> oneFOneB(int P, int M, int r) {
  std::vector<PipeStep> steps;
  auto op = [&](char kind, int64_t mb) {
    PipeStep step;
    step.ops[0] = {kind, 0, mb};
    steps.push_back(step);
  };
  int warmup = std::min(P - r - 1, M), f = 0, b = 0;
  for (; f < warmup; ++f)
    op('F', f);
  for (; f < M; ++f, ++b) {
    op('F', f);
    op('B', b);
  }
  for (; b < M; ++b)
    op('B', b);
  return steps;
}

std::string written(const std::vector<std::vector<PipeStep>> &programs, int M, bool loops) {
  ExplicitSchedule s;
  s.name = "t";
  s.tool = "a test";
  s.ranks = int64_t(programs.size());
  s.stages = s.ranks;
  s.microbatches = M;
  s.placement = "  place stage s -> rank s chunk 0;\n";
  s.programs = programs;
  s.loops = loops;
  std::string text;
  llvm::raw_string_ostream out(text);
  writeExplicitSchedule(s, out);
  return out.str();
}

// Both texts elaborate without a diagnostic, to the same ops.
void requireSameOps(const std::string &compact, const std::string &literal) {
  auto a = compile(compact), b = compile(literal);
  INFO("compact:\n" << compact << a->renderedDiagnostics() << "literal:\n" << literal
                    << b->renderedDiagnostics());
  REQUIRE(a->ir);
  REQUIRE(b->ir);
  REQUIRE(a->diags.diagnostics().empty());
  REQUIRE(b->diags.diagnostics().empty());
  REQUIRE(a->ir_text() == b->ir_text());
}

} // namespace

TEST_CASE("1F1B's ranks share one program at every size", "[interop]") {
  for (int P = 3; P <= 9; ++P)
    for (int M = P; M <= 3 * P; M += P - 1) {
      std::vector<std::vector<PipeStep>> programs;
      for (int r = 0; r < P; ++r)
        programs.push_back(oneFOneB(P, M, r));
      CAPTURE(P, M);
      std::vector<SharedProgram> groups = shareRankPrograms(programs);
      REQUIRE(groups.size() == 1);
      CHECK(groups[0].firstRank == 0);
      CHECK(groups[0].endRank == P);
      for (int r = 0; r < P; ++r)
        CHECK(expandSharedProgram(groups[0], r).size() == programs[r].size());
      std::string compact = written(programs, M, true);
      CHECK(compact.find("rank r {") != std::string::npos);
      CHECK(compact.find("rank 0 {") == std::string::npos);
      requireSameOps(compact, written(programs, M, false));
    }
}

TEST_CASE("the shared program reads as the schedule", "[interop]") {
  std::vector<std::vector<PipeStep>> programs;
  for (int r = 0; r < 4; ++r)
    programs.push_back(oneFOneB(4, 8, r));
  // Warm-up, steady state, cool-down, each bounded by the rank.
  CHECK(written(programs, 8, true).find("  rank r {\n"
                                        "    for i in 0..P - r { F(0, mb = i); }\n"
                                        "    for i in 0..P + r {\n"
                                        "      B(0, mb = i);\n"
                                        "      F(0, mb = i + P - r);\n"
                                        "    }\n"
                                        "    for i in 0..P - r { B(0, mb = i + P + r); }\n"
                                        "  }\n") != std::string::npos);
}

TEST_CASE("ranks that share no shape keep their own programs; groups share by branch",
          "[interop]") {
  // Ranks 0-3 run 1F1B at P=4; rank 4 runs GPipe; ranks 5-7 1F1B again (as
  // ranks 1-3): two groups, a branch each, and rank 4 on its own.
  std::vector<std::vector<PipeStep>> programs;
  for (int r = 0; r < 4; ++r)
    programs.push_back(oneFOneB(4, 8, r));
  programs.push_back(oneFOneB(9, 8, 0)); // every F, then every B
  for (int r = 1; r < 4; ++r)
    programs.push_back(oneFOneB(4, 8, r));
  std::vector<SharedProgram> groups = shareRankPrograms(programs);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].firstRank == 0);
  CHECK(groups[0].endRank == 4);
  CHECK(groups[1].firstRank == 5);
  CHECK(groups[1].endRank == 8);
  std::string compact = written(programs, 8, true);
  CHECK(compact.find("    if r < 4 {\n") != std::string::npos);
  CHECK(compact.find("  rank 4 {\n") != std::string::npos);
  // 8 ranks but 8 stages: a placement the elaborator accepts at P=8.
  requireSameOps(compact, written(programs, 8, false));
}

TEST_CASE("random synth orders written compact elaborate to the same ops", "[property][synth]") {
  using namespace pipec::synth;
  std::mt19937_64 rng(20261202);
  const PlacementFamily families[] = {PlacementFamily::One, PlacementFamily::V,
                                      PlacementFamily::Interleaved,
                                      PlacementFamily::Bidirectional};
  int compared = 0, shared = 0;
  for (int trial = 0; trial < 200; ++trial) {
    PlacementFamily family = families[rng() % 4];
    bool bidirectional = family == PlacementFamily::Bidirectional;
    int P = 2 + int(rng() % 6), M = P + int(rng() % (2 * P));
    if (bidirectional)
      P += P % 2, M += M % 2;
    int chunks = family == PlacementFamily::One || bidirectional ? 1 : 2;
    SynthProblem p;
    std::string error;
    p.layout = makeStagePlacement(family, P, chunks, M, error);
    REQUIRE(error.empty());
    p.microbatches = M;
    p.split = rng() % 2;
    const int S = p.layout.stages;
    p.budget = p.layout.chunks * M;
    p.costs.F.assign(S, 1);
    p.costs.I.assign(S, 2);
    p.costs.W.assign(S, 1);
    p.costs.transfer.assign(S, 0);
    std::optional<RankOrders> orders;
    if (rng() % 2) { // the library's shape: each rank's warm-up, then in turn
      PhasedVariant phased;
      for (int r = 0; r < P; ++r) {
        phased.warmup.push_back(p.layout.chunks * (P - r - 1) + int(rng() % 2));
        phased.defer.push_back(int(rng() % 3));
      }
      orders = phasedSchedule(p, phased);
    } else {
      ListVariant list;
      list.noise = rng() % 3 == 0 ? rng() | 1 : 0;
      list.slack = int(rng() % 3) - 1;
      orders = listSchedule(p, list);
    }
    if (!orders)
      continue;
    CAPTURE(trial, int(family), P, M, p.split);
    std::string compact = writeSynthPipe(p, *orders, "t", {}, /*loops=*/true);
    requireSameOps(compact, writeSynthPipe(p, *orders, "t", {}, /*loops=*/false));
    ++compared;
    shared += compact.find("rank r {") != std::string::npos;
  }
  INFO(compared << " compared, " << shared << " with a shared program");
  CHECK(compared > 150);
  CHECK(shared > compared / 8); // 38 of 181 when written
}
