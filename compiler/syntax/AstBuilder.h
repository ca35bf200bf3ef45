// Turns an ANTLR parse tree into pipec's AST (internal to syntax/).
//
// This is also where the grammar's error productions become targeted diagnostics
// (F(0 mb=1), F(0, 1), three ops joined by '&', unknown op names...), and where
// structural rules that need no evaluation are enforced (one `ranks`, flows with
// one placement, ...).
#pragma once

#include "diag/Diagnostics.h"
#include "syntax/AST.h"
#include "syntax/Definitions.h"
#include "syntax/SourceText.h"

#include "PipeParser.h"

#include <functional>

namespace pipec {

class AstBuilder {
public:
  // Loads `import "path";` (path as written, the statement's range): parses the
  // file into the definition table, reporting what goes wrong at the statement.
  using Importer = std::function<void(const std::string &path, ast::SMRange at)>;

  AstBuilder(DiagnosticEngine &diags, const SourceText &text, DefinitionTable &defs,
             Importer importer = nullptr)
      : diags_(diags), text_(text), defs_(defs), importer_(std::move(importer)) {}

  using P = pipegen::PipeParser;

  // `import "x.pipe";` or a `def`, before the schedule.
  void addPreamble(P::PreambleContext *item);

  std::unique_ptr<ast::Schedule> build(P::FileContext *file);

  // The same, a piece at a time, so that the parser can free each piece's parse
  // tree once it is built: begin, then declarations (a rank program as its head
  // and then its statements, appended to its body), then finish.
  std::unique_ptr<ast::Schedule> begin(antlr4::Token *name,
                                       const std::vector<P::ParamContext *> &params);
  void addDecl(ast::Schedule &schedule, P::DeclContext *decl);
  ast::RankProgram beginRankProgram(antlr4::Token *keyword, P::RankHeadContext *head);
  ast::StmtPtr buildStmt(P::StmtContext *ctx); // null: dropped after an error
  void buildRange(P::RangeContext *ctx, ast::ExprPtr &lo, ast::ExprPtr &hi) {
    lo = buildExpr(ctx->lo);
    hi = buildExpr(ctx->hi);
  }
  void finish(ast::Schedule &schedule, ast::SMRange whole, antlr4::Token *closingBrace);

private:
  void setSized(std::optional<ast::Sized> &slot, const char *what, antlr4::ParserRuleContext *decl,
                P::ExprContext *value);
  ast::Placement buildPlacement(P::PlacementContext *ctx);
  void buildCosts(ast::Schedule &schedule, P::CostsDeclContext *ctx);
  ast::DomainDecl buildDomain(P::DomainDeclContext *ctx);
  ast::RankProgram buildRankProgram(P::DeclContext *ctx);
  ast::RankProgram buildGreedyProgram(P::GreedyRankDeclContext *ctx);

  ast::Block buildBlock(P::BlockContext *ctx);
  std::unique_ptr<ast::LetStmt> buildLet(P::LetStmtContext *ctx);
  ast::StmtPtr buildOpStatement(P::OpStatementContext *ctx);
  ast::StmtPtr buildTable(P::TableStatementContext *ctx);
  ast::OpCall buildOpCall(P::OpCallContext *ctx);
  void buildOpArgs(ast::OpCall &op, P::OpArgsContext *ctx);
  void checkMemoryOpArguments(ast::OpCall &op, P::OpCallContext *ctx);
  // The word before the partner rank of the op being built (`to` / `from`).
  std::string peerWord_;
  ast::SMRange peerWordRange_;

  ast::ExprPtr buildExpr(P::ExprContext *ctx);
  ast::ExprPtr buildCostExpr(P::CostExprContext *ctx);
  ast::ExprPtr buildPending(P::CallExprContext *call);
  ast::StmtPtr buildDefCall(const Definition &def, P::OpStatementContext *ctx);
  int64_t parseInt(antlr4::Token *token, bool negative);

  ast::SMRange range(antlr4::ParserRuleContext *ctx) const;
  ast::SMRange range(antlr4::Token *token) const;
  ast::VarDecl declare(antlr4::Token *name, ast::VarRole role) const;

  DiagnosticEngine &diags_;
  const SourceText &text_;
  DefinitionTable &defs_;
  Importer importer_;
  ast::SMRange costsRange_; // the first `costs` keyword, to report a second block
};

} // namespace pipec
