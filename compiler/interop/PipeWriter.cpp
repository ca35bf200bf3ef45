#include "interop/PipeWriter.h"

#include "interop/PlacementExpr.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <optional>

namespace pipec {

namespace {

struct PlacementPlan {
  StageExpr rank, chunk;
};

// `place stage s -> rank <rank> chunk <chunk> ;` holds 7 tokens of its own.
size_t statementTokens(const PlacementPlan &plan) {
  return 7 + plan.rank.tokens.size() + plan.chunk.tokens.size();
}

// The most readable forms that fit one statement, or nullopt.
std::optional<PlacementPlan> planPlacement(const ImportedFlow &flow, int64_t ranks,
                                           const std::string &prefix) {
  std::vector<int64_t> rank, chunk;
  for (const Slot &slot : flow.stageSlots) {
    rank.push_back(slot.rank);
    chunk.push_back(slot.chunk);
  }
  PlacementPlan plan{closedFormOrLookup(rank, ranks), closedFormOrLookup(chunk, ranks)};
  if (statementTokens(plan) <= kMaxStatementTokens)
    return plan;
  // Pack whichever side is larger first; the other stays readable if it can.
  StageExpr packedRank = packedTables(rank, prefix + "rank_of");
  StageExpr packedChunk = packedTables(chunk, prefix + "chunk_of");
  for (PlacementPlan candidate : {PlacementPlan{plan.rank, packedChunk},
                                  PlacementPlan{packedRank, plan.chunk},
                                  PlacementPlan{packedRank, packedChunk}})
    if (statementTokens(candidate) <= kMaxStatementTokens)
      return candidate;
  return std::nullopt;
}

// Tokens joined with spaces, wrapped so that no line grows past ~100 columns.
void writeTokens(const std::vector<std::string> &tokens, size_t column, llvm::raw_ostream &out) {
  const char *const kIndent = "      ";
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string &t = tokens[i];
    bool space = i > 0 && tokens[i - 1] != "(" && t != ")" && t != ";";
    if (space && column + t.size() > 96) {
      out << '\n' << kIndent;
      column = 6;
    } else if (space) {
      out << ' ';
      ++column;
    }
    out << t;
    column += t.size();
  }
}

void writePlacement(const PlacementPlan &plan, size_t column, llvm::raw_ostream &out) {
  std::vector<std::string> tokens = {"place", "stage", "s", "->", "rank"};
  tokens.insert(tokens.end(), plan.rank.tokens.begin(), plan.rank.tokens.end());
  tokens.push_back("chunk");
  tokens.insert(tokens.end(), plan.chunk.tokens.begin(), plan.chunk.tokens.end());
  tokens.push_back(";");
  writeTokens(tokens, column, out);
}

void writeLets(const PlacementPlan &plan, llvm::raw_ostream &out) {
  for (const StageExpr *expr : {&plan.rank, &plan.chunk})
    for (const auto &[name, value] : expr->lets)
      out << "  let " << name << " = " << value << ";\n";
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

std::string escapeForComment(llvm::StringRef text) {
  std::string escaped;
  for (unsigned char c : text) {
    if (c == '\n')
      escaped += "\\n";
    else if (c == '\\')
      escaped += "\\\\";
    else if (c < 0x20 || c >= 0x7f)
      escaped += "\\x" + llvm::utohexstr(c, /*LowerCase=*/true, /*Width=*/2);
    else
      escaped += static_cast<char>(c);
  }
  return escaped;
}

bool writePipe(const ImportedSchedule &schedule, llvm::StringRef name, llvm::StringRef source,
               DiagnosticEngine &diags, llvm::raw_ostream &out) {
  bool flows = schedule.flows.size() > 1;
  std::vector<PlacementPlan> plans;
  for (size_t f = 0; f < schedule.flows.size(); ++f) {
    std::string prefix = flows ? "f" + std::to_string(f) + "_" : "";
    std::optional<PlacementPlan> plan =
        planPlacement(schedule.flows[f], schedule.numRanks, prefix);
    if (!plan) {
      const ImportedFlow &flow = schedule.flows[f];
      diags
          .report(DiagKind::CsvPlacementTooIrregular, flow.lastStageAction,
                  "the placement of " + std::to_string(schedule.numStages) + " stages" +
                      (flows ? " in micro-batches " + std::to_string(flow.begin) + ".." +
                                   std::to_string(flow.end)
                             : "") +
                      " is too irregular to write as one .pipe place statement (at most " +
                      std::to_string(kMaxStatementTokens) + " tokens)")
          .note("place the stages in a regular pattern, such as stage s on rank s % P, or in "
                "fewer runs of consecutive stages on one rank");
      return false;
    }
    plans.push_back(std::move(*plan));
  }

  out << "// Imported by `pipec import --from torch-csv` from " << escapeForComment(source)
      << ".\n"
      << "// Every op names its chunk and its global micro-batch, in the CSV's order.\n"
      << "schedule " << name << "() {\n"
      << "  ranks " << schedule.numRanks << ";\n"
      << "  stages " << schedule.numStages << ";\n"
      << "  microbatches " << schedule.numMicrobatches << ";\n";
  if (schedule.copies > 1)
    out << "  copies " << schedule.copies << ";\n";
  for (const PlacementPlan &plan : plans)
    writeLets(plan, out);
  if (!flows) {
    out << "  ";
    writePlacement(plans[0], 2, out);
    out << "\n";
  } else {
    for (size_t f = 0; f < schedule.flows.size(); ++f) {
      const ImportedFlow &flow = schedule.flows[f];
      std::string head = "  flow f" + std::to_string(f) + ": microbatches " +
                         std::to_string(flow.begin) + ".." + std::to_string(flow.end) + " { ";
      out << head;
      writePlacement(plans[f], head.size(), out);
      out << " }\n";
    }
  }
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    out << "\n  rank " << r << " {\n";
    const std::vector<ImportedOp> &ops = schedule.ranks[r];
    for (size_t i = 0; i < ops.size(); ++i) {
      out << "    ";
      if (ops[i].pair == PairRole::First && i + 1 < ops.size()) {
        // The pair in the order the CSV wrote it: `B & F` stays backward first.
        bool backwardFirst = ops[i].backwardWrittenFirst;
        writeOp(ops[backwardFirst ? i + 1 : i], out);
        out << " & ";
        writeOp(ops[backwardFirst ? i : i + 1], out);
        ++i;
      } else {
        writeOp(ops[i], out);
      }
      out << ";\n";
    }
    out << "  }\n";
  }
  out << "}\n";
  return true;
}

} // namespace pipec
