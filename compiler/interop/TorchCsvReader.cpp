#include "interop/TorchCsvReader.h"

#include "elab/Elaborator.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

namespace pipec {

namespace {

using ast::OpKind;

// pipec's own limits (README, "Limits"): larger ids could not elaborate anyway.
constexpr int64_t kMaxStage = (int64_t(1) << 24) - 1;
constexpr int64_t kMaxMicrobatch = (int64_t(1) << 30) - 1;

// PyTorch's action types that are not computation: valid in its CSVs with
// communication ("compute_comms"), but not in a compute-only schedule.
constexpr llvm::StringRef kNonComputeTypes[] = {
    "UNSHARD", "RESHARD",     "SEND_F",      "RECV_F",      "SEND_B",
    "RECV_B",  "WAIT_SEND_F", "WAIT_SEND_B", "REDUCE_GRAD", "WAIT_REDUCE_GRAD"};

constexpr const char *kExample = "a cell holds one action such as 0F0, 3I1, 3W1 or 2B0, or a "
                                 "pair such as (0F7;7B3)OVERLAP_F_B";

bool isBlank(char c) { return c == ' ' || c == '\t'; }

// The type of a cell that is one action <stage><TYPE>[<micro-batch>], or "".
llvm::StringRef actionType(llvm::StringRef cell) {
  llvm::StringRef rest = cell.drop_while(llvm::isDigit);
  if (rest.size() == cell.size())
    return "";
  llvm::StringRef type = rest.take_while([](char c) { return llvm::isAlpha(c) || c == '_'; });
  return rest.drop_front(type.size()).drop_while(llvm::isDigit).empty() ? type : "";
}

llvm::SMRange rangeOf(const char *begin, const char *end) {
  return {llvm::SMLoc::getFromPointer(begin), llvm::SMLoc::getFromPointer(end)};
}

// Parses one cell; reports the first problem in it and returns nullopt.
class CellParser {
public:
  CellParser(llvm::StringRef cell, DiagnosticEngine &diags)
      : pos_(cell.begin()), begin_(cell.begin()), end_(cell.end()), diags_(diags) {}

  std::optional<TorchCell> parse() {
    TorchCell cell{};
    cell.range = rangeOf(begin_, end_);
    if (*pos_ == '(') {
      if (!parsePair(cell))
        return std::nullopt;
    } else {
      std::optional<TorchAction> action = parseAction();
      if (!action)
        return std::nullopt;
      cell.first = *action;
      if (pos_ != end_)
        return fail(pos_, end_,
                    "unexpected '" + remainder() + "' after the action '" +
                        text(action->range) + "'; " + kExample);
    }
    return cell;
  }

private:
  bool parsePair(TorchCell &cell) {
    ++pos_; // '('
    std::optional<TorchAction> first = parseAction();
    if (!first)
      return false;
    skipBlanks();
    if (pos_ == end_ || *pos_ != ';')
      return failPairSeparator(";", "an OVERLAP_F_B pair holds two actions separated by ';'");
    ++pos_;
    std::optional<TorchAction> second = parseAction();
    if (!second)
      return false;
    skipBlanks();
    if (pos_ == end_ || *pos_ != ')')
      return failPairSeparator(")", "an OVERLAP_F_B pair holds exactly two actions, closed by ')'");
    ++pos_;
    const char *typeStart = pos_;
    llvm::StringRef type = readWord();
    if (type != "OVERLAP_F_B") {
      if (type.empty() && pos_ == end_)
        fail(begin_, end_,
             "a parenthesized pair must be followed by OVERLAP_F_B, as in (0F7;7B3)OVERLAP_F_B");
      else if (type.empty())
        fail(typeStart, end_, "unexpected '" + remainder() + "' after the pair; expected OVERLAP_F_B");
      else
        fail(typeStart, pos_,
             "unknown pair type '" + type.str() + "'; PyTorch writes (F;B)OVERLAP_F_B");
      return false;
    }
    if (pos_ != end_) {
      fail(pos_, end_, "unexpected '" + remainder() + "' after OVERLAP_F_B; " + kExample);
      return false;
    }
    // One forward and one backward; PyTorch writes the forward first, but the
    // two run together, so either order means the same pair.
    if (second->kind == OpKind::F && first->kind != OpKind::F) {
      std::swap(first, second);
      cell.backwardWrittenFirst = true;
    }
    if (first->kind != OpKind::F || (second->kind != OpKind::B && second->kind != OpKind::I)) {
      fail(begin_, end_,
           "an OVERLAP_F_B pair joins one forward (F) and one backward (B or I), not '" +
               text(first->range) + "' and '" + text(second->range) + "'");
      return false;
    }
    cell.first = *first;
    cell.second = *second;
    return true;
  }

  bool failPairSeparator(const char *expected, const char *why) {
    if (pos_ == end_)
      fail(begin_, end_, std::string("the pair ends before its '") + expected + "'; " + why);
    else
      fail(pos_, end_, "unexpected '" + remainder() + "' in an OVERLAP_F_B pair; " + why);
    return false;
  }

  // <stage><type><micro-batch>, with blanks around it.
  std::optional<TorchAction> parseAction() {
    skipBlanks();
    const char *start = pos_;
    if (pos_ == end_ || !llvm::isDigit(*pos_)) {
      if (pos_ == end_ || *pos_ == ';' || *pos_ == ')')
        return fail(start, end_, std::string("an action is missing here; ") + kExample);
      return fail(start, end_,
                  "expected a stage id (a number) at the start of the action, got '" +
                      remainder() + "'; " + kExample);
    }
    std::optional<int64_t> stage = readNumber("stage", kMaxStage);
    if (!stage)
      return std::nullopt;
    const char *typeStart = pos_;
    llvm::StringRef type = readWord();
    std::optional<OpKind> kind = computeKind(type, typeStart, start);
    if (!kind)
      return std::nullopt;
    if (pos_ == end_ || !llvm::isDigit(*pos_))
      return fail(start, pos_,
                  "the action '" + std::string(start, pos_) +
                      "' has no micro-batch id; write it after the type, as in " +
                      std::string(start, pos_) + "0");
    std::optional<int64_t> mb = readNumber("micro-batch", kMaxMicrobatch);
    if (!mb)
      return std::nullopt;
    TorchAction action{*kind, *stage, *mb, rangeOf(start, pos_)};
    skipBlanks();
    return action;
  }

  std::optional<OpKind> computeKind(llvm::StringRef type, const char *typeStart,
                                    const char *actionStart) {
    if (type == "F") return OpKind::F;
    if (type == "B") return OpKind::B;
    if (type == "I") return OpKind::I;
    if (type == "W") return OpKind::W;
    if (type.empty()) {
      if (pos_ == end_)
        return fail(actionStart, end_,
                    "the action '" + remainder(actionStart) +
                        "' has no type; expected F, B, I or W after the stage id");
      return fail(pos_, end_,
                  "unexpected '" + remainder() + "' after the stage id; expected F, B, I or W");
    }
    if (llvm::is_contained(kNonComputeTypes, type))
      return fail(typeStart, pos_,
                  "'" + type.str() + "' is not a compute action: pipec imports compute-only "
                  "schedules (F, B, I, W and OVERLAP_F_B pairs); export the schedule before "
                  "communication is added");
    if (type == "OVERLAP_F_B")
      return fail(actionStart, pos_,
                  "OVERLAP_F_B follows a parenthesized pair of actions, as in "
                  "(0F7;7B3)OVERLAP_F_B");
    std::string message = "unknown action type '" + type.str() + "'; expected F, B, I or W";
    std::string upper = type.upper(); // PyTorch's types are upper case
    if (upper == "F" || upper == "B" || upper == "I" || upper == "W")
      message += " (did you mean '" + upper + "'?)";
    return fail(typeStart, pos_, message);
  }

  std::optional<int64_t> readNumber(const char *what, int64_t max) {
    const char *start = pos_;
    while (pos_ != end_ && llvm::isDigit(*pos_))
      ++pos_;
    int64_t value = 0;
    if (llvm::StringRef(start, pos_ - start).getAsInteger(10, value) || value > max) {
      fail(start, pos_,
           std::string(what) + " id " + std::string(start, pos_) + " is too large (at most " +
               std::to_string(max) + ")");
      return std::nullopt;
    }
    return value;
  }

  llvm::StringRef readWord() {
    const char *start = pos_;
    while (pos_ != end_ && (llvm::isAlpha(*pos_) || *pos_ == '_'))
      ++pos_;
    return llvm::StringRef(start, pos_ - start);
  }

  void skipBlanks() {
    while (pos_ != end_ && isBlank(*pos_))
      ++pos_;
  }

  std::string remainder(const char *from = nullptr) const {
    return std::string(from ? from : pos_, end_);
  }
  static std::string text(llvm::SMRange range) {
    return std::string(range.Start.getPointer(), range.End.getPointer());
  }

  std::nullopt_t fail(const char *at, const char *to, std::string message) {
    diags_.report(DiagKind::MalformedCsvCell, rangeOf(at, std::max(to, at)), std::move(message));
    return std::nullopt;
  }

  const char *pos_, *begin_, *end_;
  DiagnosticEngine &diags_;
};

} // namespace

std::optional<TorchCsv> readTorchCsv(unsigned buffer, DiagnosticEngine &diags,
                                     uint64_t maxActions) {
  const llvm::MemoryBuffer *file = diags.sources().getMemoryBuffer(buffer);
  llvm::StringRef text = file->getBuffer();
  TorchCsv csv;
  csv.path = file->getBufferIdentifier().str();
  if (text.startswith("\xEF\xBB\xBF")) // a UTF-8 byte-order mark, as spreadsheets write
    text = text.drop_front(3);
  unsigned malformed = 0;
  uint64_t actions = 0;
  bool communication = false; // reported once for the whole file
  const char *trailingBlank = nullptr; // the first of the blank lines that end the file
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    if (line.endswith("\r"))
      line = line.drop_back();
    if (line.empty() && !trailingBlank)
      trailingBlank = line.begin();
    else if (!line.empty())
      trailingBlank = nullptr;
    if (csv.rows.size() == static_cast<size_t>(kMaxRanks)) {
      diags.report(DiagKind::TopologyOutOfRange, rangeOf(line.begin(), line.end()),
                   "this row would be rank " + std::to_string(kMaxRanks) +
                       ", but pipec supports at most " + std::to_string(kMaxRanks) +
                       " ranks (one row per rank)");
      return std::nullopt;
    }
    std::vector<TorchCell> &row = csv.rows.emplace_back();
    llvm::SmallVector<llvm::StringRef, 64> cells;
    line.split(cells, ',');
    for (llvm::StringRef cell : cells) {
      cell = cell.trim(" \t");
      if (cell.empty())
        continue; // PyTorch's idle slot
      llvm::StringRef type = actionType(cell);
      // PyTorch's gradient reduction after a stage's last backward ("0REDUCE_GRAD",
      // "0WAIT_REDUCE_GRAD"), which a plain `pipeline_order` of GPipe or 1F1B has:
      // pipec's programs reduce gradients at the end of the step, so it is skipped.
      if (type == "REDUCE_GRAD" || type == "WAIT_REDUCE_GRAD")
        continue;
      if (llvm::is_contained(kNonComputeTypes, type)) {
        if (!communication)
          diags
              .report(DiagKind::MalformedCsvCell, rangeOf(cell.begin(), cell.end()),
                      "'" + cell.str() + "' is a communication action: this CSV is PyTorch's "
                      "\"compute_comms\" format (sends, receives, unshards), and pipec imports "
                      "the compute-only order; the file's other communication actions are not "
                      "listed")
              .note("dump the schedule with _dump_csv(path, format=\"compute_only\"), or write "
                    "its pipeline_order rather than pipeline_order_with_comms");
        communication = true;
        continue;
      }
      std::optional<TorchCell> parsed = CellParser(cell, diags).parse();
      if (!parsed) {
        if (diags.stopped()) // the error limit: nothing more would be shown
          return std::nullopt;
        if (++malformed == kMaxReportedCells) {
          diags.report(DiagKind::MalformedCsvCell, rangeOf(cell.begin(), cell.end()),
                       "stopping after " + std::to_string(kMaxReportedCells) +
                           " malformed cells; the rest of the file is not read");
          return std::nullopt;
        }
        continue;
      }
      actions += parsed->second ? 2 : 1;
      if (actions > maxActions) {
        diags.report(DiagKind::OpLimitExceeded, parsed->range,
                     "the CSV holds more than " + std::to_string(maxActions) +
                         " actions, the op limit; this cell goes past it")
            .note("raise the limit with --max-ops if this is intended");
        return std::nullopt;
      }
      row.push_back(*parsed);
    }
  }
  if (malformed != 0 || communication)
    return std::nullopt;
  if (trailingBlank) {
    // Python's csv module reads a blank line as a row with no cells, and
    // PyTorch's _load_csv makes it a rank: the file would need one more process
    // than it has rows of actions, and PyTorch refuses it ("Schedule has
    // incorrect number of ranks"). Refused here too, rather than guessed at.
    size_t blankRows = 0;
    for (auto it = csv.rows.rbegin(); it != csv.rows.rend() && it->empty(); ++it)
      ++blankRows;
    size_t firstBlankRank = csv.rows.size() - blankRows;
    diags
        .report(DiagKind::CsvTrailingBlankLine, rangeOf(trailingBlank, trailingBlank),
                "the CSV ends with a blank line, which PyTorch's loader reads as rank " +
                    std::to_string(firstBlankRank) + " with no actions")
        .note("PyTorch then expects " + std::to_string(csv.rows.size()) +
              " ranks and refuses the file when run on " + std::to_string(firstBlankRank) +
              "; delete the blank line at the end of the file, or, if the last rank is "
              "meant to be idle, write an empty cell on its line (a lone ',')");
    return std::nullopt;
  }
  return csv;
}

} // namespace pipec
