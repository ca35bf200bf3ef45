#include "interop/PipeWriter.h"

#include "interop/PlacementExpr.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <optional>
#include <tuple>

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

PipeOp pipeOp(const ImportedOp &op) {
  return {ast::opKindName(op.kind)[0], op.chunk, op.microbatch};
}

// "F(0, mb = 3)"; inside a loop over `i`, micro-batches relative to the
// first iteration ("mb = i + 3").
std::string opText(char kind, int32_t chunk, const std::string &microbatch) {
  return std::string(1, kind) + "(" + std::to_string(chunk) + ", mb = " + microbatch + ")";
}

std::string stepText(const PipeStep &step, bool inLoop = false) {
  std::string out;
  for (int k = 0; k < step.count; ++k) {
    const PipeOp &op = step.ops[k];
    std::string m = std::to_string(op.microbatch);
    if (inLoop)
      m = op.microbatch == 0 ? "i" : "i + " + m;
    out += (k ? " & " : "") + opText(op.kind, op.chunk, m);
  }
  return out;
}

// A loop over `i` of `count` iterations around `body`: one line for one step.
std::string loopText(const std::string &count, const std::vector<std::string> &body,
                     const std::string &indent) {
  std::string out = indent + "for i in 0.." + count + " {";
  if (body.size() == 1)
    return out + " " + body[0] + "; }\n";
  out += "\n";
  for (const std::string &step : body)
    out += indent + "  " + step + ";\n";
  return out + indent + "}\n";
}

// A rank's program with runs written as loops: a body of up to four steps
// that repeats with every micro-batch one higher, covering four steps or
// more, becomes `for i in 0..n { F(0, mb = i + 3); B(0, mb = i); }`.
std::string loopedProgram(const std::vector<PipeStep> &steps, const std::string &indent) {
  std::string out;
  for (const StepRun &run : stepRuns(steps, /*minCovered=*/4)) {
    if (run.count == 1) {
      out += indent + stepText(run.body[0]) + ";\n";
      continue;
    }
    std::vector<std::string> body;
    for (const PipeStep &step : run.body)
      body.push_back(stepText(step, /*inLoop=*/true));
    out += loopText(std::to_string(run.count), body, indent);
  }
  return out;
}

// base + slope * r (+ i in a loop), with the fixed sizes by name where the
// rank enters: "P - r", "i + M - P + r", "1 + 2 * r"; a plain number else.
std::string affineText(const RankAffine &value, bool inLoop, int64_t ranks, int64_t microbatches) {
  std::vector<std::pair<int64_t, std::string>> terms; // (sign, text)
  if (inLoop)
    terms.push_back({1, "i"});
  std::string rank = (value.slope == 1 || value.slope == -1 ? "" : std::to_string(
                          value.slope < 0 ? -value.slope : value.slope) + " * ") + "r";
  std::string constant;
  int64_t base = value.base < 0 ? -value.base : value.base;
  if (value.slope != 0 && value.base > 0 && value.base == ranks)
    constant = "P";
  else if (value.slope != 0 && value.base > 0 && value.base == microbatches)
    constant = "M";
  else if (value.slope != 0 && value.base > 0 && value.base == ranks - 1)
    constant = "P - 1";
  else if (value.slope != 0 && value.base > 0 && value.base == microbatches - ranks)
    constant = "M - P";
  else
    constant = std::to_string(base);
  if (value.base != 0 || (terms.empty() && value.slope == 0))
    terms.push_back({value.base < 0 ? -1 : 1, constant});
  if (value.slope != 0)
    terms.push_back({value.slope < 0 ? -1 : 1, rank});
  std::string out = terms[0].first < 0 ? "0 - " + terms[0].second : terms[0].second;
  for (size_t k = 1; k < terms.size(); ++k)
    out += (terms[k].first < 0 ? " - " : " + ") + terms[k].second;
  return out;
}

// The body of a program shared by a group of ranks, `r` its rank.
std::string sharedProgramText(const SharedProgram &program, int64_t ranks, int64_t microbatches,
                              const std::string &indent) {
  std::string out;
  for (const SharedRun &run : program.runs) {
    bool loop = !(run.count.slope == 0 && run.count.base == 1);
    std::vector<std::string> body;
    for (const SharedStep &step : run.body) {
      std::string text;
      for (int k = 0; k < step.count; ++k)
        text += (k ? " & " : "") +
                opText(step.ops[k].kind, step.ops[k].chunk,
                       affineText(step.ops[k].microbatch, loop, ranks, microbatches));
      body.push_back(text);
    }
    if (!loop) {
      for (const std::string &step : body)
        out += indent + step + ";\n";
    } else {
      out += loopText(affineText(run.count, false, ranks, microbatches), body, indent);
    }
  }
  return out;
}

// One `rank r { }` program for every group of ranks that share a shape (one
// branch per group where there are several), and a `rank N { }` program for
// each rank in no group, which takes precedence over the generic one.
void writeRankPrograms(const ExplicitSchedule &s, llvm::raw_ostream &out) {
  std::vector<SharedProgram> groups;
  if (s.loops && s.shareRanks)
    groups = shareRankPrograms(s.programs);
  std::vector<bool> shared(s.programs.size());
  for (const SharedProgram &group : groups)
    std::fill(shared.begin() + group.firstRank, shared.begin() + group.endRank, true);
  if (groups.size() == 1) {
    out << "\n  rank r {\n" << sharedProgramText(groups[0], s.ranks, s.microbatches, "    ")
        << "  }\n";
  } else if (groups.size() > 1) {
    out << "\n  rank r {\n";
    for (size_t g = 0; g < groups.size(); ++g) {
      out << (g == 0 ? "    " : " else ");
      if (g + 1 < groups.size())
        out << "if r < " << groups[g].endRank << " ";
      out << "{\n" << sharedProgramText(groups[g], s.ranks, s.microbatches, "      ") << "    }";
    }
    out << "\n  }\n";
  }
  for (size_t r = 0; r < s.programs.size(); ++r) {
    if (shared[r])
      continue;
    out << "\n  rank " << r << " {\n";
    if (s.loops) {
      out << loopedProgram(s.programs[r], "    ");
    } else {
      for (const PipeStep &step : s.programs[r])
        out << "    " << stepText(step) << ";\n";
    }
    out << "  }\n";
  }
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

void writeExplicitSchedule(const ExplicitSchedule &s, llvm::raw_ostream &out) {
  for (const std::string &line : s.header)
    out << "// " << line << "\n";
  // The sizes are fixed: parameters, so that -D P=<its value> is accepted, with
  // a requirement that names the tool for any other value.
  out << "schedule " << s.name << "(P = " << s.ranks << ", M = " << s.microbatches << ") {\n";
  for (auto [param, value, what] : {std::make_tuple('P', s.ranks, "ranks"),
                                    std::make_tuple('M', s.microbatches, "micro-batches")})
    out << "  require " << param << " == " << value << " : \"written by " << s.tool << " for "
        << value << " " << what << "; run it again for another " << param << "\";\n";
  out << "  ranks P;\n"
      << "  stages " << s.stages << ";\n"
      << "  microbatches M;\n";
  if (s.copies > 1)
    out << "  copies " << s.copies << ";\n";
  out << s.placement;
  writeRankPrograms(s, out);
  out << "}\n";
}

bool writePipe(const ImportedSchedule &schedule, llvm::StringRef name, llvm::StringRef source,
               DiagnosticEngine &diags, llvm::raw_ostream &out, bool compact) {
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

  ExplicitSchedule s;
  s.header = {"Imported by `pipec import --from torch-csv` from " + escapeForComment(source) + ".",
              "Every op names its chunk and its global micro-batch, in the CSV's order."};
  s.name = name.str();
  s.tool = "pipec import";
  s.ranks = schedule.numRanks;
  s.stages = schedule.numStages;
  s.microbatches = schedule.numMicrobatches;
  s.copies = schedule.copies;
  s.loops = compact;
  llvm::raw_string_ostream placement(s.placement);
  for (const PlacementPlan &plan : plans)
    writeLets(plan, placement);
  if (!flows) {
    placement << "  ";
    writePlacement(plans[0], 2, placement);
    placement << "\n";
  } else {
    for (size_t f = 0; f < schedule.flows.size(); ++f) {
      const ImportedFlow &flow = schedule.flows[f];
      std::string head = "  flow f" + std::to_string(f) + ": microbatches " +
                         std::to_string(flow.begin) + ".." + std::to_string(flow.end) + " { ";
      placement << head;
      writePlacement(plans[f], head.size(), placement);
      placement << " }\n";
    }
  }
  placement.flush();
  for (const std::vector<ImportedOp> &ops : schedule.ranks) {
    std::vector<PipeStep> &steps = s.programs.emplace_back();
    for (size_t i = 0; i < ops.size(); ++i) {
      PipeStep step;
      if (ops[i].pair == PairRole::First && i + 1 < ops.size()) {
        // The pair in the order the CSV wrote it: `B & F` stays backward first.
        bool backwardFirst = ops[i].backwardWrittenFirst;
        step.count = 2;
        step.ops[0] = pipeOp(ops[backwardFirst ? i + 1 : i]);
        step.ops[1] = pipeOp(ops[backwardFirst ? i : i + 1]);
        ++i;
      } else {
        step.ops[0] = pipeOp(ops[i]);
      }
      steps.push_back(step);
    }
  }
  writeExplicitSchedule(s, out);
  return true;
}

} // namespace pipec
