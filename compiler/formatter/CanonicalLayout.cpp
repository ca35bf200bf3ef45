// The layout rules of CanonicalLayout.h, applied in one pass over the tokens. What goes
// between two tokens (nothing, a space, a line break) is decided from the two
// tokens, the statement state and the author's line breaks only, which is what
// makes formatting idempotent.
#include "formatter/CanonicalLayout.h"

#include <algorithm>

namespace pipec::formatter {

namespace {

constexpr unsigned kIndent = 2;
constexpr unsigned kContinuation = 4;

// Display width of UTF-8 text: one column per code point.
unsigned widthOf(llvm::StringRef text) {
  return unsigned(std::count_if(text.begin(), text.end(),
                                [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

class CanonicalLayout {
public:
  explicit CanonicalLayout(const std::vector<Token> &tokens) : tokens_(tokens) { analyse(); }

  std::string run() {
    for (size_t i = 0; i < tokens_.size(); ++i)
      emit(i);
    if (!out_.empty())
      out_ += "\n";
    return std::move(out_);
  }

private:
  enum class Brace { None, Block, List };

  const std::vector<Token> &tokens_;
  std::vector<size_t> match_;       // for a brace: the index of its partner
  std::vector<Brace> brace_;        // what a `{` or `}` delimits
  std::vector<bool> unary_;         // a `-` or `!` that is a prefix operator
  std::vector<size_t> previous_;    // the last non-comment token before, or npos
  std::vector<bool> oneLineBlock_;  // per open block, innermost last
  std::vector<bool> slotColon_;     // the `:` of a table entry (`at 0:`, `fill:`)
  std::string out_;
  unsigned column_ = 0;
  bool midStatement_ = false;

  static constexpr size_t npos = size_t(-1);

  const Token &tok(size_t i) const { return tokens_[i]; }
  bool isBlockOpen(size_t i) const { return brace_[i] == Brace::Block && tok(i).is("{"); }
  bool isBlockClose(size_t i) const { return brace_[i] == Brace::Block && tok(i).is("}"); }

  void analyse() {
    size_t n = tokens_.size();
    match_.assign(n, npos);
    brace_.assign(n, Brace::None);
    unary_.assign(n, false);
    previous_.assign(n, npos);
    slotColon_.assign(n, false);
    std::vector<size_t> open;
    std::vector<bool> tableBody;       // per open brace: the body of a `table`
    size_t statementFirst = npos;      // the first token of the current statement
    bool inSlotHead = false;           // between `at`/`fill` and its `:`
    int parens = 0, questions = 0;
    size_t last = npos;
    for (size_t i = 0; i < n; ++i) {
      const Token &t = tok(i);
      previous_[i] = last;
      if (t.isComment())
        continue;
      bool boundary = last == npos || tok(last).is(";") || tok(last).is("{") || tok(last).is("}");
      if (boundary) {
        statementFirst = i;
        if (!tableBody.empty() && tableBody.back() && (t.is("at") || t.is("fill"))) {
          inSlotHead = true;
          parens = questions = 0;
        }
      }
      if (inSlotHead) {
        if (t.is("(")) ++parens;
        else if (t.is(")")) --parens;
        else if (t.is("?")) ++questions;
        else if (t.is(":") && parens == 0 && questions-- == 0) {
          slotColon_[i] = true;
          inSlotHead = false;
        }
      }
      if (t.is("{"))
        tableBody.push_back(statementFirst != npos && tok(statementFirst).is("table") &&
                            !(last != npos && tok(last).is("in")));
      else if (t.is("}") && !tableBody.empty())
        tableBody.pop_back();
      if (t.is("{")) {
        // `in {1, 2, 4}` is a list of values, not a block.
        brace_[i] = last != npos && tok(last).is("in") ? Brace::List : Brace::Block;
        open.push_back(i);
      } else if (t.is("}") && !open.empty()) {
        match_[i] = open.back();
        match_[open.back()] = i;
        brace_[i] = brace_[open.back()];
        open.pop_back();
      } else if (t.is("!")) {
        unary_[i] = true;
      } else if (t.is("-")) {
        bool afterOperand = last != npos && (tok(last).kind == TokenKind::Word ||
                                             tok(last).kind == TokenKind::Number ||
                                             tok(last).is(")") || tok(last).is("]"));
        unary_[i] = !afterOperand;
      }
      last = i;
    }
  }

  // Whether a space separates two tokens on one line.
  bool spaced(size_t p, size_t i) const {
    const Token &a = tok(p), &b = tok(i);
    if (b.is(";") || b.is(",") || b.is(")") || b.is("]") || b.is("["))
      return false;
    if (a.is("(") || a.is("["))
      return false;
    if (unary_[p])
      return false;
    if (b.is("("))
      return a.kind != TokenKind::Word;
    if (a.is("..") || b.is(".."))
      return false;
    if (b.is(":") && previous_[p] != npos && tok(previous_[p]).is("flow"))
      return false;
    if (b.is(":") && slotColon_[i])
      return false;
    if (brace_[p] == Brace::List && a.is("{"))
      return false;
    if (brace_[i] == Brace::List && b.is("}"))
      return false;
    if (isBlockOpen(p) && b.is("}"))
      return false; // {}
    return true;
  }

  // The separator between two tokens when both are on one line. Around a block
  // comment the author's choice is kept.
  std::string flatSeparator(size_t i) const {
    if (tok(i).isComment() || tok(i - 1).isComment())
      return tok(i).spaceBefore ? " " : "";
    return spaced(i - 1, i) ? " " : "";
  }

  // Columns that tokens [from, to] take on one line; npos if the author did not
  // write them on one line.
  size_t flatWidth(size_t from, size_t to) const {
    size_t width = widthOf(tok(from).text);
    for (size_t i = from + 1; i <= to; ++i) {
      const Token &t = tok(i);
      if (t.newlinesBefore > 0 || t.kind == TokenKind::LineComment ||
          t.text.contains('\n'))
        return npos;
      width += widthOf(flatSeparator(i)) + widthOf(t.text);
    }
    return width;
  }

  // Whether the block opening at `i` stays on one line at the current column:
  // the block and the `else` branches that follow it on the author's line must fit.
  bool staysOnOneLine(size_t i) const {
    if (!oneLineBlock_.empty() && oneLineBlock_.back())
      return true;
    size_t close = match_[i];
    if (close == npos)
      return false;
    size_t width = flatWidth(i, close);
    if (width == npos)
      return false;
    for (size_t j = close + 1; j < tokens_.size() && tok(j).is("else") &&
                               tok(j).newlinesBefore == 0;) {
      size_t k = j; // the else branch's `{`
      while (k < tokens_.size() && !isBlockOpen(k))
        ++k;
      if (k == tokens_.size())
        break;
      size_t head = flatWidth(j, k);
      if (head == npos)
        break;
      width += 1 + head;
      size_t branch = match_[k] == npos ? npos : flatWidth(k, match_[k]);
      if (branch == npos)
        break;
      width += branch - 1; // `{` was counted in head
      j = match_[k] + 1;
    }
    return column_ + width <= kMaxColumns;
  }

  void newline(unsigned indent, bool blank) {
    while (!out_.empty() && out_.back() == ' ')
      out_.pop_back();
    out_ += blank ? "\n\n" : "\n";
    out_.append(indent, ' ');
    column_ = indent;
  }

  unsigned depth() const { return unsigned(oneLineBlock_.size()); }

  void separate(size_t i) {
    const Token &t = tok(i), &prev = tok(i - 1);
    bool inFlatBlock = !oneLineBlock_.empty() && oneLineBlock_.back();
    // A comment the author put on the line of the code before stays there; a
    // line comment keeps its gap, so that hand-aligned comments stay aligned.
    if (t.isComment() && t.newlinesBefore == 0) {
      unsigned gap = t.kind == TokenKind::LineComment ? std::max(1u, t.gapWidth)
                                                      : unsigned(t.spaceBefore);
      out_.append(gap, ' ');
      column_ += gap;
      return;
    }
    unsigned indent = depth() * kIndent;
    bool closesLine = isBlockClose(i) && !inFlatBlock;
    if (closesLine && indent >= kIndent)
      indent -= kIndent;
    size_t q = previous_[i];
    bool statementEnd = q != npos && !inFlatBlock &&
                        (tok(q).is(";") || isBlockOpen(q) || (isBlockClose(q) && !t.is("else")));
    if (prev.kind == TokenKind::LineComment || statementEnd || closesLine || t.isComment()) {
      bool boundary = statementEnd || !midStatement_;
      bool blank = boundary && t.newlinesBefore >= 2 && !isBlockOpen(i - 1) && !closesLine;
      newline(boundary ? indent : indent + kContinuation, blank);
      return;
    }
    // A break the author made inside a statement, except before `{` and `else`.
    if (t.newlinesBefore > 0 && !isBlockOpen(i) && !t.is("else")) {
      newline(indent + kContinuation, false);
      return;
    }
    std::string separator = flatSeparator(i);
    out_ += separator;
    column_ += unsigned(separator.size());
  }

  void emit(size_t i) {
    const Token &t = tok(i);
    if (i > 0)
      separate(i);
    if (isBlockClose(i) && !oneLineBlock_.empty())
      oneLineBlock_.pop_back();
    bool opens = isBlockOpen(i);
    bool flat = opens && staysOnOneLine(i);
    out_ += t.text.str();
    size_t lastBreak = t.text.rfind('\n');
    column_ = lastBreak == llvm::StringRef::npos ? column_ + widthOf(t.text)
                                                 : widthOf(t.text.substr(lastBreak + 1));
    if (opens)
      oneLineBlock_.push_back(flat);
    if (!t.isComment())
      midStatement_ = !(t.is(";") || isBlockOpen(i) || isBlockClose(i));
  }
};

} // namespace

std::string layoutTokens(const std::vector<Token> &tokens) { return CanonicalLayout(tokens).run(); }

} // namespace pipec::formatter
