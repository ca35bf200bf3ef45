// Property test for `pipec import`: on random PyTorch CSVs -- well-formed
// schedules with random (often irregular) placements, and random cells that
// make no sense -- every import that succeeds writes a file that pipec's
// front end accepts, whose placement is the imported one. Schedules built to
// be valid also pass every check. Deterministic: fixed seed.
#include "TestSupport.h"

#include "check/Checks.h"
#include "interop/PipeWriter.h"
#include "interop/PlacementExpr.h"
#include "interop/TorchCsvReader.h"
#include "interop/TorchImport.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <random>

using namespace pipec;
using namespace pipec::test;

namespace {

struct Imported {
  std::optional<ImportedSchedule> schedule;
  std::string text; // the .pipe file, empty when import refused
  std::vector<DiagKind> refusals;
};

Imported importCsv(const std::string &csv, const ElabLimits &limits = {}) {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  unsigned id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(csv, "t.csv"),
                                           llvm::SMLoc());
  Imported result;
  if (std::optional<TorchCsv> read = readTorchCsv(id, diags, limits.maxOps))
    result.schedule = inferSchedule(*read, limits, diags);
  llvm::raw_string_ostream out(result.text);
  if (result.schedule && !writePipe(*result.schedule, "imported", "t\n.csv", diags, out,
                                       /*compact=*/true))
    result.text.clear();
  out.flush();
  for (const Diagnostic &d : diags.diagnostics())
    result.refusals.push_back(d.kind);
  return result;
}

class CsvGenerator {
public:
  explicit CsvGenerator(uint32_t seed) : rng_(seed) {}

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // A GPipe order over a random placement with `runs` runs of stages: valid
  // whatever the placement (every rank runs its forwards in stage order, then
  // its backwards in reverse).
  std::string validSchedule(int ranks, int runs, int microbatches) {
    std::vector<int> rankOf;
    for (int run = 0, previous = -1; run < runs; ++run) {
      int rank = pick(0, ranks - 1);
      if (rank == previous && ranks > 1)
        rank = (rank + 1) % ranks;
      rankOf.insert(rankOf.end(), pick(1, 3), rank);
      previous = rank;
    }
    std::vector<std::string> rows(ranks);
    auto add = [&](int rank, std::string cell) {
      rows[rank] += (rows[rank].empty() ? "" : ",") + cell;
    };
    int stages = static_cast<int>(rankOf.size());
    for (int m = 0; m < microbatches; ++m)
      for (int s = 0; s < stages; ++s)
        add(rankOf[s], std::to_string(s) + "F" + std::to_string(m));
    for (int m = 0; m < microbatches; ++m)
      for (int s = stages - 1; s >= 0; --s)
        add(rankOf[s], std::to_string(s) + "B" + std::to_string(m));
    std::string csv;
    for (const std::string &row : rows) // an idle rank as empty cells, never a blank line
      csv += (row.empty() ? "," : row) + "\n";
    return csv;
  }

  // Random cells over small ids, with idle slots, pairs and blanks.
  std::string randomCells() {
    int ranks = pick(1, 6), stages = pick(1, 8), microbatches = pick(1, 5);
    std::string csv;
    for (int r = 0; r < ranks; ++r) {
      for (int c = pick(0, 12); c > 0; --c) {
        int shape = pick(0, 9);
        if (shape == 0)
          csv += "";
        else if (shape == 1)
          csv += "(" + action(stages, microbatches, "F") + ";" +
                 action(stages, microbatches, pick(0, 1) ? "B" : "I") + ")OVERLAP_F_B";
        else
          csv += std::string(pick(0, 4) == 0 ? " " : "") + action(stages, microbatches, "");
        csv += c > 1 ? "," : "";
      }
      csv += pick(0, 3) == 0 ? "\r\n" : "\n";
    }
    return csv;
  }

private:
  std::string action(int stages, int microbatches, std::string kind) {
    static const char *const kKinds[] = {"F", "B", "I", "W"};
    if (kind.empty())
      kind = kKinds[pick(0, 3)];
    return std::to_string(pick(0, stages - 1)) + kind + std::to_string(pick(0, microbatches - 1));
  }

  std::mt19937 rng_;
};

// The stage -> slot map of every flow, as imported and as elaborated.
void requireSamePlacement(const ImportedSchedule &imported, const ScheduleIR &ir) {
  REQUIRE(ir.flows.size() == imported.flows.size());
  for (size_t f = 0; f < ir.flows.size(); ++f)
    for (size_t s = 0; s < ir.flows[f].stageSlots.size(); ++s) {
      CHECK(ir.flows[f].stageSlots[s].rank == imported.flows[f].stageSlots[s].rank);
      CHECK(ir.flows[f].stageSlots[s].chunk == imported.flows[f].stageSlots[s].chunk);
    }
}

} // namespace

TEST_CASE("every import that succeeds passes the front end", "[property][interop]") {
  CsvGenerator gen(0x1a9u);
  int imported = 0, refused = 0, packed = 0;
  for (int c = 0; c < 600; ++c) {
    bool valid = c % 2 == 0;
    // Now and then a placement with hundreds of runs, beyond a plain lookup.
    int runs = c % 10 == 0 ? gen.pick(150, 700) : gen.pick(1, 40);
    std::string csv = valid ? gen.validSchedule(gen.pick(1, 12), runs, gen.pick(1, 3))
                            : gen.randomCells();
    Imported result = importCsv(csv);
    if (result.text.empty()) {
      ++refused;
      // A valid schedule imports unless its placement is beyond any statement.
      if (valid)
        CHECK(result.refusals == std::vector<DiagKind>{DiagKind::CsvPlacementTooIrregular});
      continue;
    }
    ++imported;
    packed += result.text.find("let rank_of_0") != std::string::npos;
    auto again = compile(result.text);
    INFO("case " << c << "\nCSV:\n" << csv << "imported:\n" << result.text
                 << again->renderedDiagnostics());
    REQUIRE(again->ir);
    REQUIRE_FALSE(again->diags.hasErrors());
    requireSamePlacement(*result.schedule, *again->ir);
    if (valid)
      CHECK(runChecks(*again->ir, CheckOptions(), again->diags).ok);
  }
  INFO(imported << " imported, " << refused << " refused, " << packed << " packed");
  CHECK(imported > 250);
  CHECK(packed > 10);
}

TEST_CASE("an import refuses what the front end would, at the CSV", "[interop]") {
  SECTION("too many actions for the op limit") {
    ElabLimits limits;
    limits.maxOps = 3;
    CHECK(importCsv("0F0,0F1,0B0,0B1\n", limits).text.empty());
    limits.maxOps = 4;
    CHECK_FALSE(importCsv("0F0,0F1,0B0,0B1\n", limits).text.empty());
  }
  SECTION("ids whose schedule is beyond the op limit") {
    CHECK(importCsv("0F0,16777215F0\n").text.empty());
    CHECK(importCsv("0F0,0F1073741823\n").text.empty());
  }
  SECTION("a placement no statement can hold") {
    CsvGenerator gen(7);
    std::string csv = gen.validSchedule(200, 3000, 1);
    CHECK(importCsv(csv).refusals == std::vector<DiagKind>{DiagKind::CsvPlacementTooIrregular});
  }
  SECTION("conflicts are reported up to a bound, then counted") {
    std::string rank0, rank1;
    for (int m = 0; m < 300; ++m) {
      rank0 += "0F" + std::to_string(m) + ",";
      rank1 += "0B" + std::to_string(m) + ",";
    }
    std::vector<DiagKind> refusals = importCsv(rank0 + "\n" + rank1 + "\n").refusals;
    CHECK(refusals.size() == 21); // the engine's default error limit, then TooManyErrors
    CHECK(refusals.back() == DiagKind::TooManyErrors);
  }
  SECTION("a W without an I before it") {
    CHECK(importCsv("0F0,0W0,0I0\n").refusals == std::vector<DiagKind>{DiagKind::UnmatchedW});
    CHECK(importCsv("0F0,0I0,0W0\n").refusals.empty());
  }
}

TEST_CASE("packed placement tables give back every value", "[interop]") {
  std::mt19937 rng(3);
  for (int bits : {1, 3, 10, 20, 24}) {
    std::vector<int64_t> values(300);
    for (int64_t &v : values)
      v = std::uniform_int_distribution<int64_t>(0, (int64_t(1) << bits) - 1)(rng);
    StageExpr expr = packedTables(values, "t");
    std::string source = "schedule p() {\n  ranks 1; stages " + std::to_string(values.size()) +
                         "; microbatches 1;\n";
    for (const auto &[name, value] : expr.lets)
      source += "  let " + name + " = " + std::to_string(value) + ";\n";
    // A require per sampled stage, with `s` replaced by the stage, checks the
    // value the expression gives there.
    std::string e;
    for (const std::string &t : expr.tokens)
      e += t + " ";
    for (size_t s = 0; s < values.size(); s += 37) {
      std::string at = "(" + e + ")";
      for (size_t i = at.find(" s "); i != std::string::npos; i = at.find(" s ", i))
        at.replace(i, 3, " " + std::to_string(s) + " ");
      source += "  require " + at + " == " + std::to_string(values[s]) + ";\n";
    }
    source += "  place stage s -> rank 0 chunk s;\n  rank 0 { }\n}\n";
    auto compiled = compile(source);
    INFO("bits " << bits << "\n" << compiled->renderedDiagnostics());
    CHECK_FALSE(compiled->has(DiagKind::RequireFailed));
    CHECK(compiled->ir);
  }
}

TEST_CASE("a file name cannot break the comment it is copied into", "[interop]") {
  CHECK(escapeForComment("a\nb") == "a\\nb");
  CHECK(escapeForComment("caf\xe9.csv") == "caf\\xe9.csv");
  CHECK(escapeForComment("c:\\x\r") == "c:\\\\x\\x0d");
  CHECK(escapeForComment("plain name.csv") == "plain name.csv");
}
