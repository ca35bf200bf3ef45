// Turns ANTLR's lexer and parser errors into pipec diagnostics (internal to syntax/).
//
// ANTLR's default messages ("extraneous input 'F' expecting ';'") are replaced by
// clang-style ones, and the classic mistakes get their own diagnostics: a missing
// ';' (placed right after the statement that lacks it), a misspelled keyword (with
// the keyword meant), 'rank' written for the rank variable, and a '{' the file
// ends before closing (placed at that '{').
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
  void recover(antlr4::Parser *parser, std::exception_ptr e) override;
  unsigned errorCount() const { return errors_; }
  // Called once the parse is over: reports a '{' never closed, unless an error at
  // the end of the file already did.
  void finish(antlr4::Parser *parser);

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
  void syntaxError(antlr4::Parser *parser, antlr4::Token *at, std::string message);
  std::string expectedText(antlr4::Parser *parser);
  // Each reports its targeted error and returns true when it recognises the mistake.
  bool reportTargeted(antlr4::Parser *parser, antlr4::Token *offending);
  bool reportMisspelledKeyword(antlr4::Parser *parser, antlr4::Token *offending);
  bool reportMisspelledStatement(antlr4::Parser *parser);
  bool reportRankKeyword(antlr4::Parser *parser, antlr4::Token *offending);
  bool reportUnclosedBrace(antlr4::Parser *parser);
  llvm::SMRange rangeOf(antlr4::Token *token) const;

  DiagnosticEngine &diags_;
  const SourceText &text_;
  unsigned errors_ = 0;
  bool reportedUnclosedBrace_ = false;
  bool skipStatement_ = false; // set by a misspelled statement keyword, for recover()
};

} // namespace pipec
