// The token stream `pipec fmt` lays out: every token of the file, comments
// included, with what separated it from the token before (newlines, spaces).
// Lexed by the grammar's own lexer, so the formatter and the parser never
// disagree on where a token ends.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace pipec::formatter {

enum class TokenKind {
  Word,         // identifiers
  Keyword,      // schedule, rank, for, in, ...
  Number,       // INT and FLOAT
  String,
  Punct,        // operators and brackets
  LineComment,  // text without its line end (trailing blanks removed)
  BlockComment, // text as written
};

// 40 bytes: a 12 MiB input can hold millions of tokens.
struct Token {
  TokenKind kind;
  llvm::StringRef text;        // points into the lexed source, which must outlive it
  unsigned line = 0;           // 1-based line of the first character in the source
  unsigned newlinesBefore = 0; // line ends between the previous token and this one
  bool spaceBefore = false;    // any whitespace between the previous token and this one
  unsigned gapWidth = 0;       // blanks before it on its own line (after the last line end)

  bool is(llvm::StringRef s) const {
    return kind != TokenKind::String && !isComment() && text == s;
  }
  bool isComment() const {
    return kind == TokenKind::LineComment || kind == TokenKind::BlockComment;
  }
};

// Lexes `source` (valid UTF-8); the tokens point into it. Returns false, with `error` set, on a character
// or token the lexer rejects; the parser reports those with locations.
bool lexForFormat(llvm::StringRef source, std::vector<Token> &tokens, std::string &error);

// The tokens as a comparable sequence: text of each, comments included, one per line.
// Two sources with equal sequences differ only in layout.
std::string tokenSignature(const std::vector<Token> &tokens);

} // namespace pipec::formatter
