#include "interop/PipeWriter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <functional>

namespace pipec {

namespace {

using Formula = std::function<int64_t(int64_t)>;

// The expression of `s` that gives values[s] for every stage: a closed form
// when one matches, else a balanced lookup over runs of equal values (its
// nesting grows with the log of the number of runs).
std::string expressionFor(const std::vector<int64_t> &values, int64_t ranks) {
  int64_t R = ranks, S = static_cast<int64_t>(values.size());
  std::string r = std::to_string(R);
  const std::pair<std::string, Formula> candidates[] = {
      {std::to_string(values[0]), [&](int64_t) { return values[0]; }},
      {"s", [](int64_t s) { return s; }},
      {std::to_string(S - 1) + " - s", [&](int64_t s) { return S - 1 - s; }},
      {"s % " + r, [&](int64_t s) { return s % R; }},
      {"s / " + r, [&](int64_t s) { return s / R; }},
      {"s < " + r + " ? s : " + std::to_string(2 * R - 1) + " - s",
       [&](int64_t s) { return s < R ? s : 2 * R - 1 - s; }},
      {"s < " + r + " ? 0 : 1", [&](int64_t s) { return s < R ? 0 : 1; }},
  };
  for (const auto &[text, formula] : candidates) {
    bool matches = true;
    for (int64_t s = 0; s < S && matches; ++s)
      matches = formula(s) == values[s];
    if (matches)
      return text;
  }
  std::vector<int64_t> starts; // first stage of each run of equal values
  for (int64_t s = 0; s < S; ++s)
    if (s == 0 || values[s] != values[s - 1])
      starts.push_back(s);
  std::function<std::string(size_t, size_t)> lookup = [&](size_t lo, size_t hi) {
    if (hi - lo == 1)
      return std::to_string(values[starts[lo]]);
    size_t mid = (lo + hi) / 2;
    return "(s < " + std::to_string(starts[mid]) + " ? " + lookup(lo, mid) + " : " +
           lookup(mid, hi) + ")";
  };
  return lookup(0, starts.size());
}

void writePlacement(const ImportedFlow &flow, int64_t ranks, llvm::raw_ostream &out) {
  std::vector<int64_t> rank, chunk;
  for (const Slot &slot : flow.stageSlots) {
    rank.push_back(slot.rank);
    chunk.push_back(slot.chunk);
  }
  out << "place stage s -> rank " << expressionFor(rank, ranks) << " chunk "
      << expressionFor(chunk, ranks) << ";";
}

void writeOp(const ImportedOp &op, llvm::raw_ostream &out) {
  out << ast::opKindName(op.kind) << '(' << op.chunk << ", mb = " << op.microbatch << ')';
}

bool isKeyword(llvm::StringRef word) {
  static const char *const kKeywords[] = {"schedule", "require", "ranks", "stages",
                                          "microbatches", "copies", "place", "stage",
                                          "rank", "chunk", "flow", "costs", "let", "for",
                                          "in", "if", "else", "mb"};
  for (const char *keyword : kKeywords)
    if (word == keyword)
      return true;
  return false;
}

} // namespace

std::string scheduleNameFor(llvm::StringRef path) {
  std::string name;
  for (char c : llvm::sys::path::stem(path))
    name += llvm::isAlnum(c) || c == '_' ? c : '_';
  if (name.empty() || llvm::isDigit(name[0]) || isKeyword(name))
    name = "imported_" + name;
  return name;
}

void writePipe(const ImportedSchedule &schedule, llvm::StringRef name, llvm::StringRef source,
               llvm::raw_ostream &out) {
  out << "// Imported by `pipec import --from torch-csv` from " << source << ".\n"
      << "// Every op names its chunk and its global micro-batch, in the CSV's order.\n"
      << "schedule " << name << "() {\n"
      << "  ranks " << schedule.numRanks << ";\n"
      << "  stages " << schedule.numStages << ";\n"
      << "  microbatches " << schedule.numMicrobatches << ";\n";
  if (schedule.copies > 1)
    out << "  copies " << schedule.copies << ";\n";
  if (schedule.flows.size() == 1) {
    out << "  ";
    writePlacement(schedule.flows[0], schedule.numRanks, out);
    out << "\n";
  } else {
    for (size_t f = 0; f < schedule.flows.size(); ++f) {
      const ImportedFlow &flow = schedule.flows[f];
      out << "  flow f" << f << ": microbatches " << flow.begin << ".." << flow.end << " { ";
      writePlacement(flow, schedule.numRanks, out);
      out << " }\n";
    }
  }
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    out << "\n  rank " << r << " {\n";
    const std::vector<ImportedOp> &ops = schedule.ranks[r];
    for (size_t i = 0; i < ops.size(); ++i) {
      out << "    ";
      writeOp(ops[i], out);
      if (ops[i].pair == PairRole::First && i + 1 < ops.size()) {
        out << " & ";
        writeOp(ops[++i], out);
      }
      out << ";\n";
    }
    out << "  }\n";
  }
  out << "}\n";
}

} // namespace pipec
