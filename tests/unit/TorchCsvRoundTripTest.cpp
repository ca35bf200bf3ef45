// Property test for the PyTorch CSV interop: on random schedules of every
// placement shape (ScheduleGenerator.h), writing the elaborated schedule as
// PyTorch's CSV, reading it back and importing it gives a .pipe file that
// elaborates to the same ops: the same CSV always, and for unmutated
// schedules the same IR (chunks and in-flow micro-batch indices included),
// unless a rank holds one stage in two chunks, which the CSV cannot express.
// The import written compact (loops, shared `rank r` programs) and written
// one op a line elaborate to the same ops.
// Deterministic: fixed seed.
#include "ScheduleGenerator.h"
#include "TestSupport.h"

#include "interop/TorchCsvWriter.h"
#include "interop/PipeWriter.h"
#include "interop/TorchCsvReader.h"
#include "interop/TorchImport.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <map>

using namespace pipec;
using namespace pipec::test;

namespace {

std::string csvOf(const ScheduleIR &ir) {
  std::string text;
  llvm::raw_string_ostream out(text);
  writeTorchCsv(ir, out);
  return out.str();
}

// CSV text -> .pipe source, or "" with the diagnostics in `why`; `compact`
// as `pipec import` writes it (loops, shared rank programs), else one op a line.
std::string importCsv(const std::string &csv, std::string &why, bool compact) {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  unsigned id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(csv, "t.csv"),
                                           llvm::SMLoc());
  std::optional<ImportedSchedule> schedule;
  if (std::optional<TorchCsv> read = readTorchCsv(id, diags))
    schedule = inferSchedule(*read, ElabLimits(), diags);
  if (!schedule) {
    for (const Diagnostic &d : diags.diagnostics())
      why += d.message + "\n";
    return "";
  }
  std::string text;
  llvm::raw_string_ostream out(text);
  if (!writePipe(*schedule, "imported", "t.csv", diags, out, compact))
    return "";
  return out.str();
}

// Whether some rank holds one stage in two chunks (two flows, odd P): the CSV
// names stages, not chunks, so the import makes them one chunk.
bool stageTwiceOnARank(const ScheduleIR &ir) {
  std::map<std::pair<int32_t, int32_t>, int32_t> chunkOf; // (rank, stage) -> chunk
  for (const Flow &flow : ir.flows)
    for (size_t s = 0; s < flow.stageSlots.size(); ++s) {
      const Slot &slot = flow.stageSlots[s];
      auto [it, inserted] = chunkOf.try_emplace({slot.rank, static_cast<int32_t>(s)}, slot.chunk);
      if (!inserted && it->second != slot.chunk)
        return true;
    }
  return false;
}

} // namespace

TEST_CASE("random schedules survive CSV export and import", "[property]") {
  ScheduleGenerator gen(0xc5c0u);
  const int kCases = 1500;
  int compared = 0, irCompared = 0, importRefused = 0, shared = 0;
  for (int c = 0; c < kCases; ++c) {
    GenSchedule g = gen.valid();
    bool mutated = c % 3 != 0;
    if (mutated)
      gen.mutate(g);
    auto original = compile(g.source());
    if (!original->ir || original->diags.hasErrors())
      continue;
    std::string csv = csvOf(*original->ir);

    std::string why;
    std::string imported = importCsv(csv, why, /*compact=*/false);
    if (imported.empty()) {
      // Only a mutation that removed every op of a stage can make the
      // placement unknowable; an unmutated schedule always imports.
      ++importRefused;
      if (!mutated)
        FAIL_CHECK("an unmutated schedule does not import:\n" << g.source() << csv << why);
      continue;
    }
    auto again = compile(imported);
    INFO("case " << c << ": " << g.history << "\n" << g.source() << "CSV:\n" << csv
                 << "imported:\n" << imported << again->renderedDiagnostics());
    REQUIRE(again->ir);
    CHECK_FALSE(again->diags.hasErrors());
    CHECK(csvOf(*again->ir) == csv);
    ++compared;
    // Written compact (loops, one `rank r` program where ranks share a
    // shape), the same order elaborates to the same ops, op for op.
    std::string compact = importCsv(csv, why, /*compact=*/true);
    auto compactAgain = compile(compact);
    INFO("compact:\n" << compact << compactAgain->renderedDiagnostics());
    REQUIRE(compactAgain->ir);
    CHECK_FALSE(compactAgain->diags.hasErrors());
    CHECK(compactAgain->ir_text() == again->ir_text());
    shared += compact.find("rank r {") != std::string::npos;
    if (!mutated && !stageTwiceOnARank(*original->ir)) {
      CHECK(again->ir_text() == original->ir_text());
      ++irCompared;
    }
  }
  INFO(compared << " compared, " << irCompared << " with IR, " << importRefused << " refused, "
                << shared << " with a shared rank program");
  CHECK(compared > kCases / 2);
  CHECK(shared > compared / 16); // 175 of 1417 when written: mutations rarely share
  CHECK(irCompared > kCases / 4);
}

TEST_CASE("the CSV reader locates every malformed cell", "[interop]") {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  const std::string csv = "0F0,0F1x\r\n,(0F1;0W0)OVERLAP_F_B, 1F0 ,3UNSHARD\n\n0B0";
  unsigned id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(csv, "t.csv"),
                                           llvm::SMLoc());
  CHECK_FALSE(readTorchCsv(id, diags));
  std::vector<std::pair<unsigned, unsigned>> where;
  for (const Diagnostic &d : diags.diagnostics()) {
    CHECK(d.kind == DiagKind::MalformedCsvCell);
    where.push_back(sources.getLineAndColumn(d.range.Start, id));
  }
  // A communication action is reported at its cell, once for the file.
  CHECK(where == std::vector<std::pair<unsigned, unsigned>>{{1, 8}, {2, 2}, {2, 29}});
}

TEST_CASE("empty cells, blanks and CRLF are PyTorch's own output", "[interop]") {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  const std::string csv = ",0F0, (0F1 ;0B0)OVERLAP_F_B ,,\r\n\r\n1F0";
  unsigned id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(csv, "t.csv"),
                                           llvm::SMLoc());
  std::optional<TorchCsv> read = readTorchCsv(id, diags);
  REQUIRE(read);
  REQUIRE(read->rows.size() == 3);
  REQUIRE(read->rows[0].size() == 2);
  CHECK(read->rows[0][1].first.kind == ast::OpKind::F);
  CHECK(read->rows[0][1].first.microbatch == 1);
  REQUIRE(read->rows[0][1].second);
  CHECK(read->rows[0][1].second->kind == ast::OpKind::B);
  CHECK(read->rows[1].empty());
  CHECK(read->rows[2].size() == 1);
}
