#include "syntax/SyntaxErrors.h"

#include "PipeLexer.h"
#include "PipeParser.h"

namespace pipec {

using pipegen::PipeParser;

// How a token type reads in a message: keywords and punctuation quoted, the rest named.
static std::string describeTokenType(size_t type, const antlr4::dfa::Vocabulary &vocab) {
  switch (type) {
  case antlr4::Token::EOF: return "end of file";
  case PipeParser::ID: return "identifier";
  case PipeParser::INT: return "integer";
  case PipeParser::FLOAT: return "number";
  case PipeParser::STRING: return "string";
  default: break;
  }
  std::string literal = vocab.getLiteralName(type);
  return literal.empty() ? vocab.getSymbolicName(type) : literal;
}

static std::string describeToken(antlr4::Token *token) {
  if (token->getType() == antlr4::Token::EOF)
    return "end of file";
  return "'" + escapeControlCharacters(token->getText()) + "'";
}

void LexerErrorListener::syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *,
                                     size_t, size_t, const std::string &,
                                     std::exception_ptr) {
  if (diags_.stopped())
    return; // past the error limit: nothing more is shown
  auto *lexer = static_cast<antlr4::Lexer *>(recognizer);
  size_t start = lexer->tokenStartCharIndex;
  llvm::SMRange at = text_.rangeOf(start, start);
  std::string character(at.Start.getPointer(), at.End.getPointer());
  diags_.report(DiagKind::UnexpectedCharacter, at,
                "unexpected character '" + escapeControlCharacters(character) + "'");
}

llvm::SMRange SyntaxErrorStrategy::rangeOf(antlr4::Token *token) const {
  return token->getType() == antlr4::Token::EOF
             ? text_.rangeOf(token->getStartIndex(), token->getStartIndex() - 1)
             : text_.rangeOf(token->getStartIndex(), token->getStopIndex());
}

void SyntaxErrorStrategy::syntaxError(antlr4::Parser *parser, antlr4::Token *at,
                                      std::string message) {
  // At the end of the file, an open '{' is the cause worth naming.
  if (at->getType() == antlr4::Token::EOF && reportUnclosedBrace(parser))
    return;
  ++errors_;
  diags_.report(DiagKind::SyntaxError, rangeOf(at), std::move(message));
}

// --- targeted errors ------------------------------------------------------------

// A keyword's text, or "" for a token type that is not a word ('{', ID, ...).
static std::string keywordText(size_t type, const antlr4::dfa::Vocabulary &vocab) {
  std::string literal = vocab.getLiteralName(type);
  if (literal.size() < 3 || literal.front() != '\'' ||
      !isalpha(static_cast<unsigned char>(literal[1])))
    return "";
  return literal.substr(1, literal.size() - 2);
}

// Like closestMatch, but two swapped neighbours ("lte", "fro") count as one
// edit: the commonest slip in typing a short keyword.
static std::string closestKeyword(llvm::StringRef word, llvm::ArrayRef<llvm::StringRef> keywords) {
  for (llvm::StringRef keyword : keywords) {
    if (keyword.size() != word.size())
      continue;
    size_t first = 0;
    while (first < word.size() && word[first] == keyword[first])
      ++first;
    if (first + 1 < word.size() && word[first] == keyword[first + 1] &&
        word[first + 1] == keyword[first] &&
        word.drop_front(first + 2) == keyword.drop_front(first + 2))
      return keyword.str();
  }
  return closestMatch(word, keywords);
}

bool SyntaxErrorStrategy::reportTargeted(antlr4::Parser *parser, antlr4::Token *offending) {
  return reportRankKeyword(parser, offending) || reportMisspelledKeyword(parser, offending) ||
         reportMisspelledStatement(parser);
}

// `microbatch 8;`, `place stage s -> rnak s;`: a word where keywords are expected,
// close to one of them.
bool SyntaxErrorStrategy::reportMisspelledKeyword(antlr4::Parser *parser,
                                                  antlr4::Token *offending) {
  if (offending->getType() != PipeParser::ID)
    return false;
  antlr4::misc::IntervalSet expected = parser->getExpectedTokens();
  if (expected.contains(static_cast<size_t>(PipeParser::ID)))
    return false; // a name fits here: the word is not the mistake
  std::vector<std::string> keywords;
  for (ssize_t type : expected.toList())
    if (std::string keyword = keywordText(type, parser->getVocabulary()); !keyword.empty())
      keywords.push_back(keyword);
  std::vector<llvm::StringRef> candidates(keywords.begin(), keywords.end());
  std::string word = offending->getText();
  std::string meant = closestKeyword(word, candidates);
  if (meant.empty())
    return false;
  ++errors_;
  llvm::SMRange at = rangeOf(offending);
  diags_.report(DiagKind::MisspelledKeyword, at,
                "'" + escapeControlCharacters(word) + "' is not a keyword; did you mean '" + meant +
                    "'?")
      .fixit(at, meant);
  return true;
}

// `lte x = 1;`, `fro i in 0..4 { }`: a statement that begins with a word close to
// a statement keyword parses as an op call, and fails at the word after it.
bool SyntaxErrorStrategy::reportMisspelledStatement(antlr4::Parser *parser) {
  antlr4::Token *word = parser->getTokenStream()->LT(-1);
  if (!word || word->getType() != PipeParser::ID || word->getText().size() < 2)
    return false; // one letter: an op name such as I, not a keyword cut short
  bool startsStatement = false;
  for (antlr4::RuleContext *ctx = parser->getContext(); ctx && !startsStatement;
       ctx = dynamic_cast<antlr4::RuleContext *>(ctx->parent))
    if (auto *op = dynamic_cast<PipeParser::OpStatementContext *>(ctx))
      startsStatement = op->getStart() == word;
  if (!startsStatement)
    return false;
  static const llvm::StringRef kStatementKeywords[] = {"let", "for", "if", "else"};
  std::string meant = closestKeyword(word->getText(), kStatementKeywords);
  if (meant.empty())
    return false;
  ++errors_;
  skipStatement_ = true; // what follows the word is that statement's, not errors of its own
  llvm::SMRange at = rangeOf(word);
  diags_.report(DiagKind::MisspelledKeyword, at,
                "'" + escapeControlCharacters(word->getText()) +
                    "' is not a keyword; did you mean '" + meant + "'?")
      .fixit(at, meant);
  return true;
}

// `let x = rank + 1;` inside `rank r { }`: the keyword where its variable is meant.
bool SyntaxErrorStrategy::reportRankKeyword(antlr4::Parser *parser, antlr4::Token *offending) {
  if (offending->getType() != PipeParser::RANK ||
      !parser->getExpectedTokens().contains(static_cast<size_t>(PipeParser::ID)))
    return false;
  for (antlr4::RuleContext *ctx = parser->getContext(); ctx;
       ctx = dynamic_cast<antlr4::RuleContext *>(ctx->parent)) {
    auto *decl = dynamic_cast<PipeParser::RankDeclContext *>(ctx);
    if (!decl)
      continue;
    auto *head = dynamic_cast<PipeParser::GenericRankContext *>(decl->rankHead());
    if (!head || !head->var)
      return false; // `rank 3 { }` has no rank variable to suggest
    ++errors_;
    llvm::SMRange at = rangeOf(offending);
    diags_.report(DiagKind::RankKeywordAsValue, at,
                  "'rank' is a keyword; the rank variable here is '" + head->var->getText() + "'")
        .note(rangeOf(head->var), "declared here")
        .fixit(at, head->var->getText());
    return true;
  }
  return false;
}

// The innermost '{' still open at the end of the file, reported once.
bool SyntaxErrorStrategy::reportUnclosedBrace(antlr4::Parser *parser) {
  if (reportedUnclosedBrace_)
    return true;
  antlr4::TokenStream *tokens = parser->getTokenStream();
  std::vector<antlr4::Token *> open;
  antlr4::Token *end = nullptr;
  for (size_t i = 0; i < tokens->size(); ++i) {
    antlr4::Token *token = tokens->get(i);
    if (token->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
      continue;
    if (token->getType() == PipeParser::LBRACE)
      open.push_back(token);
    else if (token->getType() == PipeParser::RBRACE && !open.empty())
      open.pop_back();
    else if (token->getType() == antlr4::Token::EOF)
      end = token;
  }
  if (open.empty() || !end)
    return false;
  reportedUnclosedBrace_ = true;
  ++errors_;
  diags_.report(DiagKind::UnclosedBrace, rangeOf(open.back()), "this '{' is never closed")
      .note(rangeOf(end), "the file ends here; expected '}'");
  return true;
}

void SyntaxErrorStrategy::recover(antlr4::Parser *parser, std::exception_ptr e) {
  if (!skipStatement_) {
    DefaultErrorStrategy::recover(parser, e);
    return;
  }
  skipStatement_ = false;
  // Skip to the statement's ';', or past the block it opens (and an else's).
  antlr4::TokenStream *tokens = parser->getTokenStream();
  int depth = 0;
  while (tokens->LA(1) != antlr4::Token::EOF) {
    size_t type = tokens->LA(1);
    if (depth == 0 && type == PipeParser::RBRACE)
      return; // the end of the enclosing block
    parser->consume();
    if (type == PipeParser::LBRACE)
      ++depth;
    else if (type == PipeParser::RBRACE && --depth == 0 && tokens->LA(1) != PipeParser::ELSE)
      return;
    else if (type == PipeParser::SEMI && depth == 0)
      return;
  }
}

void SyntaxErrorStrategy::finish(antlr4::Parser *parser) {
  if (!reportedUnclosedBrace_)
    reportUnclosedBrace(parser);
}

std::string SyntaxErrorStrategy::expectedText(antlr4::Parser *parser) {
  antlr4::misc::IntervalSet expected = parser->getExpectedTokens();
  std::vector<std::string> names;
  // Where a schedule may begin, imports and definitions may too; the schedule is
  // what a file is missing, so only it is named.
  bool scheduleExpected = expected.contains(static_cast<size_t>(PipeParser::SCHEDULE));
  for (ssize_t type : expected.toList())
    if (type != PipeParser::AMPAMP && // an error production, never what we suggest
        !(scheduleExpected && (type == PipeParser::IMPORT || type == PipeParser::DEF ||
                               type == static_cast<ssize_t>(antlr4::Token::EOF))))
      names.push_back(describeTokenType(type, parser->getVocabulary()));
  if (names.empty())
    return "";
  if (names.size() > 6)
    return "";
  std::string text = "expected ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

// Clang's heuristic: ';' is expected and the next token is on a later line, or is
// something that starts a new statement or closes the block.
bool SyntaxErrorStrategy::looksLikeMissingSemicolon(antlr4::Parser *parser) {
  if (!parser->getExpectedTokens().contains(static_cast<size_t>(PipeParser::SEMI)))
    return false;
  antlr4::Token *next = parser->getCurrentToken();
  antlr4::Token *previous = parser->getTokenStream()->LT(-1);
  if (!previous)
    return false;
  if (next->getType() == antlr4::Token::EOF || next->getLine() > previous->getLine())
    return true;
  switch (next->getType()) {
  case PipeParser::LET: case PipeParser::FOR: case PipeParser::IF: case PipeParser::RANK:
  case PipeParser::REQUIRE: case PipeParser::PLACE: case PipeParser::FLOW:
  case PipeParser::RANKS: case PipeParser::STAGES: case PipeParser::MICROBATCHES:
  case PipeParser::COPIES: case PipeParser::COSTS: case PipeParser::RBRACE:
    return true;
  default:
    return false;
  }
}

void SyntaxErrorStrategy::reportMissingSemicolon(antlr4::Parser *parser) {
  if (reportMisspelledStatement(parser)) {
    skipStatement_ = false; // the ';' taken as missing ends the statement already
    return;
  }
  antlr4::Token *previous = parser->getTokenStream()->LT(-1);
  ++errors_;
  llvm::SMRange after = text_.rangeOf(previous->getStopIndex() + 1, previous->getStopIndex());
  diags_.report(DiagKind::ExpectedSemicolon, after,
                "expected ';' after '" + escapeControlCharacters(previous->getText()) + "'")
      .fixit(after, ";");
}

void SyntaxErrorStrategy::sync(antlr4::Parser *parser) {
  // Leave a missing ';' for match() to report, instead of deleting the next token.
  if (!inErrorRecoveryMode(parser) && looksLikeMissingSemicolon(parser))
    return;
  // Before the schedule, imports and definitions are optional: a token that is
  // none of them is left for match('schedule') to report as a missing schedule.
  if (parser->getContext()->getRuleIndex() == PipeParser::RuleFile)
    return;
  DefaultErrorStrategy::sync(parser);
}

antlr4::Token *SyntaxErrorStrategy::recoverInline(antlr4::Parser *parser) {
  if (!inErrorRecoveryMode(parser) && looksLikeMissingSemicolon(parser)) {
    beginErrorCondition(parser);
    reportMissingSemicolon(parser);
    return getMissingSymbol(parser); // pretend the ';' was there and go on
  }
  return DefaultErrorStrategy::recoverInline(parser);
}

void SyntaxErrorStrategy::reportNoViableAlternative(antlr4::Parser *parser,
                                                    const antlr4::NoViableAltException &e) {
  antlr4::Token *offending = e.getOffendingToken();
  if (reportTargeted(parser, offending))
    return;
  std::string expected = expectedText(parser);
  syntaxError(parser, offending,
              "unexpected " + describeToken(offending) + (expected.empty() ? "" : "; " + expected));
}

void SyntaxErrorStrategy::reportInputMismatch(antlr4::Parser *parser,
                                              const antlr4::InputMismatchException &e) {
  antlr4::Token *offending = e.getOffendingToken();
  if (reportTargeted(parser, offending))
    return;
  std::string expected = expectedText(parser);
  syntaxError(parser, offending,
              (expected.empty() ? std::string("unexpected") : expected + ", found") + " " +
                  describeToken(offending));
}

void SyntaxErrorStrategy::reportFailedPredicate(antlr4::Parser *parser,
                                                const antlr4::FailedPredicateException &e) {
  syntaxError(parser, e.getOffendingToken(),
              "unexpected " + describeToken(e.getOffendingToken()));
}

void SyntaxErrorStrategy::reportUnwantedToken(antlr4::Parser *parser) {
  if (inErrorRecoveryMode(parser))
    return;
  beginErrorCondition(parser);
  antlr4::Token *offending = parser->getCurrentToken();
  if (reportTargeted(parser, offending))
    return;
  std::string expected = expectedText(parser);
  syntaxError(parser, offending,
              "unexpected " + describeToken(offending) + (expected.empty() ? "" : "; " + expected));
}

void SyntaxErrorStrategy::reportMissingToken(antlr4::Parser *parser) {
  if (inErrorRecoveryMode(parser))
    return;
  beginErrorCondition(parser);
  if (parser->getExpectedTokens().contains(static_cast<size_t>(PipeParser::SEMI))) {
    reportMissingSemicolon(parser);
    return;
  }
  antlr4::Token *offending = parser->getCurrentToken();
  if (reportTargeted(parser, offending))
    return;
  syntaxError(parser, offending, expectedText(parser) + " before " + describeToken(offending));
}

} // namespace pipec
