// Machine-readable diagnostics: JSON, SARIF 2.1.0 and GitHub annotations, from real
// compilations and from diagnostics reported by hand (for exact escaping).
#include "TestSupport.h"

#include "diag/LintRenderers.h"
#include "PipecVersion.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

using namespace pipec;
using namespace pipec::test;
namespace json = llvm::json;

namespace {

// One error (UndefinedName, line 5 column 17, with a fix-it) and one warning
// (UnusedParameter, line 1 column 26).
const char *kTwoProblems = "schedule t(P = 2, M = 4, V = 2) {\n"
                           "  ranks P; stages P; microbatches M;\n"
                           "  place stage s -> rank s;\n"
                           "  rank r {\n"
                           "    for i in 0..Q { F; }\n"
                           "  }\n"
                           "}\n";

// UnknownOp at line 5 column 5, with a note that has no location.
const char *kUnknownOp = "schedule t(P = 2, M = 4) {\n"
                         "  ranks P; stages P; microbatches M;\n"
                         "  place stage s -> rank s;\n"
                         "  rank r {\n"
                         "    Fwd;\n"
                         "  }\n"
                         "}\n";

template <typename Render>
std::string render(Render fn, llvm::ArrayRef<FileDiagnostics> files) {
  std::string text;
  llvm::raw_string_ostream out(text);
  fn(files, out);
  return out.str();
}

json::Value parse(const std::string &text) {
  auto value = json::parse(text);
  if (!value)
    FAIL("not JSON: " << llvm::toString(value.takeError()) << "\n" << text);
  return std::move(*value);
}

const json::Object &object(const json::Value *value) {
  REQUIRE(value);
  REQUIRE(value->getAsObject());
  return *value->getAsObject();
}
const json::Array &array(const json::Value *value) {
  REQUIRE(value);
  REQUIRE(value->getAsArray());
  return *value->getAsArray();
}
const json::Object &field(const json::Object &o, llvm::StringRef key) { return object(o.get(key)); }
const json::Array &list(const json::Object &o, llvm::StringRef key) { return array(o.get(key)); }
std::string str(const json::Object &o, llvm::StringRef key) {
  auto s = o.getString(key);
  return s ? s->str() : "<missing " + key.str() + ">";
}
int64_t num(const json::Object &o, llvm::StringRef key) {
  auto n = o.getInteger(key);
  return n ? *n : -1;
}

// A hand-made file: one buffer, diagnostics reported directly.
struct HandMade {
  llvm::SourceMgr sources;
  DiagnosticEngine diags{sources};
  const char *text = nullptr;

  explicit HandMade(const char *source) {
    unsigned id = sources.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, "buffer.pipe"), llvm::SMLoc());
    text = sources.getMemoryBuffer(id)->getBufferStart();
  }
  // The range of the first occurrence of `word` in the buffer.
  llvm::SMRange at(llvm::StringRef word) const {
    size_t offset = std::string(text).find(word.str());
    REQUIRE(offset != std::string::npos);
    return {llvm::SMLoc::getFromPointer(text + offset),
            llvm::SMLoc::getFromPointer(text + offset + word.size())};
  }
};

} // namespace

TEST_CASE("JSON lists each diagnostic with its place, notes and repeats", "[lint]") {
  auto c = compile(kTwoProblems);
  REQUIRE(c->diags.errorCount() == 1);
  REQUIRE(c->diags.warningCount() == 1);
  FileDiagnostics file{"schedules/t.pipe", &c->diags};
  json::Value doc = parse(render(renderJson, file));
  const json::Object &root = object(&doc);
  CHECK(num(root, "version") == 1);

  const json::Array &files = list(root, "files");
  REQUIRE(files.size() == 1);
  const json::Object &f = object(&files[0]);
  CHECK(str(f, "path") == "schedules/t.pipe");
  const json::Array &diags = list(f, "diagnostics");
  REQUIRE(diags.size() == 2);

  const json::Object &error = object(&diags[0]);
  CHECK(str(error, "name") == "UndefinedName");
  CHECK(str(error, "severity") == "error");
  CHECK(str(error, "message") == "use of undeclared name 'Q'; did you mean 'P'?");
  CHECK(num(error, "line") == 5);
  CHECK(num(error, "column") == 17);
  CHECK(num(error, "end_line") == 5);
  CHECK(num(error, "end_column") == 18);
  CHECK(num(error, "repeats") == 0);
  CHECK(list(error, "notes").empty());
  const json::Array &fixits = list(error, "fixits");
  REQUIRE(fixits.size() == 1);
  CHECK(str(object(&fixits[0]), "replacement") == "P");
  CHECK(num(object(&fixits[0]), "column") == 17);
  CHECK_FALSE(error.get("path")); // locations in the file itself carry no path

  const json::Object &warning = object(&diags[1]);
  CHECK(str(warning, "name") == "UnusedParameter");
  CHECK(str(warning, "severity") == "warning");
  CHECK(num(warning, "line") == 1);
  CHECK(num(warning, "column") == 26);
  CHECK_FALSE(warning.get("fixits"));

  const json::Object &summary = field(root, "summary");
  CHECK(num(summary, "files") == 1);
  CHECK(num(summary, "errors") == 1);
  CHECK(num(summary, "warnings") == 1);
}

TEST_CASE("JSON omits the place of diagnostics and notes without one", "[lint]") {
  HandMade h("schedule t() {}\n");
  h.diags.report(DiagKind::UnknownParameter, "-D names 'Q', which the schedule does not declare")
      .note(h.at("t"), "the schedule is declared here")
      .note("declared parameters: none");
  json::Value doc = parse(render(renderJson, FileDiagnostics{"t.pipe", &h.diags}));
  const json::Object &d =
      object(&list(object(&list(object(&doc), "files")[0]), "diagnostics")[0]);
  CHECK(str(d, "name") == "UnknownParameter");
  for (const char *key : {"line", "column", "end_line", "end_column"})
    CHECK_FALSE(d.get(key));
  const json::Array &notes = list(d, "notes");
  REQUIRE(notes.size() == 2);
  CHECK(str(object(&notes[0]), "message") == "the schedule is declared here");
  CHECK(num(object(&notes[0]), "line") == 1);
  CHECK(num(object(&notes[0]), "column") == 10);
  CHECK(str(object(&notes[1]), "message") == "declared parameters: none");
  CHECK_FALSE(object(&notes[1]).get("line"));
}

TEST_CASE("JSON carries folded repeats", "[lint]") {
  auto c = compile(withBody("F(7);", 4, 4));
  REQUIRE(c->has(DiagKind::EmptyChunk));
  json::Value doc = parse(render(renderJson, FileDiagnostics{"t.pipe", &c->diags}));
  const json::Object &d =
      object(&list(object(&list(object(&doc), "files")[0]), "diagnostics")[0]);
  CHECK(str(d, "name") == "EmptyChunk");
  CHECK(num(d, "repeats") == 3);
}

TEST_CASE("several files make one JSON document with one summary", "[lint]") {
  auto a = compile(kTwoProblems);
  auto b = compile(kUnknownOp);
  auto clean = compile(withBody("F; B;", 1, 1));
  REQUIRE_FALSE(clean->diags.hasErrors());
  REQUIRE(clean->diags.warningCount() == 0);
  FileDiagnostics files[] = {{"a.pipe", &a->diags}, {"b.pipe", &b->diags},
                             {"clean.pipe", &clean->diags}};
  std::string text = render(renderJson, files);
  json::Value doc = parse(text);
  const json::Array &fs = list(object(&doc), "files");
  REQUIRE(fs.size() == 3);
  CHECK(str(object(&fs[0]), "path") == "a.pipe");
  CHECK(list(object(&fs[0]), "diagnostics").size() == 2);
  CHECK(str(object(&fs[1]), "path") == "b.pipe");
  REQUIRE(list(object(&fs[1]), "diagnostics").size() == 1);
  CHECK(str(object(&list(object(&fs[1]), "diagnostics")[0]), "name") == "UnknownOp");
  CHECK(str(object(&fs[2]), "path") == "clean.pipe");
  CHECK(list(object(&fs[2]), "diagnostics").empty());
  const json::Object &summary = field(object(&doc), "summary");
  CHECK(num(summary, "files") == 3);
  CHECK(num(summary, "errors") == 2);
  CHECK(num(summary, "warnings") == 1);
  // Deterministic: the same input renders the same bytes.
  CHECK(render(renderJson, files) == text);

  json::Value none = parse(render(renderJson, {}));
  CHECK(list(object(&none), "files").empty());
  CHECK(num(field(object(&none), "summary"), "errors") == 0);
}

TEST_CASE("SARIF has one rule per kind used and results that point at them", "[lint]") {
  auto a = compile(kTwoProblems);
  auto b = compile(kUnknownOp);
  FileDiagnostics files[] = {{"a.pipe", &a->diags}, {"b.pipe", &b->diags}};
  json::Value doc = parse(render(renderSarif, files));
  const json::Object &root = object(&doc);
  CHECK(str(root, "version") == "2.1.0");
  CHECK(str(root, "$schema") == "https://json.schemastore.org/sarif-2.1.0.json");
  const json::Array &runs = list(root, "runs");
  REQUIRE(runs.size() == 1);
  const json::Object &run = object(&runs[0]);
  const json::Object &driver = field(field(run, "tool"), "driver");
  CHECK(str(driver, "name") == "pipec");
  CHECK(str(driver, "version") == PIPEC_VERSION);

  const json::Array &rules = list(driver, "rules");
  std::vector<std::string> ruleIds;
  for (const json::Value &rule : rules)
    ruleIds.push_back(str(object(&rule), "id"));
  // Exactly the kinds that occur, each once, in registry order.
  CHECK(ruleIds == std::vector<std::string>{"UnknownOp", "UndefinedName", "UnusedParameter"});
  CHECK(str(field(object(&rules[0]), "shortDescription"), "text") ==
        diagInfo(DiagKind::UnknownOp).summary);

  const json::Array &results = list(run, "results");
  REQUIRE(results.size() == 3);
  std::set<std::string> levels;
  for (const json::Value &value : results) {
    const json::Object &result = object(&value);
    int64_t index = num(result, "ruleIndex");
    REQUIRE(index >= 0);
    REQUIRE(index < static_cast<int64_t>(rules.size()));
    CHECK(str(result, "ruleId") == ruleIds[index]);
    levels.insert(str(result, "level"));
  }
  CHECK(levels == std::set<std::string>{"error", "warning"});

  const json::Object &undefined = object(&results[0]);
  CHECK(str(undefined, "ruleId") == "UndefinedName");
  CHECK(str(undefined, "level") == "error");
  CHECK(str(field(undefined, "message"), "text") ==
        "use of undeclared name 'Q'; did you mean 'P'?");
  const json::Object &physical =
      field(object(&list(undefined, "locations")[0]), "physicalLocation");
  CHECK(str(field(physical, "artifactLocation"), "uri") == "a.pipe");
  const json::Object &region = field(physical, "region");
  CHECK(num(region, "startLine") == 5);
  CHECK(num(region, "startColumn") == 17);
  CHECK(num(region, "endLine") == 5);
  CHECK(num(region, "endColumn") == 18);
  // The fix-it becomes a SARIF fix.
  const json::Object &change =
      object(&list(object(&list(undefined, "fixes")[0]), "artifactChanges")[0]);
  const json::Object &replacement = object(&list(change, "replacements")[0]);
  CHECK(str(field(replacement, "insertedContent"), "text") == "P");
  CHECK(num(field(replacement, "deletedRegion"), "startColumn") == 17);

  const json::Object &unused = object(&results[1]);
  CHECK(str(unused, "level") == "warning");
  CHECK(num(field(field(object(&list(unused, "locations")[0]), "physicalLocation"), "region"),
            "startLine") == 1);

  const json::Object &unknownOp = object(&results[2]);
  CHECK(str(unknownOp, "ruleId") == "UnknownOp");
  CHECK(num(unknownOp, "ruleIndex") == 0);
  CHECK(str(field(field(object(&list(unknownOp, "locations")[0]), "physicalLocation"),
                  "artifactLocation"),
            "uri") == "b.pipe");
  // Its note has no location, so it joins the message text.
  CHECK(str(field(unknownOp, "message"), "text") ==
        "unknown op 'Fwd'; did you mean 'F'?\nnote: the ops are F (forward), B (backward), I "
        "(input-gradient half) and W (weight-gradient half)");
  CHECK_FALSE(unknownOp.get("relatedLocations"));
}

TEST_CASE("SARIF: notes with places, no-location results, repeats and URIs", "[lint]") {
  HandMade h("schedule t(V = 1) {}\n");
  h.diags.report(DiagKind::ShadowedName, h.at("V"), "'V' hides an outer 'V'")
      .note(h.at("t"), "the outer one")
      .note("rename one of them");
  h.diags.report(DiagKind::UnknownParameter, "-D names 'Q'");
  h.diags.reportOnce(DiagKind::DivisionByZero, h.at("1"), "division by zero");
  h.diags.reportOnce(DiagKind::DivisionByZero, h.at("1"), "division by zero");
  FileDiagnostics file{"dir/my file.pipe", &h.diags};
  json::Value doc = parse(render(renderSarif, file));
  const json::Object &run = object(&list(object(&doc), "runs")[0]);
  const json::Array &results = list(run, "results");
  REQUIRE(results.size() == 3);

  const json::Object &shadow = object(&results[0]);
  CHECK(str(shadow, "level") == "warning");
  CHECK(str(field(shadow, "message"), "text") == "'V' hides an outer 'V'\nnote: rename one of them");
  CHECK(str(field(field(object(&list(shadow, "locations")[0]), "physicalLocation"),
                  "artifactLocation"),
            "uri") == "dir/my%20file.pipe");
  const json::Array &related = list(shadow, "relatedLocations");
  REQUIRE(related.size() == 1);
  const json::Object &note = object(&related[0]);
  CHECK(num(note, "id") == 0);
  CHECK(str(field(note, "message"), "text") == "the outer one");
  CHECK(num(field(field(note, "physicalLocation"), "region"), "startColumn") == 10);

  const json::Object &noPlace = object(&results[1]);
  CHECK(str(noPlace, "ruleId") == "UnknownParameter");
  CHECK_FALSE(noPlace.get("locations"));

  const json::Object &repeated = object(&results[2]);
  CHECK(num(repeated, "occurrenceCount") == 2);
  CHECK_FALSE(shadow.get("occurrenceCount"));

  // Absolute paths become file:// URIs.
  json::Value absolute = parse(render(renderSarif, FileDiagnostics{"/abs/t.pipe", &h.diags}));
  const json::Object &first =
      object(&list(object(&list(object(&absolute), "runs")[0]), "results")[0]);
  CHECK(str(field(field(object(&list(first, "locations")[0]), "physicalLocation"),
                  "artifactLocation"),
            "uri") == "file:///abs/t.pipe");

  // No diagnostics: an empty run that is still valid.
  json::Value empty = parse(render(renderSarif, {}));
  const json::Object &emptyRun = object(&list(object(&empty), "runs")[0]);
  CHECK(list(emptyRun, "results").empty());
  CHECK(list(field(field(emptyRun, "tool"), "driver"), "rules").empty());
}

TEST_CASE("columns: JSON counts bytes, SARIF and GitHub count characters", "[lint]") {
  HandMade h("/* \xC3\xA9 */ x\n"); // "é" is two bytes
  h.diags.report(DiagKind::UndefinedName, h.at("x"), "use of undeclared name 'x'");
  FileDiagnostics file{"t.pipe", &h.diags};
  json::Value j = parse(render(renderJson, file));
  const json::Object &d = object(&list(object(&list(object(&j), "files")[0]), "diagnostics")[0]);
  CHECK(num(d, "column") == 10);
  CHECK(num(d, "end_column") == 11);
  json::Value s = parse(render(renderSarif, file));
  const json::Object &result = object(&list(object(&list(object(&s), "runs")[0]), "results")[0]);
  const json::Object &region =
      field(field(object(&list(result, "locations")[0]), "physicalLocation"), "region");
  CHECK(num(region, "startColumn") == 9);
  CHECK(num(region, "endColumn") == 10);
  CHECK(str(object(&list(object(&s), "runs")[0]), "columnKind") == "unicodeCodePoints");
  CHECK(render(renderGithub, file) ==
        "::error file=t.pipe,line=1,col=9,endLine=1,endColumn=10,title=pipec [UndefinedName]::"
        "use of undeclared name 'x'\n");
}

TEST_CASE("GitHub annotations escape messages and properties", "[lint]") {
  HandMade h("schedule t() {\n  x: a, b;\n}\n");
  h.diags.report(DiagKind::SyntaxError, h.at("a, b"), "50% done: a, b\nnext\rline")
      .note(h.at("x"), "see: here, 100%");
  FileDiagnostics file{"dir/a,b:c 50%.pipe", &h.diags};
  CHECK(render(renderGithub, file) ==
        "::error file=dir/a%2Cb%3Ac 50%25.pipe,line=2,col=6,endLine=2,endColumn=10,"
        "title=pipec [SyntaxError]::50%25 done: a, b%0Anext%0Dline"
        "%0Adir/a,b:c 50%25.pipe:2:3: note: see: here, 100%25\n");
}

TEST_CASE("GitHub annotations: no location, warnings, multi-line ranges, repeats", "[lint]") {
  HandMade h("schedule t(V = 1) {\n  x;\n}\n");
  h.diags.report(DiagKind::UnknownParameter, "-D names 'Q'").note("no parameters");
  h.diags.report(DiagKind::UnusedParameter, h.at("V"), "parameter 'V' is never used");
  llvm::SMRange twoLines(h.at("t").Start, h.at("x").End);
  h.diags.report(DiagKind::SyntaxError, twoLines, "spans two lines");
  CHECK(render(renderGithub, FileDiagnostics{"t.pipe", &h.diags}) ==
        "::error title=pipec [UnknownParameter]::-D names 'Q'%0Anote: no parameters\n"
        "::warning file=t.pipe,line=1,col=12,endLine=1,endColumn=13,"
        "title=pipec [UnusedParameter]::parameter 'V' is never used\n"
        "::error file=t.pipe,line=1,col=10,title=pipec [SyntaxError]::spans two lines\n");

  auto c = compile(withBody("F(7);", 4, 4));
  std::string lines = render(renderGithub, FileDiagnostics{"r.pipe", &c->diags});
  CHECK_THAT(lines, Catch::Matchers::StartsWith("::error file=r.pipe,line=5,"));
  CHECK_THAT(lines, Catch::Matchers::Contains(
                        "%0Anote: the same problem occurs 3 more time(s) at this location"));

  auto a = compile(kTwoProblems);
  auto b = compile(kUnknownOp);
  FileDiagnostics files[] = {{"a.pipe", &a->diags}, {"b.pipe", &b->diags}};
  std::string all = render(renderGithub, files);
  CHECK(std::count(all.begin(), all.end(), '\n') == 3);
  CHECK_THAT(all, Catch::Matchers::Contains("::error file=b.pipe,line=5,col=5,"));
  CHECK(render(renderGithub, {}).empty());
}
