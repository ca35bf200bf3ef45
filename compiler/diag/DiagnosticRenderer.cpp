// Text rendering: llvm::SMDiagnostic draws the message, the source line, the caret,
// ranges and fix-its. pipec chooses what line it is given: the line as pipec counts
// lines ("\r" alone ends one too), clipped around the caret when it is long, with
// control characters escaped. The columns of the caret, ranges and fix-its are
// moved to match.
#include "diag/DiagnosticRenderer.h"

#include "llvm/Support/raw_ostream.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>

namespace pipec {

namespace {

// A longer line is shown as a window of about this many bytes around the caret.
constexpr size_t kMaxShownColumns = 80;
constexpr size_t kClipMarkSize = 3; // "..."

llvm::SourceMgr::DiagKind toLLVM(Severity severity) {
  switch (severity) {
  case Severity::Error: return llvm::SourceMgr::DK_Error;
  case Severity::Warning: return llvm::SourceMgr::DK_Warning;
  case Severity::Note: return llvm::SourceMgr::DK_Note;
  }
  return llvm::SourceMgr::DK_Error;
}

// The part of a source line that is shown, and where each of its bytes lands.
class ShownLine {
public:
  ShownLine(llvm::StringRef line, size_t caret) {
    size_t begin = 0, end = line.size();
    if (line.size() > kMaxShownColumns) {
      begin = caret > kMaxShownColumns / 2 ? caret - kMaxShownColumns / 2 : 0;
      end = std::min(line.size(), begin + kMaxShownColumns);
      begin = end - kMaxShownColumns;
    }
    begin_ = begin;
    end_ = end;
    bool clippedLeft = begin > 0, clippedRight = end < line.size();
    column_.reserve(end - begin + 1);
    for (size_t i = begin; i < end; ++i) {
      column_.push_back(text_.size());
      // A clip mark takes the place of the first or last three bytes, one dot
      // each; the caret is never under it.
      if ((clippedLeft && i < begin + kClipMarkSize) || (clippedRight && i + kClipMarkSize >= end))
        text_ += '.';
      else if (line[i] == '\t')
        text_ += '\t'; // SMDiagnostic expands tabs and keeps the caret aligned
      else
        text_ += escapeControlCharacters(line.substr(i, 1));
    }
    column_.push_back(text_.size());
  }

  const std::string &text() const { return text_; }
  // The shown column of byte `offset` of the line, clamped to the window.
  unsigned columnOf(size_t offset) const {
    offset = std::clamp(offset, begin_, end_);
    return static_cast<unsigned>(column_[offset - begin_]);
  }
  bool covers(size_t first, size_t last) const { return last >= begin_ && first <= end_; }

private:
  std::string text_;
  size_t begin_ = 0, end_ = 0;
  std::vector<size_t> column_; // per byte of [begin_, end_], and one past the end
};

class TextPrinter {
public:
  TextPrinter(const DiagnosticEngine &engine, llvm::raw_ostream &out, bool color)
      : engine_(engine), sm_(engine.sources()), out_(out), color_(color) {}

  void print(llvm::SMRange at, Severity severity, const std::string &message,
             llvm::ArrayRef<DiagFixIt> fixits) {
    std::string text = escapeControlCharacters(message);
    SourcePosition pos = engine_.locate(at.Start);
    if (pos.buffer == 0) {
      // No location (command-line problems): "pipec: error: ..." like a driver.
      llvm::SMDiagnostic diag(sm_, llvm::SMLoc(), "", -1, -1, toLLVM(severity), text, "", {},
                              {});
      diag.print(severity == Severity::Note ? "" : "pipec", out_, color_, /*ShowKindLabel=*/true);
      return;
    }
    printLocation(pos);

    const char *lineStart = at.Start.getPointer() - (pos.column - 1);
    auto offsetOf = [&](llvm::SMLoc loc) -> size_t {
      return static_cast<size_t>(std::clamp(loc.getPointer() - lineStart, ptrdiff_t(0),
                                            ptrdiff_t(pos.lineText.size())));
    };
    ShownLine shown(pos.lineText, pos.column - 1);
    const std::string &line = shown.text();

    // Ranges are clipped to the line, as llvm::SourceMgr does.
    llvm::SmallVector<std::pair<unsigned, unsigned>, 1> ranges;
    if (at.End.isValid() && at.End.getPointer() > at.Start.getPointer())
      ranges.push_back({shown.columnOf(offsetOf(at.Start)), shown.columnOf(offsetOf(at.End))});

    // SMDiagnostic places fix-its by pointer, relative to its location minus its
    // column: hand it pointers into the shown line.
    unsigned caretColumn = shown.columnOf(pos.column - 1);
    llvm::SMLoc shownLoc = llvm::SMLoc::getFromPointer(line.data() + caretColumn);
    llvm::SmallVector<llvm::SMFixIt, 1> shownFixits;
    for (const DiagFixIt &fixit : fixits) {
      const char *first = fixit.range.Start.getPointer(), *last = fixit.range.End.getPointer();
      if (first < lineStart || last > lineStart + pos.lineText.size() ||
          !shown.covers(first - lineStart, last - lineStart))
        continue;
      auto shownPointer = [&](const char *p) {
        return llvm::SMLoc::getFromPointer(line.data() + shown.columnOf(p - lineStart));
      };
      shownFixits.emplace_back(llvm::SMRange(shownPointer(first), shownPointer(last)),
                               escapeControlCharacters(fixit.replacement));
    }

    // No file name: the location was printed above, with the real line and column.
    llvm::SMDiagnostic diag(sm_, shownLoc, "", static_cast<int>(pos.line),
                            static_cast<int>(caretColumn), toLLVM(severity), text, line, ranges,
                            shownFixits);
    diag.print(nullptr, out_, color_, /*ShowKindLabel=*/true);
  }

private:
  // "file:line:col: " in bold, as SMDiagnostic prints it.
  void printLocation(const SourcePosition &pos) {
    llvm::WithColor bold(out_, llvm::raw_ostream::SAVEDCOLOR, /*Bold=*/true, /*BG=*/false,
                         color_ ? llvm::ColorMode::Auto : llvm::ColorMode::Disable);
    llvm::StringRef name = sm_.getMemoryBuffer(pos.buffer)->getBufferIdentifier();
    bold << (name == "-" ? llvm::StringRef("<stdin>") : name) << ':' << pos.line << ':'
         << pos.column << ": ";
  }

  const DiagnosticEngine &engine_;
  llvm::SourceMgr &sm_;
  llvm::raw_ostream &out_;
  bool color_;
};

} // namespace

void renderText(const DiagnosticEngine &engine, llvm::raw_ostream &out, bool color) {
  TextPrinter printer(engine, out, color);
  for (const Diagnostic &d : engine.diagnostics()) {
    printer.print(d.range, d.severity, d.message + " [" + diagInfo(d.kind).name + "]", d.fixits);
    for (const DiagNote &n : d.notes)
      printer.print(n.range, Severity::Note, n.message, {});
    if (d.repeats > 0)
      printer.print({}, Severity::Note,
                    "the same problem occurs " + std::to_string(d.repeats) +
                        " more time(s) at this location",
                    {});
  }
}

} // namespace pipec
