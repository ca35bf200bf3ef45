// Turns ANTLR's lexer and parser errors into pipec diagnostics (internal to syntax/).
//
// ANTLR's default messages ("extraneous input 'F' expecting ';'") are replaced by
// clang-style ones, and the classic missing ';' gets its own diagnostic, placed
// right after the statement that lacks it.
#pragma once

#include "diag/Diagnostics.h"
#include "syntax/SourceText.h"

#include "antlr4-runtime.h"

namespace pipec {

class LexerErrorListener : public antlr4::BaseErrorListener {
public:
  LexerErrorListener(DiagnosticEngine &diags, const SourceText &text) : diags_(diags), text_(text) {}
  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offending, size_t line,
                   size_t column, const std::string &message, std::exception_ptr error) override;

private:
  DiagnosticEngine &diags_;
  const SourceText &text_;
};

class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  SyntaxErrorStrategy(DiagnosticEngine &diags, const SourceText &text) : diags_(diags), text_(text) {}

  void sync(antlr4::Parser *parser) override;
  antlr4::Token *recoverInline(antlr4::Parser *parser) override;
  unsigned errorCount() const { return errors_; }

protected:
  void reportNoViableAlternative(antlr4::Parser *parser,
                                 const antlr4::NoViableAltException &e) override;
  void reportInputMismatch(antlr4::Parser *parser, const antlr4::InputMismatchException &e) override;
  void reportFailedPredicate(antlr4::Parser *parser,
                             const antlr4::FailedPredicateException &e) override;
  void reportUnwantedToken(antlr4::Parser *parser) override;
  void reportMissingToken(antlr4::Parser *parser) override;

private:
  bool looksLikeMissingSemicolon(antlr4::Parser *parser);
  void reportMissingSemicolon(antlr4::Parser *parser);
  void syntaxError(antlr4::Token *at, std::string message);
  std::string expectedText(antlr4::Parser *parser);

  DiagnosticEngine &diags_;
  const SourceText &text_;
  unsigned errors_ = 0;
};

} // namespace pipec
