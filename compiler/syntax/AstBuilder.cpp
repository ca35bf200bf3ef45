#include "syntax/AstBuilder.h"

#include "syntax/CostNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace pipec {

using namespace ast;

// ---- locations ------------------------------------------------------------------

SMRange AstBuilder::range(antlr4::ParserRuleContext *ctx) const {
  return text_.rangeOf(ctx->getStart()->getStartIndex(), ctx->getStop()->getStopIndex());
}

SMRange AstBuilder::range(antlr4::Token *token) const {
  return text_.rangeOf(token->getStartIndex(), token->getStopIndex());
}

VarDecl AstBuilder::declare(antlr4::Token *name, VarRole role) const {
  VarDecl var;
  var.name = name->getText();
  var.range = range(name);
  var.role = role;
  return var;
}

int64_t AstBuilder::parseInt(antlr4::Token *token, bool negative) {
  std::string digits = (negative ? "-" : "") + token->getText();
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(digits.c_str(), &end, 10);
  if (errno == ERANGE) {
    diags_.report(DiagKind::IntegerTooLarge, range(token),
                  "integer literal " + digits + " does not fit in 64 bits");
    return 0;
  }
  return value;
}

static std::string unquote(const std::string &quoted) {
  std::string out;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '\\' && i + 2 < quoted.size()) {
      char next = quoted[++i];
      out += next == 'n' ? '\n' : next == 't' ? '\t' : next;
    } else {
      out += c;
    }
  }
  return out;
}

// ---- schedule and declarations ---------------------------------------------------

std::unique_ptr<Schedule> AstBuilder::build(P::FileContext *file) {
  for (P::PreambleContext *item : file->preamble())
    addPreamble(item);
  P::ScheduleContext *ctx = file->schedule();
  std::unique_ptr<Schedule> schedule = begin(ctx->name, ctx->param());
  for (P::DeclContext *decl : ctx->decl())
    addDecl(*schedule, decl);
  finish(*schedule, range(ctx), ctx->getStop());
  return schedule;
}

std::unique_ptr<Schedule> AstBuilder::begin(antlr4::Token *name,
                                            const std::vector<P::ParamContext *> &params) {
  auto schedule = std::make_unique<Schedule>();
  schedule->name = name->getText();
  schedule->nameRange = range(name);

  for (P::ParamContext *p : params) {
    Param param;
    param.var = declare(p->name, VarRole::Parameter);
    param.defaultValue = parseInt(p->value, p->neg != nullptr);
    param.valueRange = text_.rangeOf((p->neg ? p->neg : p->value)->getStartIndex(),
                                     p->value->getStopIndex());
    for (const Param &earlier : schedule->params)
      if (earlier.var.name == param.var.name)
        diags_.report(DiagKind::DuplicateParameter, param.var.range,
                      "parameter '" + param.var.name + "' is declared twice")
            .note(earlier.var.range, "first declared here");
    schedule->params.push_back(std::move(param));
  }
  return schedule;
}

void AstBuilder::addPreamble(P::PreambleContext *item) {
  if (auto *import = dynamic_cast<P::ImportItemContext *>(item)) {
    if (importer_)
      importer_(unquote(import->path->getText()), range(import));
    return;
  }
  auto def = std::make_unique<Definition>();
  std::vector<antlr4::Token *> params;
  if (auto *e = dynamic_cast<P::ExprDefContext *>(item)) {
    def->name = e->name->getText();
    def->nameRange = range(e->name);
    params = e->params;
    def->expr = buildExpr(e->body);
  } else {
    auto *o = static_cast<P::OpsDefContext *>(item);
    def->name = o->name->getText();
    def->nameRange = range(o->name);
    params = o->params;
    def->ops = buildBlock(o->block());
  }
  for (antlr4::Token *param : params) {
    std::string name = param->getText();
    if (llvm::is_contained(def->params, name)) {
      diags_.report(DiagKind::DuplicateParameter, range(param),
                    "parameter '" + name + "' of '" + def->name + "' is declared twice");
      return;
    }
    def->params.push_back(name);
  }
  defs_.add(std::move(def), diags_);
}

void AstBuilder::finish(Schedule &schedule, SMRange whole, antlr4::Token *closingBrace) {
  schedule.range = whole;
  SMRange closing = range(closingBrace);
  auto requireDecl = [&](const std::optional<Sized> &slot, const char *keyword) {
    if (!slot)
      diags_.report(DiagKind::MissingDeclaration, closing,
                    std::string("schedule '") + schedule.name + "' never declares '" + keyword +
                        "'")
          .note(schedule.nameRange, std::string("add '") + keyword + " N;' to this schedule");
  };
  requireDecl(schedule.ranks, "ranks");
  requireDecl(schedule.stages, "stages");
  requireDecl(schedule.microbatches, "microbatches");
  if (!schedule.placement && schedule.flows.empty())
    diags_.report(DiagKind::MissingDeclaration, closing,
                  "schedule '" + schedule.name + "' never places its stages")
        .note(schedule.nameRange, "add 'place stage s -> rank E [chunk E];' or flow blocks");
}

void AstBuilder::setSized(std::optional<Sized> &slot, const char *what,
                          antlr4::ParserRuleContext *decl, P::ExprContext *value) {
  if (slot) {
    diags_.report(DiagKind::DuplicateDeclaration, range(decl),
                  std::string("'") + what + "' is declared twice")
        .note(slot->range, "first declared here");
    return;
  }
  slot = Sized{range(decl), buildExpr(value)};
}

void AstBuilder::addDecl(Schedule &schedule, P::DeclContext *decl) {
  if (auto *require = dynamic_cast<P::RequireDeclContext *>(decl)) {
    auto item = std::make_unique<Require>();
    item->range = range(require);
    item->cond = buildExpr(require->cond);
    if (require->message)
      item->message = unquote(require->message->getText());
    schedule.globals.push_back({nullptr, std::move(item)});
  } else if (auto *topology = dynamic_cast<P::TopologyDeclContext *>(decl)) {
    switch (topology->kind->getType()) {
    case P::RANKS: setSized(schedule.ranks, "ranks", topology, topology->value); break;
    case P::STAGES: setSized(schedule.stages, "stages", topology, topology->value); break;
    default: setSized(schedule.microbatches, "microbatches", topology, topology->value); break;
    }
  } else if (auto *copies = dynamic_cast<P::CopiesDeclContext *>(decl)) {
    setSized(schedule.copies, "copies", copies, copies->value);
  } else if (auto *place = dynamic_cast<P::PlaceDeclContext *>(decl)) {
    Placement placement = buildPlacement(place->placement());
    if (!schedule.flows.empty())
      diags_.report(DiagKind::MixedPlacement, placement.range,
                    "a top-level 'place' cannot be combined with flow blocks")
          .note(schedule.flows.front().range, "flow declared here; move this placement into it");
    else if (schedule.placement)
      diags_.report(DiagKind::DuplicateDeclaration, placement.range,
                    "'place' is declared twice")
          .note(schedule.placement->range, "first declared here");
    else
      schedule.placement = std::move(placement);
  } else if (auto *flowCtx = dynamic_cast<P::FlowDeclContext *>(decl)) {
    FlowDecl flow;
    flow.range = range(flowCtx);
    flow.name = flowCtx->name->getText();
    flow.nameRange = range(flowCtx->name);
    flow.lo = buildExpr(flowCtx->range()->lo);
    flow.hi = buildExpr(flowCtx->range()->hi);
    for (P::PlacementContext *p : flowCtx->placement())
      flow.placements.push_back(buildPlacement(p));
    if (flow.placements.size() != 1)
      diags_.report(DiagKind::FlowPlacementCount, flow.nameRange,
                    "flow '" + flow.name + "' must hold exactly one 'place', found " +
                        std::to_string(flow.placements.size()));
    for (const FlowDecl &earlier : schedule.flows)
      if (earlier.name == flow.name)
        diags_.report(DiagKind::DuplicateFlow, flow.nameRange,
                      "flow '" + flow.name + "' is declared twice")
            .note(earlier.nameRange, "first declared here");
    if (schedule.placement && schedule.flows.empty()) // once, at the first flow
      diags_.report(DiagKind::MixedPlacement, flow.nameRange,
                    "flow blocks cannot be combined with a top-level 'place'")
          .note(schedule.placement->range, "top-level placement here; move it into a flow");
    schedule.flows.push_back(std::move(flow));
  } else if (auto *costs = dynamic_cast<P::CostsDeclContext *>(decl)) {
    if (costsRange_.Start.isValid())
      diags_.report(DiagKind::DuplicateDeclaration, range(costs->COSTS()->getSymbol()),
                    "'costs' is declared twice")
          .note(costsRange_, "first declared here; put every cost in one block");
    else
      costsRange_ = range(costs->COSTS()->getSymbol());
    buildCosts(schedule, costs);
  } else if (auto *domain = dynamic_cast<P::DomainDeclContext *>(decl)) {
    schedule.domains.push_back(buildDomain(domain));
  } else if (auto *let = dynamic_cast<P::LetDeclContext *>(decl)) {
    schedule.globals.push_back({buildLet(let->letStmt()), nullptr});
  } else if (dynamic_cast<P::SizesDeclContext *>(decl) ||
             dynamic_cast<P::SizesListDeclContext *>(decl)) {
    SizesDecl sizes;
    sizes.range = range(decl);
    if (auto *e = dynamic_cast<P::SizesDeclContext *>(decl)) {
      sizes.var = declare(e->var, VarRole::LoopVar);
      sizes.value = buildExpr(e->value);
    } else {
      for (P::ExprContext *item : static_cast<P::SizesListDeclContext *>(decl)->items)
        sizes.items.push_back(buildExpr(item));
    }
    if (schedule.sizes)
      diags_.report(DiagKind::DuplicateDeclaration, sizes.range, "'sizes' is declared twice")
          .note(schedule.sizes->range, "first declared here");
    else
      schedule.sizes = std::move(sizes);
  } else if (auto *squeeze = dynamic_cast<P::SqueezeDeclContext *>(decl)) {
    SqueezeDecl item;
    item.range = range(squeeze);
    if (squeeze->limitWord) {
      if (squeeze->limitWord->getText() != "limit")
        diags_.report(DiagKind::SyntaxError, range(squeeze->limitWord),
                      "expected 'limit' or ';' after 'squeeze', found '" +
                          squeeze->limitWord->getText() + "'")
            .fixit(range(squeeze->limitWord), "limit");
      item.limit = buildExpr(squeeze->limit);
    }
    if (schedule.squeeze)
      diags_.report(DiagKind::DuplicateDeclaration, item.range, "'squeeze' is declared twice")
          .note(schedule.squeeze->range, "first declared here");
    else
      schedule.squeeze = std::move(item);
  } else if (auto *greedy = dynamic_cast<P::GreedyRankDeclContext *>(decl)) {
    schedule.rankPrograms.push_back(buildGreedyProgram(greedy));
  } else {
    schedule.rankPrograms.push_back(buildRankProgram(decl));
  }
}

Placement AstBuilder::buildPlacement(P::PlacementContext *ctx) {
  Placement placement;
  placement.range = range(ctx);
  placement.stageVar = declare(ctx->var, VarRole::StageVar);
  placement.rank = buildExpr(ctx->rank);
  if (ctx->chunk)
    placement.chunk = buildExpr(ctx->chunk);
  return placement;
}

DomainDecl AstBuilder::buildDomain(P::DomainDeclContext *ctx) {
  DomainDecl domain;
  domain.range = range(ctx);
  domain.name = ctx->name->getText();
  domain.nameRange = range(ctx->name);
  domain.valuesRange = range(ctx->domainValues());
  if (auto *r = dynamic_cast<P::RangeDomainContext *>(ctx->domainValues())) {
    domain.lo = buildExpr(r->range()->lo);
    domain.hi = buildExpr(r->range()->hi);
    if (r->stepWord) {
      if (r->stepWord->getText() != "step")
        diags_.report(DiagKind::SyntaxError, range(r->stepWord),
                      "expected 'step' or ';' after the range, found '" +
                          r->stepWord->getText() + "'")
            .fixit(range(r->stepWord), "step");
      domain.step = buildExpr(r->step);
    }
    return domain;
  }
  auto *list = static_cast<P::ListDomainContext *>(ctx->domainValues());
  for (P::ExprContext *item : list->items)
    domain.items.push_back(buildExpr(item));
  if (domain.items.empty())
    diags_.report(DiagKind::EmptyDomain, domain.valuesRange,
                  "the domain of '" + domain.name + "' lists no values")
        .note("list the values the schedule must support, e.g. {2, 4, 8}");
  return domain;
}

void AstBuilder::buildCosts(Schedule &schedule, P::CostsDeclContext *ctx) {
  for (P::CostEntryContext *e : ctx->costEntry()) {
    CostEntry entry;
    entry.range = range(e);
    entry.name = e->name->getText();
    entry.nameRange = range(e->name);
    if (e->stage)
      entry.stage = buildExpr(e->stage);
    // A number, or minus a number, keeps its literal meaning and its messages;
    // anything else is an expression evaluated once parameters are bound.
    P::CostExprContext *value = e->value;
    while (auto *paren = dynamic_cast<P::CostParenContext *>(value))
      value = paren->inner;
    bool negated = false;
    if (auto *neg = dynamic_cast<P::CostNegContext *>(value))
      if (dynamic_cast<P::CostNumberContext *>(neg->operand)) {
        negated = true;
        value = neg->operand;
      }
    if (auto *number = dynamic_cast<P::CostNumberContext *>(value)) {
      entry.value = std::strtod(number->number->getText().c_str(), nullptr);
      if (!std::isfinite(entry.value)) {
        diags_.report(DiagKind::NonFiniteCost, range(number->number),
                      "cost '" + entry.name + "' is too large for a double (above 1.8e308)");
        continue;
      }
      if (negated && entry.value != 0) { // -0 is 0
        diags_.report(DiagKind::NegativeCost, range(e->value),
                      "cost '" + entry.name + "' is negative; costs are times, sizes or "
                      "bandwidths and must be at least 0");
        continue;
      }
    } else {
      entry.valueExpr = buildCostExpr(e->value);
    }
    if (!llvm::is_contained(costNames(), entry.name)) {
      std::string suggestion = closestMatch(entry.name, costNames());
      auto &d = diags_.report(DiagKind::UnknownCost, entry.nameRange,
                              "unknown cost '" + entry.name + "'" +
                                  (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
      if (suggestion.empty())
        d.note("known costs: F, B, I, W, FB, p2p, bandwidth, activation_bytes, param_bytes, "
               "attn_f/b, dispatch_f/b, mlp_f/b, combine_f/b, activation_bytes_w");
      else
        d.fixit(entry.nameRange, suggestion);
      continue;
    }
    schedule.costs.push_back(std::move(entry));
  }
}

RankProgram AstBuilder::buildRankProgram(P::DeclContext *decl) {
  auto *ctx = static_cast<P::RankDeclContext *>(decl);
  RankProgram program = beginRankProgram(ctx->RANK()->getSymbol(), ctx->rankHead());
  program.range = range(ctx);
  program.body = buildBlock(ctx->block());
  return program;
}

// `rank r greedy limit E { op; op if C; }`. Each entry becomes the statement a
// rank program would hold (an OpStmt, or an IfStmt around it), so names and
// pending() resolve as in any rank program; the elaborator runs them as list
// scheduling (elab/GreedyScheduler.cpp).
RankProgram AstBuilder::buildGreedyProgram(P::GreedyRankDeclContext *ctx) {
  RankProgram program = beginRankProgram(ctx->RANK()->getSymbol(), ctx->rankHead());
  program.range = range(ctx);
  program.greedy = true;
  program.greedyRange = range(ctx->word);
  auto expectWord = [&](antlr4::Token *word, const char *expected) {
    if (word->getText() == expected)
      return;
    diags_.report(DiagKind::GreedyRule, range(word),
                  "expected '" + std::string(expected) + "' here, found '" + word->getText() + "'")
        .note("a greedy rank program reads 'rank r greedy limit E { I(1); F(0) if C; W; }'");
  };
  expectWord(ctx->word, "greedy");
  if (ctx->limitWord) {
    expectWord(ctx->limitWord, "limit");
    program.limit = buildExpr(ctx->limit);
  }
  if (!program.generic)
    diags_.report(DiagKind::GreedyRule, program.headRange,
                  "a greedy rank program schedules every rank: write 'rank r greedy', with a "
                  "rank variable");
  for (P::GreedyEntryContext *entry : ctx->greedyEntry()) {
    auto op = std::make_unique<OpStmt>(range(entry));
    op->ops.push_back(buildOpCall(entry->opCall()));
    const OpCall &call = op->ops.back();
    if (call.mb)
      diags_.report(DiagKind::GreedyRule, call.mb->range,
                    "a greedy entry names no micro-batch: it runs its chunk's next one "
                    "(the oldest owed I for W)");
    if (call.kind == OpKind::R)
      diags_.report(DiagKind::GreedyRule, call.range,
                    "R cannot be a greedy entry; write the recomputation in a rank program");
    if (!entry->cond) {
      program.body.push_back(std::move(op));
      continue;
    }
    auto branch = std::make_unique<IfStmt>(range(entry));
    branch->cond = buildExpr(entry->cond);
    branch->then.push_back(std::move(op));
    program.body.push_back(std::move(branch));
  }
  return program;
}

RankProgram AstBuilder::beginRankProgram(antlr4::Token *keyword, P::RankHeadContext *head) {
  RankProgram program;
  program.headRange = text_.rangeOf(keyword->getStartIndex(), head->getStop()->getStopIndex());
  if (auto *generic = dynamic_cast<P::GenericRankContext *>(head)) {
    program.generic = true;
    program.var = declare(generic->var, VarRole::RankVar);
  } else {
    program.index = buildExpr(static_cast<P::ExplicitRankContext *>(head)->index);
  }
  return program;
}

// ---- statements --------------------------------------------------------------------

Block AstBuilder::buildBlock(P::BlockContext *ctx) {
  Block block;
  for (P::StmtContext *stmt : ctx->stmt())
    if (StmtPtr built = buildStmt(stmt))
      block.push_back(std::move(built));
  return block;
}

std::unique_ptr<LetStmt> AstBuilder::buildLet(P::LetStmtContext *ctx) {
  auto let = std::make_unique<LetStmt>(range(ctx));
  let->var = declare(ctx->name, VarRole::Let);
  let->value = buildExpr(ctx->value);
  return let;
}

StmtPtr AstBuilder::buildStmt(P::StmtContext *ctx) {
  if (auto *let = dynamic_cast<P::LetStatementContext *>(ctx))
    return buildLet(let->letStmt());
  if (auto *loop = dynamic_cast<P::ForStatementContext *>(ctx)) {
    auto stmt = std::make_unique<ForStmt>(range(loop));
    stmt->var = declare(loop->var, VarRole::LoopVar);
    stmt->lo = buildExpr(loop->range()->lo);
    stmt->hi = buildExpr(loop->range()->hi);
    stmt->body = buildBlock(loop->block());
    return stmt;
  }
  if (auto *branch = dynamic_cast<P::IfStatementContext *>(ctx)) {
    auto stmt = std::make_unique<IfStmt>(range(branch));
    stmt->cond = buildExpr(branch->cond);
    stmt->then = buildBlock(branch->then);
    if (branch->otherwise)
      stmt->otherwise = buildBlock(branch->otherwise);
    else if (branch->elseIf)
      if (StmtPtr nested = buildStmt(branch->elseIf))
        stmt->otherwise.push_back(std::move(nested));
    return stmt;
  }
  if (auto *table = dynamic_cast<P::TableStatementContext *>(ctx))
    return buildTable(table);
  return buildOpStatement(static_cast<P::OpStatementContext *>(ctx));
}

// `table s in A..B { at E: stmt ... fill: stmt }` is the loop
//   for s in A..B { if E == s { stmt } ... if !(E == s || ...) { fill } }
// so it lowers to the ops a hand-written loop gives, and every later phase
// (names, elaboration, checks over the domain) treats it as that loop.
StmtPtr AstBuilder::buildTable(P::TableStatementContext *ctx) {
  auto loop = std::make_unique<ForStmt>(range(ctx));
  loop->var = declare(ctx->var, VarRole::LoopVar);
  loop->lo = buildExpr(ctx->range()->lo);
  loop->hi = buildExpr(ctx->range()->hi);
  SMRange slotName = range(ctx->var);
  auto slot = [&] { return std::make_unique<NameRef>(slotName, loop->var.name); };
  std::vector<ExprPtr> named; // each `at` entry's "E == s", for the fill's condition
  Block fill;
  SMRange fillRange;
  for (P::SlotEntryContext *entry : ctx->slotEntry()) {
    if (auto *at = dynamic_cast<P::SlotAtContext *>(entry)) {
      if (at->word->getText() != "at") {
        diags_.report(DiagKind::SyntaxError, range(at->word),
                      "expected 'at E:' or 'fill:' in a table, found '" + at->word->getText() + "'");
        continue;
      }
      auto branch = std::make_unique<IfStmt>(range(at));
      SMRange slotExpr = range(at->at);
      branch->cond = std::make_unique<Binary>(slotExpr, BinaryOp::Eq, buildExpr(at->at), slot());
      named.push_back(std::make_unique<Binary>(slotExpr, BinaryOp::Eq, buildExpr(at->at), slot()));
      if (StmtPtr body = buildStmt(at->body))
        branch->then.push_back(std::move(body));
      loop->body.push_back(std::move(branch));
      continue;
    }
    auto *filler = static_cast<P::SlotFillContext *>(entry);
    if (filler->word->getText() != "fill") {
      diags_.report(DiagKind::SyntaxError, range(filler->word),
                    "expected 'at E:' or 'fill:' in a table, found '" + filler->word->getText() +
                        "'");
      continue;
    }
    fillRange = fillRange.Start.isValid() ? fillRange : range(filler);
    if (StmtPtr body = buildStmt(filler->body))
      fill.push_back(std::move(body));
  }
  if (!fill.empty()) {
    auto branch = std::make_unique<IfStmt>(fillRange);
    ExprPtr any;
    for (ExprPtr &e : named) {
      SMRange at = e->range;
      if (any)
        any = std::make_unique<Binary>(at, BinaryOp::Or, std::move(any), std::move(e));
      else
        any = std::move(e);
    }
    if (any)
      branch->cond = std::make_unique<Unary>(fillRange, UnaryOp::Not, std::move(any));
    else
      branch->cond = std::make_unique<IntLit>(fillRange, 1);
    branch->then = std::move(fill);
    loop->body.push_back(std::move(branch));
  }
  return loop;
}

static bool isForward(OpKind kind) { return kind == OpKind::F; }
static bool isBackward(OpKind kind) { return kind == OpKind::B || kind == OpKind::I; }

StmtPtr AstBuilder::buildDefCall(const Definition &def, P::OpStatementContext *ctx) {
  P::OpCallContext *call = ctx->opCall(0);
  if (ctx->opCall().size() > 1) {
    diags_.report(DiagKind::DefinitionKindMismatch, range(ctx),
                  "'" + def.name + "' is a definition, not an op: it cannot join an overlap pair")
        .note(def.nameRange, "defined here");
    return nullptr;
  }
  std::vector<ExprPtr> args;
  P::OpArgsContext *given = call->opArgs();
  if (auto *a = dynamic_cast<P::ChunkOnlyContext *>(given)) {
    args.push_back(buildExpr(a->chunk));
  } else if (auto *a = dynamic_cast<P::PositionalMbContext *>(given)) {
    args.push_back(buildExpr(a->chunk));
    args.push_back(buildExpr(a->mb));
  } else if (auto *a = dynamic_cast<P::ManyArgsContext *>(given)) {
    for (P::ExprContext *arg : a->args)
      args.push_back(buildExpr(arg));
  } else if (given) {
    diags_.report(DiagKind::DefinitionArity, range(given),
                  "the arguments of '" + def.name + "' are positional; 'mb =' names an op's "
                  "micro-batch")
        .note(def.nameRange, "defined here");
    return nullptr;
  }
  return defs_.expandOps(def, std::move(args), range(call), diags_);
}

StmtPtr AstBuilder::buildOpStatement(P::OpStatementContext *ctx) {
  if (const Definition *def = defs_.find(ctx->opCall(0)->name->getText()))
    return buildDefCall(*def, ctx);
  auto stmt = std::make_unique<OpStmt>(range(ctx));
  std::vector<P::OpCallContext *> calls = ctx->opCall();
  for (antlr4::Token *joiner : ctx->joiners)
    if (joiner->getType() == P::AMPAMP)
      diags_.report(DiagKind::OverlapDoubleAmpersand, range(joiner),
                    "an overlap pair is written with a single '&'")
          .fixit(range(joiner), "&");
  if (calls.size() > 2) {
    diags_.report(DiagKind::OverlapPairArity, range(calls[2]),
                  "an overlap pair joins exactly two ops, but this statement joins " +
                      std::to_string(calls.size()))
        .note(range(calls[0]), "split it: one forward '&' one backward per statement");
    return nullptr;
  }
  for (P::OpCallContext *call : calls)
    stmt->ops.push_back(buildOpCall(call));
  if (stmt->ops.size() == 2) {
    OpKind a = stmt->ops[0].kind, b = stmt->ops[1].kind;
    bool valid = (isForward(a) && isBackward(b)) || (isBackward(a) && isForward(b));
    if (!valid)
      diags_.report(DiagKind::OverlapPairKinds, stmt->range,
                    std::string("an overlap pair joins one forward (F) with one backward (B or I), "
                                "not ") +
                        opKindName(a) + " & " + opKindName(b));
  }
  return stmt;
}

static const llvm::StringRef kOpNames[] = {"F",     "B",    "I",      "W",    "R",
                                           "Offload", "Reload", "Evict", "Hold", "Return",
                                           "Load"};

// Words people write for an op, mapped to the op they mean.
static std::string opForAlias(llvm::StringRef name) {
  std::string lower = name.lower();
  return llvm::StringSwitch<std::string>(lower)
      .Cases("f", "fwd", "forward", "F")
      .Cases("b", "bwd", "backward", "B")
      .Cases("i", "dgrad", "igrad", "input", "I")
      .Cases("w", "wgrad", "weight", "W")
      .Cases("r", "recompute", "replay", "R")
      .Cases("offload", "swapout", "swap_out", "Offload")
      .Cases("reload", "swapin", "swap_in", "prefetch", "Reload")
      .Cases("evict", "send", "push", "Evict")
      .Cases("hold", "keep", "recv", "receive", "Hold")
      .Cases("return", "giveback", "Return")
      .Cases("load", "fetch", "pull", "Load")
      .Default(closestMatch(name, kOpNames));
}

OpCall AstBuilder::buildOpCall(P::OpCallContext *ctx) {
  OpCall op;
  op.range = range(ctx);
  std::string name = ctx->name->getText();
  if (name == "F") op.kind = OpKind::F;
  else if (name == "B") op.kind = OpKind::B;
  else if (name == "I") op.kind = OpKind::I;
  else if (name == "W") op.kind = OpKind::W;
  else if (name == "R") op.kind = OpKind::R;
  else if (name == "Offload") op.kind = OpKind::Offload;
  else if (name == "Reload") op.kind = OpKind::Reload;
  else if (name == "Evict") op.kind = OpKind::Evict;
  else if (name == "Hold") op.kind = OpKind::Hold;
  else if (name == "Return") op.kind = OpKind::Return;
  else if (name == "Load") op.kind = OpKind::Load;
  else {
    std::string suggestion = opForAlias(name);
    if (name == "FB" || name == "BF")
      diags_.report(DiagKind::UnknownOp, range(ctx->name),
                    "unknown op '" + name + "'; an overlap pair is written 'F(c) & B(c)'");
    else {
      auto &d = diags_.report(DiagKind::UnknownOp, range(ctx->name),
                              "unknown op '" + name + "'" +
                                  (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
      // The note keeps its wording from before R existed (goldens and lint
      // renderers quote it); it names R when R is what the writer meant.
      d.note(std::string("the ops are F (forward), B (backward), I (input-gradient half) and W "
                         "(weight-gradient half)") +
             (suggestion == "R" ? "; R replays a forward before its backward" : "") +
             (suggestion.size() > 1 ? "; Offload/Reload move an activation to host memory and back, "
                                      "Evict/Hold/Return/Load to a partner rank and back"
                                    : ""));
      if (!suggestion.empty())
        d.fixit(range(ctx->name), suggestion);
    }
  }
  peerWord_.clear();
  if (P::OpArgsContext *args = ctx->opArgs())
    buildOpArgs(op, args);
  checkMemoryOpArguments(op, ctx);
  return op;
}

// Memory ops name their micro-batch; transfer ops also their partner rank, as
// `to = r` on the side that sends (Evict, Return) and `from = r` on the side that
// receives (Hold, Load), so that a reader sees the direction of each message.
void AstBuilder::checkMemoryOpArguments(OpCall &op, P::OpCallContext *ctx) {
  std::string name = ctx->name->getText();
  if (!ast::isMemoryOp(op.kind)) {
    if (op.peer)
      diags_.report(DiagKind::MemoryOpArguments, op.peer->range,
                    "'" + name + "' takes no partner rank: only Evict, Hold, Return and Load do");
    return;
  }
  if (!op.mb) {
    diags_.report(DiagKind::MemoryOpArguments, op.range,
                  "'" + name + "' needs its micro-batch named: write '" + name + "(c, mb = k" +
                      (ast::isTransferOp(op.kind)
                           ? std::string(", ") + (ast::isTransferSend(op.kind) ? "to" : "from") +
                                 " = r"
                           : std::string()) +
                      ")'")
        .note("a memory op moves one micro-batch's activation, so it names it; there is no "
              "implicit cursor as for F and B");
    return;
  }
  if (!ast::isTransferOp(op.kind)) {
    if (op.peer)
      diags_.report(DiagKind::MemoryOpArguments, op.peer->range,
                    "'" + name + "' moves an activation to host memory and takes no partner rank")
          .note("Evict/Hold/Return/Load move an activation to another rank");
    return;
  }
  const char *word = ast::isTransferSend(op.kind) ? "to" : "from";
  if (!op.peer) {
    diags_.report(DiagKind::MemoryOpArguments, op.range,
                  "'" + name + "' needs its partner rank: add '" + word + " = r'");
    return;
  }
  if (peerWord_ != word)
    diags_.report(DiagKind::MemoryOpArguments, peerWordRange_,
                  "'" + name + "' names its partner with '" + word + " =', not '" + peerWord_ +
                      " ='")
        .fixit(peerWordRange_, word);
}

void AstBuilder::buildOpArgs(OpCall &op, P::OpArgsContext *ctx) {
  if (auto *a = dynamic_cast<P::ChunkOnlyContext *>(ctx)) {
    op.chunk = buildExpr(a->chunk);
  } else if (auto *a = dynamic_cast<P::ChunkAndMbContext *>(ctx)) {
    op.chunk = buildExpr(a->chunk);
    op.mb = buildExpr(a->mb);
  } else if (auto *a = dynamic_cast<P::MbOnlyContext *>(ctx)) {
    op.mb = buildExpr(a->mb);
  } else if (auto *a = dynamic_cast<P::ChunkMbPeerContext *>(ctx)) {
    op.chunk = buildExpr(a->chunk);
    op.mb = buildExpr(a->mb);
    op.peer = buildExpr(a->peer);
    peerWord_ = a->peerWord->getText();
    peerWordRange_ = range(a->peerWord);
  } else if (auto *a = dynamic_cast<P::MbPeerContext *>(ctx)) {
    op.mb = buildExpr(a->mb);
    op.peer = buildExpr(a->peer);
    peerWord_ = a->peerWord->getText();
    peerWordRange_ = range(a->peerWord);
  } else if (auto *a = dynamic_cast<P::ChunkPeerContext *>(ctx)) {
    op.chunk = buildExpr(a->chunk); // no mb: checkMemoryOpArguments reports it
    op.peer = buildExpr(a->peer);
    peerWord_ = a->peerWord->getText();
    peerWordRange_ = range(a->peerWord);
  } else if (auto *a = dynamic_cast<P::MissingCommaContext *>(ctx)) {
    SMRange mbKeyword = range(a->MB()->getSymbol());
    diags_.report(DiagKind::MissingCommaInOp, SMRange(mbKeyword.Start, mbKeyword.Start),
                  "expected ',' between the chunk and 'mb ='")
        .fixit(SMRange(mbKeyword.Start, mbKeyword.Start), ", ");
    op.chunk = buildExpr(a->chunk);
    op.mb = buildExpr(a->mb);
  } else if (auto *a = dynamic_cast<P::ManyArgsContext *>(ctx)) {
    diags_.report(DiagKind::SyntaxError, range(ctx),
                  "an op takes at most a chunk and 'mb = E', not " +
                      std::to_string(a->args.size()) + " arguments");
  } else if (auto *a = dynamic_cast<P::PositionalMbContext *>(ctx)) {
    SMRange mb = range(a->mb);
    std::string text(mb.Start.getPointer(), mb.End.getPointer());
    diags_.report(DiagKind::PositionalMicrobatch, mb,
                  "the micro-batch of an op is named: write 'mb = " + text + "'")
        .fixit(mb, "mb = " + text);
    op.chunk = buildExpr(a->chunk);
    op.mb = buildExpr(a->mb);
  }
}

// ---- expressions -------------------------------------------------------------------

ExprPtr AstBuilder::buildCostExpr(P::CostExprContext *ctx) {
  SMRange at = range(ctx);
  if (auto *paren = dynamic_cast<P::CostParenContext *>(ctx))
    return buildCostExpr(paren->inner);
  if (auto *number = dynamic_cast<P::CostNumberContext *>(ctx)) {
    double value = std::strtod(number->number->getText().c_str(), nullptr);
    if (!std::isfinite(value)) {
      diags_.report(DiagKind::NonFiniteCost, at, "this number is too large for a double");
      value = 0;
    }
    return std::make_unique<FloatLit>(at, value);
  }
  if (auto *name = dynamic_cast<P::CostNameContext *>(ctx))
    return std::make_unique<NameRef>(at, name->getText());
  if (auto *neg = dynamic_cast<P::CostNegContext *>(ctx))
    return std::make_unique<Unary>(at, UnaryOp::Neg, buildCostExpr(neg->operand));
  if (auto *binary = dynamic_cast<P::CostBinaryContext *>(ctx)) {
    BinaryOp op = llvm::StringSwitch<BinaryOp>(binary->op->getText())
                      .Case("*", BinaryOp::Mul).Case("/", BinaryOp::Div)
                      .Case("+", BinaryOp::Add).Default(BinaryOp::Sub);
    return std::make_unique<Binary>(at, op, buildCostExpr(binary->lhs),
                                    buildCostExpr(binary->rhs));
  }
  if (auto *cond = dynamic_cast<P::CostConditionalContext *>(ctx))
    return std::make_unique<Conditional>(at, buildExpr(cond->cond), buildCostExpr(cond->then),
                                         buildCostExpr(cond->otherwise));
  auto *call = static_cast<P::CostCallContext *>(ctx);
  std::string callee = call->callee->getText();
  std::vector<ExprPtr> args;
  for (P::CostExprContext *arg : call->args)
    args.push_back(buildCostExpr(arg));
  if (callee != "min" && callee != "max") {
    diags_.report(DiagKind::UnknownFunction, range(call->callee),
                  "unknown function '" + callee + "' in a cost")
        .note("a cost may call min and max; a 'def' is expanded in integer expressions only");
  } else if (args.size() < 2) {
    diags_.report(DiagKind::CallArity, at,
                  "'" + callee + "' takes at least two arguments, got " +
                      std::to_string(args.size()));
  }
  return std::make_unique<Call>(at, callee == "max" ? Builtin::Max : Builtin::Min,
                                std::move(args));
}

// `pending(W)`, `pending(F, c)`: the op kind is written as its name.
ExprPtr AstBuilder::buildPending(P::CallExprContext *call) {
  SMRange at = range(call);
  std::string kind = call->args.empty() ? "" : call->args[0]->getText();
  OpKind op = OpKind::F;
  if (kind == "F") op = OpKind::F;
  else if (kind == "B") op = OpKind::B;
  else if (kind == "W") op = OpKind::W;
  else {
    diags_.report(DiagKind::PendingArgument, call->args.empty() ? at : range(call->args[0]),
                  "pending() counts F, B or W, not '" + kind + "'")
        .note("pending(F): forwards still to run; pending(B): forwards whose backward (B or I) "
              "has not run; pending(W): I's whose W has not run");
    return std::make_unique<IntLit>(at, 0);
  }
  if (call->args.size() > 2)
    diags_.report(DiagKind::PendingArgument, range(call->args[2]),
                  "pending() takes an op kind and at most a chunk");
  ExprPtr chunk = call->args.size() >= 2 ? buildExpr(call->args[1]) : nullptr;
  return std::make_unique<Pending>(at, op, std::move(chunk));
}

ExprPtr AstBuilder::buildExpr(P::ExprContext *ctx) {
  SMRange at = range(ctx);
  if (auto *paren = dynamic_cast<P::ParenExprContext *>(ctx))
    return buildExpr(paren->inner);
  if (auto *lit = dynamic_cast<P::IntExprContext *>(ctx))
    return std::make_unique<IntLit>(at, parseInt(lit->INT()->getSymbol(), false));
  if (auto *name = dynamic_cast<P::NameExprContext *>(ctx))
    return std::make_unique<NameRef>(at, name->getText());
  if (auto *unary = dynamic_cast<P::UnaryExprContext *>(ctx)) {
    // Fold "-<literal>" so that INT64_MIN is writable.
    if (unary->op->getText() == "-")
      if (auto *lit = dynamic_cast<P::IntExprContext *>(unary->operand))
        return std::make_unique<IntLit>(at, parseInt(lit->INT()->getSymbol(), true));
    UnaryOp op = unary->op->getText() == "-" ? UnaryOp::Neg : UnaryOp::Not;
    return std::make_unique<Unary>(at, op, buildExpr(unary->operand));
  }
  if (auto *binary = dynamic_cast<P::BinaryExprContext *>(ctx)) {
    BinaryOp op = llvm::StringSwitch<BinaryOp>(binary->op->getText())
                      .Case("*", BinaryOp::Mul).Case("/", BinaryOp::Div)
                      .Case("%", BinaryOp::Mod).Case("+", BinaryOp::Add)
                      .Case("-", BinaryOp::Sub).Case("<", BinaryOp::Lt)
                      .Case("<=", BinaryOp::Le).Case(">", BinaryOp::Gt)
                      .Case(">=", BinaryOp::Ge).Case("==", BinaryOp::Eq)
                      .Case("!=", BinaryOp::Ne).Case("&&", BinaryOp::And)
                      .Default(BinaryOp::Or);
    return std::make_unique<Binary>(at, op, buildExpr(binary->lhs), buildExpr(binary->rhs));
  }
  if (auto *cond = dynamic_cast<P::ConditionalExprContext *>(ctx))
    return std::make_unique<Conditional>(at, buildExpr(cond->cond), buildExpr(cond->then),
                                         buildExpr(cond->otherwise));
  auto *call = static_cast<P::CallExprContext *>(ctx);
  std::string callee = call->callee->getText();
  if (callee == "pending")
    return buildPending(call);
  std::vector<ExprPtr> args;
  for (P::ExprContext *arg : call->args)
    args.push_back(buildExpr(arg));
  if (const Definition *def = defs_.find(callee)) {
    if (ExprPtr expanded = defs_.expandExpr(*def, std::move(args), at, diags_))
      return expanded;
    return std::make_unique<IntLit>(at, 0);
  }
  Builtin fn = Builtin::Min;
  if (callee == "max") {
    fn = Builtin::Max;
  } else if (callee != "min") {
    static const llvm::StringRef kFunctions[] = {"min", "max"};
    std::string suggestion = closestMatch(callee, kFunctions);
    auto &d = diags_.report(DiagKind::UnknownFunction, range(call->callee),
                            "unknown function '" + callee + "'" +
                                (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
    d.note("the functions are min and max, pending(F|B|W) in a rank program, and those "
           "a 'def' declares before the schedule");
    if (!suggestion.empty())
      d.fixit(range(call->callee), suggestion);
  }
  if (args.size() < 2)
    diags_.report(DiagKind::CallArity, at,
                  "'" + callee + "' takes at least two arguments, got " +
                      std::to_string(args.size()));
  return std::make_unique<Call>(at, fn, std::move(args));
}

} // namespace pipec
