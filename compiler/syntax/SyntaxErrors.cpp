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

void SyntaxErrorStrategy::syntaxError(antlr4::Token *at, std::string message) {
  ++errors_;
  llvm::SMRange range = at->getType() == antlr4::Token::EOF
                            ? text_.rangeOf(at->getStartIndex(), at->getStartIndex() - 1)
                            : text_.rangeOf(at->getStartIndex(), at->getStopIndex());
  diags_.report(DiagKind::SyntaxError, range, std::move(message));
}

std::string SyntaxErrorStrategy::expectedText(antlr4::Parser *parser) {
  antlr4::misc::IntervalSet expected = parser->getExpectedTokens();
  std::vector<std::string> names;
  for (ssize_t type : expected.toList())
    if (type != PipeParser::AMPAMP) // an error production, never what we suggest
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
  std::string expected = expectedText(parser);
  syntaxError(offending, "unexpected " + describeToken(offending) +
                             (expected.empty() ? "" : "; " + expected));
}

void SyntaxErrorStrategy::reportInputMismatch(antlr4::Parser *parser,
                                              const antlr4::InputMismatchException &e) {
  antlr4::Token *offending = e.getOffendingToken();
  std::string expected = expectedText(parser);
  syntaxError(offending, (expected.empty() ? std::string("unexpected") : expected + ", found") +
                             " " + describeToken(offending));
}

void SyntaxErrorStrategy::reportFailedPredicate(antlr4::Parser *parser,
                                                const antlr4::FailedPredicateException &e) {
  syntaxError(e.getOffendingToken(), "unexpected " + describeToken(e.getOffendingToken()));
}

void SyntaxErrorStrategy::reportUnwantedToken(antlr4::Parser *parser) {
  if (inErrorRecoveryMode(parser))
    return;
  beginErrorCondition(parser);
  antlr4::Token *offending = parser->getCurrentToken();
  std::string expected = expectedText(parser);
  syntaxError(offending, "unexpected " + describeToken(offending) +
                             (expected.empty() ? "" : "; " + expected));
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
  syntaxError(offending, expectedText(parser) + " before " + describeToken(offending));
}

} // namespace pipec
