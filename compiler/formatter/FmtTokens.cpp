// The grammar's lexer, off the parser: comments come on the hidden channel and
// whitespace is recovered from the gaps between tokens.
#include "formatter/FmtTokens.h"

#include "syntax/SourceText.h"

#include "PipeLexer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ConvertUTF.h"

namespace pipec::formatter {

using pipegen::PipeLexer;

namespace {

// Collects the lexer's complaints instead of printing them.
class ErrorCollector : public antlr4::BaseErrorListener {
public:
  std::string first;
  void syntaxError(antlr4::Recognizer *, antlr4::Token *, size_t line, size_t column,
                   const std::string &message, std::exception_ptr) override {
    if (first.empty())
      first = std::to_string(line) + ":" + std::to_string(column + 1) + ": " + message;
  }
};

// The lexer's input decoded to UTF-32 in a buffer of exactly its size (4 bytes
// per code point; ANTLR's own decoding peaks near 20 per input byte), as the
// parser does it. The source is valid UTF-8: the parser checked it.
class DecodedInput : public antlr4::ANTLRInputStream {
public:
  explicit DecodedInput(llvm::StringRef utf8) {
    size_t codePoints = llvm::count_if(utf8, [](char c) { return (c & 0xC0) != 0x80; });
    _data.resize(codePoints);
    if (codePoints == 0)
      return;
    const llvm::UTF8 *from = reinterpret_cast<const llvm::UTF8 *>(utf8.begin());
    llvm::UTF32 *to = reinterpret_cast<llvm::UTF32 *>(&_data[0]);
    llvm::ConvertUTF8toUTF32(&from, reinterpret_cast<const llvm::UTF8 *>(utf8.end()), &to,
                             to + codePoints, llvm::lenientConversion);
  }
};

TokenKind kindOf(size_t type) {
  switch (type) {
  case PipeLexer::ID: return TokenKind::Word;
  case PipeLexer::INT:
  case PipeLexer::FLOAT: return TokenKind::Number;
  case PipeLexer::STRING: return TokenKind::String;
  case PipeLexer::LINE_COMMENT: return TokenKind::LineComment;
  case PipeLexer::BLOCK_COMMENT: return TokenKind::BlockComment;
  default: break;
  }
  return TokenKind::Punct; // keywords are told apart by their letters, below
}

} // namespace

bool lexForFormat(llvm::StringRef source, std::vector<Token> &tokens, std::string &error) {
  SourceText text(source);
  DecodedInput input(source);
  PipeLexer lexer(&input);
  ErrorCollector errors;
  lexer.removeErrorListeners();
  lexer.addErrorListener(&errors);
  const char *previousEnd = source.begin();
  unsigned line = 1;
  for (std::unique_ptr<antlr4::Token> token = lexer.nextToken();
       token->getType() != antlr4::Token::EOF; token = lexer.nextToken()) {
    size_t type = token->getType();
    if (type == PipeLexer::UNTERMINATED_STRING || type == PipeLexer::UNTERMINATED_COMMENT) {
      error = "unterminated " +
              std::string(type == PipeLexer::UNTERMINATED_STRING ? "string" : "comment");
      return false;
    }
    const char *begin = text.pointerAt(token->getStartIndex());
    const char *end = text.pointerAt(token->getStopIndex() + 1);
    Token out;
    out.kind = kindOf(type);
    out.text = llvm::StringRef(begin, size_t(end - begin));
    if (out.kind == TokenKind::Punct && !out.text.empty() && std::isalpha(out.text[0]))
      out.kind = TokenKind::Keyword;
    if (out.kind == TokenKind::LineComment)
      out.text = out.text.rtrim();
    llvm::StringRef gap(previousEnd, begin - previousEnd);
    // "\r\n" is one line end, a lone "\r" another.
    for (size_t i = 0; i < gap.size(); ++i)
      if (gap[i] == '\n' || (gap[i] == '\r' && (i + 1 == gap.size() || gap[i + 1] != '\n')))
        ++out.newlinesBefore;
    out.spaceBefore = !gap.empty();
    out.gapWidth = unsigned(gap.size() - (gap.find_last_of("\r\n") + 1));
    line += out.newlinesBefore;
    out.line = line;
    for (char c : out.text) // block comments span lines
      line += c == '\n';
    tokens.push_back(std::move(out));
    previousEnd = end;
  }
  if (!errors.first.empty()) {
    error = errors.first;
    return false;
  }
  return true;
}

std::string tokenSignature(const std::vector<Token> &tokens) {
  std::string signature;
  for (const Token &token : tokens) {
    signature += token.text;
    signature += '\n';
  }
  return signature;
}

} // namespace pipec::formatter
