// Machine-readable renderers: JSON, SARIF 2.1.0 and GitHub workflow annotations.
//
// Positions: lines are 1-based. A range's end is exclusive (the position after its
// last character), as in llvm::SMRange and SARIF. JSON columns are byte columns, the
// same numbers the text renderer prints; SARIF and GitHub columns count Unicode
// code points (SARIF has no byte column kind; the run declares "unicodeCodePoints").
// Objects print with sorted keys (llvm::json does that), so output is deterministic.
#include "diag/LintRenderers.h"

#include "PipecVersion.h"

#include "llvm/Support/raw_ostream.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace pipec {
namespace json = llvm::json;

namespace {

const char *const kToolName = "pipec";
const char *const kToolVersion = PIPEC_VERSION;

const char *severityName(Severity severity) {
  switch (severity) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  }
  return "error";
}

// llvm::json asserts on invalid UTF-8; messages may quote bytes from a bad source.
json::Value jsonString(llvm::StringRef text) {
  if (json::isUTF8(text))
    return text.str();
  return json::fixUTF8(text);
}

std::string repeatsNote(unsigned repeats) {
  return "the same problem occurs " + std::to_string(repeats) +
         " more time(s) at this location (other ranks or iterations)";
}

struct Position {
  unsigned line = 0;
  unsigned column = 0;     // 1-based, in bytes
  unsigned charColumn = 0; // 1-based, in code points
};

// Where a range lies: the file it is in, its start and (when it has one) its end.
struct Place {
  std::string path;
  Position start;
  std::optional<Position> end;
};

Position positionOf(const DiagnosticEngine &engine, llvm::SMLoc loc) {
  SourcePosition at = engine.locate(loc);
  Position pos;
  pos.line = at.line;
  pos.column = at.column;
  // Count code points from the line start: every byte that is not a continuation.
  llvm::StringRef before = at.lineText.take_front(at.column - 1);
  pos.charColumn = 1;
  for (char c : before)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80)
      ++pos.charColumn;
  return pos;
}

// Returns no place for a range without a location. `keepEmpty`: a range whose end
// equals its start still gets an end (fix-it insertion points); otherwise only a
// non-empty range does.
std::optional<Place> locate(const FileDiagnostics &file, llvm::SMRange range,
                            bool keepEmpty = false) {
  if (!file.engine || !range.Start.isValid())
    return std::nullopt;
  llvm::SourceMgr &sm = file.engine->sources();
  unsigned buffer = sm.FindBufferContainingLoc(range.Start);
  if (buffer == 0)
    return std::nullopt;
  Place place;
  // The checked file is the main buffer; it goes by the path the caller gave.
  place.path = buffer == sm.getMainFileID()
                   ? file.path
                   : sm.getMemoryBuffer(buffer)->getBufferIdentifier().str();
  place.start = positionOf(*file.engine, range.Start);
  if (range.End.isValid() && sm.FindBufferContainingLoc(range.End) == buffer &&
      (range.End.getPointer() > range.Start.getPointer() ||
       (keepEmpty && range.End.getPointer() == range.Start.getPointer())))
    place.end = positionOf(*file.engine, range.End);
  return place;
}

// The parameter values diagnostic `index` of `file` was found at; null if none.
const std::vector<std::pair<std::string, int64_t>> *paramsOf(const FileDiagnostics &file,
                                                             size_t index) {
  if (!file.domain || index >= file.domain->params.size() ||
      file.domain->params[index].empty())
    return nullptr;
  return &file.domain->params[index];
}

json::Object paramsObject(const std::vector<std::pair<std::string, int64_t>> &params) {
  json::Object object;
  for (const auto &[name, value] : params)
    object[name] = value;
  return object;
}

unsigned countDiagnostics(llvm::ArrayRef<FileDiagnostics> files, Severity severity) {
  unsigned count = 0;
  for (const FileDiagnostics &file : files)
    if (file.engine)
      count += severity == Severity::Error ? file.engine->errorCount()
                                           : file.engine->warningCount();
  return count;
}

// ---------------------------------------------------------------------------
// JSON

void addJsonPosition(json::Object &object, const Place &place, const std::string &filePath) {
  if (place.path != filePath)
    object["path"] = jsonString(place.path);
  object["line"] = place.start.line;
  object["column"] = place.start.column;
  if (place.end) {
    object["end_line"] = place.end->line;
    object["end_column"] = place.end->column;
  }
}

json::Object jsonDiagnostic(const FileDiagnostics &file, const Diagnostic &d, size_t index) {
  json::Object object{
      {"name", diagInfo(d.kind).name},
      {"severity", severityName(d.severity)},
      {"message", jsonString(d.message)},
      {"repeats", d.repeats},
  };
  if (auto place = locate(file, d.range))
    addJsonPosition(object, *place, file.path);
  json::Array notes;
  for (const DiagNote &n : d.notes) {
    json::Object note{{"message", jsonString(n.message)}};
    if (auto place = locate(file, n.range))
      addJsonPosition(note, *place, file.path);
    notes.push_back(std::move(note));
  }
  object["notes"] = std::move(notes);
  json::Array fixits;
  for (const DiagFixIt &f : d.fixits) {
    auto place = locate(file, f.range, /*keepEmpty=*/true);
    if (!place || !place->end)
      continue;
    json::Object fixit{{"replacement", jsonString(f.replacement)}};
    addJsonPosition(fixit, *place, file.path);
    fixits.push_back(std::move(fixit));
  }
  if (!fixits.empty())
    object["fixits"] = std::move(fixits);
  if (auto *params = paramsOf(file, index))
    object["params"] = paramsObject(*params);
  return object;
}

// ---------------------------------------------------------------------------
// SARIF

// The path as a URI reference: unreserved characters and '/' stay, everything else
// is percent-encoded (so a ':' in a relative path cannot read as a scheme). An
// absolute path becomes a file:// URI.
std::string toUri(llvm::StringRef path) {
  std::string uri;
  if (path.startswith("/"))
    uri = "file://";
  for (unsigned char c : path) {
    if (llvm::isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += llvm::hexdigit(c >> 4, /*LowerCase=*/false);
      uri += llvm::hexdigit(c & 0xF, /*LowerCase=*/false);
    }
  }
  return uri;
}

json::Object sarifRegion(const Place &place) {
  json::Object region{
      {"startLine", place.start.line},
      {"startColumn", place.start.charColumn},
  };
  if (place.end) {
    region["endLine"] = place.end->line;
    region["endColumn"] = place.end->charColumn;
  }
  return region;
}

json::Object sarifPhysicalLocation(const Place &place) {
  return json::Object{
      {"artifactLocation", json::Object{{"uri", toUri(place.path)}}},
      {"region", sarifRegion(place)},
  };
}

json::Object sarifResult(const FileDiagnostics &file, const Diagnostic &d, size_t index,
                         unsigned ruleIndex) {
  std::string text = d.message;
  json::Array related;
  for (const DiagNote &n : d.notes) {
    if (auto place = locate(file, n.range)) {
      related.push_back(json::Object{
          {"id", static_cast<int64_t>(related.size())},
          {"physicalLocation", sarifPhysicalLocation(*place)},
          {"message", json::Object{{"text", jsonString(n.message)}}},
      });
    } else {
      text += "\nnote: " + n.message; // a related location needs a place
    }
  }
  json::Object result{
      {"ruleId", diagInfo(d.kind).name},
      {"ruleIndex", ruleIndex},
      {"level", severityName(d.severity)},
      {"message", json::Object{{"text", jsonString(text)}}},
  };
  if (auto place = locate(file, d.range))
    result["locations"] = json::Array{json::Object{{"physicalLocation", sarifPhysicalLocation(*place)}}};
  if (!related.empty())
    result["relatedLocations"] = std::move(related);
  if (d.repeats > 0)
    result["occurrenceCount"] = d.repeats + 1;
  if (auto *params = paramsOf(file, index))
    result["properties"] = json::Object{{"params", paramsObject(*params)}};

  // All fix-its of one diagnostic form one fix (they are meant to apply together).
  std::vector<std::string> uris;
  std::vector<json::Array> replacements;
  for (const DiagFixIt &f : d.fixits) {
    auto place = locate(file, f.range, /*keepEmpty=*/true);
    if (!place || !place->end)
      continue;
    std::string uri = toUri(place->path);
    size_t i = std::find(uris.begin(), uris.end(), uri) - uris.begin();
    if (i == uris.size()) {
      uris.push_back(uri);
      replacements.emplace_back();
    }
    replacements[i].push_back(json::Object{
        {"deletedRegion", sarifRegion(*place)},
        {"insertedContent", json::Object{{"text", jsonString(f.replacement)}}},
    });
  }
  if (!uris.empty()) {
    json::Array changes;
    for (size_t i = 0; i < uris.size(); ++i)
      changes.push_back(json::Object{
          {"artifactLocation", json::Object{{"uri", uris[i]}}},
          {"replacements", std::move(replacements[i])},
      });
    result["fixes"] = json::Array{json::Object{{"artifactChanges", std::move(changes)}}};
  }
  return result;
}

// ---------------------------------------------------------------------------
// GitHub workflow commands

std::string escapeGithubData(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '%': out += "%25"; break;
    case '\r': out += "%0D"; break;
    case '\n': out += "%0A"; break;
    default: out += c;
    }
  }
  return out;
}

std::string escapeGithubProperty(llvm::StringRef text) {
  // Properties escape what data does, plus the separators of the property list.
  std::string out;
  for (char c : escapeGithubData(text)) {
    switch (c) {
    case ':': out += "%3A"; break;
    case ',': out += "%2C"; break;
    default: out += c;
    }
  }
  return out;
}

const char *githubCommand(Severity severity) {
  switch (severity) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "notice";
  }
  return "error";
}

} // namespace

void renderJson(llvm::ArrayRef<FileDiagnostics> files, llvm::raw_ostream &out) {
  json::Array jsonFiles;
  for (const FileDiagnostics &file : files) {
    json::Array diagnostics;
    if (file.engine)
      for (size_t i = 0; i < file.engine->diagnostics().size(); ++i)
        diagnostics.push_back(jsonDiagnostic(file, file.engine->diagnostics()[i], i));
    json::Object entry{
        {"path", jsonString(file.path)},
        {"diagnostics", std::move(diagnostics)},
    };
    if (file.domain)
      entry["domain"] = json::Object{
          {"description", jsonString(file.domain->description)},
          {"points", static_cast<int64_t>(file.domain->points)},
          {"ok", static_cast<int64_t>(file.domain->ok)},
          {"unsupported", static_cast<int64_t>(file.domain->unsupported)},
          {"failed", static_cast<int64_t>(file.domain->failed)},
          {"unchecked", static_cast<int64_t>(file.domain->unchecked)},
      };
    if (file.domain && !file.domain->failingPoint.empty())
      entry["domain"].getAsObject()->try_emplace("failing_point", file.domain->failingPoint);
    jsonFiles.push_back(std::move(entry));
  }
  json::Value document = json::Object{
      {"version", 1},
      {"files", std::move(jsonFiles)},
      {"summary",
       json::Object{
           {"files", static_cast<int64_t>(files.size())},
           {"errors", countDiagnostics(files, Severity::Error)},
           {"warnings", countDiagnostics(files, Severity::Warning)},
       }},
  };
  out << llvm::formatv("{0:2}", document) << "\n";
}

void renderSarif(llvm::ArrayRef<FileDiagnostics> files, llvm::raw_ostream &out) {
  // One rule per kind that occurs, in registry order; ruleIndex points into them.
  std::vector<bool> used(allDiagKinds().size(), false);
  for (const FileDiagnostics &file : files)
    if (file.engine)
      for (const Diagnostic &d : file.engine->diagnostics())
        used[static_cast<size_t>(d.kind)] = true;
  std::vector<unsigned> ruleIndex(used.size(), 0);
  json::Array rules;
  for (size_t kind = 0; kind < used.size(); ++kind) {
    if (!used[kind])
      continue;
    const DiagKindInfo &info = allDiagKinds()[kind];
    ruleIndex[kind] = rules.size();
    rules.push_back(json::Object{
        {"id", info.name},
        {"shortDescription", json::Object{{"text", info.summary}}},
        {"defaultConfiguration", json::Object{{"level", severityName(info.severity)}}},
    });
  }

  json::Array results;
  for (const FileDiagnostics &file : files)
    if (file.engine)
      for (size_t i = 0; i < file.engine->diagnostics().size(); ++i) {
        const Diagnostic &d = file.engine->diagnostics()[i];
        results.push_back(sarifResult(file, d, i, ruleIndex[static_cast<size_t>(d.kind)]));
      }

  json::Object driver{
      {"name", kToolName},
      {"version", kToolVersion},
      {"rules", std::move(rules)},
  };
  json::Value document = json::Object{
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs", json::Array{json::Object{
                   {"tool", json::Object{{"driver", std::move(driver)}}},
                   {"columnKind", "unicodeCodePoints"},
                   {"results", std::move(results)},
               }}},
  };
  out << llvm::formatv("{0:2}", document) << "\n";
}

void renderGithub(llvm::ArrayRef<FileDiagnostics> files, llvm::raw_ostream &out) {
  for (const FileDiagnostics &file : files) {
    if (!file.engine)
      continue;
    for (size_t i = 0; i < file.engine->diagnostics().size(); ++i) {
      const Diagnostic &d = file.engine->diagnostics()[i];
      std::string properties;
      if (auto place = locate(file, d.range)) {
        properties = "file=" + escapeGithubProperty(place->path) +
                     ",line=" + std::to_string(place->start.line) +
                     ",col=" + std::to_string(place->start.charColumn);
        // GitHub takes columns only for a range within one line; a range over
        // several lines is annotated at its start.
        if (place->end && place->end->line == place->start.line)
          properties += ",endLine=" + std::to_string(place->end->line) +
                        ",endColumn=" + std::to_string(place->end->charColumn);
        properties += ",";
      }
      properties += "title=" + escapeGithubProperty(std::string(kToolName) + " [" +
                                                    diagInfo(d.kind).name + "]");

      // Notes follow the message on lines of their own ("%0A" is GitHub's newline).
      // A point of a domain prefixes the message: the annotation names it at once.
      std::string message;
      if (auto *params = paramsOf(file, i)) {
        std::string at;
        for (const auto &[name, value] : *params)
          at += (at.empty() ? "at " : ", ") + name + "=" + std::to_string(value);
        message = escapeGithubData(at + ": ");
      }
      message += escapeGithubData(d.message);
      for (const DiagNote &n : d.notes) {
        message += "%0A";
        if (auto place = locate(file, n.range))
          message += escapeGithubData(place->path + ":" + std::to_string(place->start.line) +
                                      ":" + std::to_string(place->start.charColumn) + ": ");
        message += "note: " + escapeGithubData(n.message);
      }
      if (d.repeats > 0)
        message += "%0Anote: " + escapeGithubData(repeatsNote(d.repeats));

      out << "::" << githubCommand(d.severity) << " " << properties << "::" << message << "\n";
    }
  }
}

} // namespace pipec
