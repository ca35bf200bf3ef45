// Drives ANTLR: UTF-8 check, lexing, parsing (fast SLL first, full LL with error
// recovery only when SLL fails), then the AST builder.
#include "syntax/Parser.h"

#include "syntax/AstBuilder.h"
#include "syntax/SourceText.h"
#include "syntax/SyntaxErrors.h"

#include "PipeLexer.h"
#include "PipeParser.h"

#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/SourceMgr.h"

namespace pipec {

using pipegen::PipeLexer;
using pipegen::PipeParser;

static bool checkUtf8(llvm::StringRef text, DiagnosticEngine &diags) {
  const llvm::UTF8 *begin = reinterpret_cast<const llvm::UTF8 *>(text.begin());
  const llvm::UTF8 *end = reinterpret_cast<const llvm::UTF8 *>(text.end());
  const llvm::UTF8 *bad = begin;
  if (llvm::isLegalUTF8String(&bad, end))
    return true;
  const char *at = reinterpret_cast<const char *>(bad);
  diags.report(DiagKind::InvalidUTF8,
               llvm::SMRange(llvm::SMLoc::getFromPointer(at), llvm::SMLoc::getFromPointer(at + 1)),
               "the source is not valid UTF-8");
  return false;
}

// Tokens the lexer keeps off the parser's channel because they are malformed.
static void reportMalformedTokens(antlr4::CommonTokenStream &tokens, const SourceText &text,
                                  DiagnosticEngine &diags) {
  for (antlr4::Token *token : tokens.getTokens()) {
    llvm::SMRange at = text.rangeOf(token->getStartIndex(), token->getStartIndex());
    if (token->getType() == PipeLexer::UNTERMINATED_STRING)
      diags.report(DiagKind::UnterminatedString, at, "missing closing '\"' of this string");
    else if (token->getType() == PipeLexer::UNTERMINATED_COMMENT)
      diags.report(DiagKind::UnterminatedComment, at, "this comment is never closed by '*/'");
  }
}

// The parser, the AST builder and the evaluator recurse on nesting; these bounds
// keep every recursion far from the stack's end (tens of thousands of levels crash).
// An else-if chain nests too: each `else if` is parsed, resolved and run inside the
// branch before it, so its branches count like blocks.
constexpr int kMaxNesting = 256;
constexpr int kMaxStatementTokens = 2000;

static bool checkNesting(antlr4::CommonTokenStream &tokens, const SourceText &text,
                         DiagnosticEngine &diags) {
  std::vector<antlr4::Token *> visible;
  for (antlr4::Token *token : tokens.getTokens())
    if (token->getChannel() == antlr4::Token::DEFAULT_CHANNEL)
      visible.push_back(token);
  int depth = 0, statementTokens = 0;
  // Per open bracket, the else-if branches of the chain running at that level.
  std::vector<int> chainAt{0};
  int chained = 0;
  auto tooDeep = [&](antlr4::Token *token, const char *what) {
    diags.report(DiagKind::NestingTooDeep,
                 text.rangeOf(token->getStartIndex(), token->getStopIndex()),
                 std::string(what) + " are nested more than " + std::to_string(kMaxNesting) +
                     " deep here");
    return false;
  };
  for (size_t i = 0; i < visible.size(); ++i) {
    antlr4::Token *token = visible[i];
    size_t type = token->getType();
    if (i > 0 && visible[i - 1]->getType() == PipeLexer::RBRACE && type != PipeLexer::ELSE) {
      chained -= chainAt.back(); // the statement before ended: so did its chain
      chainAt.back() = 0;
    }
    if (type == PipeLexer::IF && i > 0 && visible[i - 1]->getType() == PipeLexer::ELSE) {
      ++chainAt.back();
      if (depth + ++chained > kMaxNesting)
        return tooDeep(token, "blocks and else-if branches");
    }
    std::string t = token->getText();
    if (t == "(" || t == "{" || t == "[") {
      chainAt.push_back(0);
      if (++depth + chained > kMaxNesting)
        return tooDeep(token, chained ? "blocks and else-if branches" : "brackets and blocks");
    } else if (t == ")" || t == "}" || t == "]") {
      --depth;
      if (chainAt.size() > 1) {
        chained -= chainAt.back();
        chainAt.pop_back();
      }
    }
    if (t == ";" || t == "{" || t == "}") {
      statementTokens = 0;
    } else if (++statementTokens > kMaxStatementTokens) {
      diags.report(DiagKind::NestingTooDeep,
                   text.rangeOf(token->getStartIndex(), token->getStopIndex()),
                   "this statement is longer than " + std::to_string(kMaxStatementTokens) +
                       " tokens; split it with 'let'");
      return false;
    }
  }
  return true;
}

std::unique_ptr<ast::Schedule> parseSchedule(unsigned bufferId, DiagnosticEngine &diags) {
  llvm::StringRef source = diags.sources().getMemoryBuffer(bufferId)->getBuffer();
  if (!checkUtf8(source, diags))
    return nullptr;
  SourceText text(source);
  unsigned errorsBefore = diags.errorCount();

  antlr4::ANTLRInputStream input(source.data(), source.size());
  PipeLexer lexer(&input);
  LexerErrorListener lexerErrors(diags, text);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&lexerErrors);
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  reportMalformedTokens(tokens, text, diags);
  // After a lexical error the parser would only add confusing follow-on errors.
  if (diags.errorCount() != errorsBefore || !checkNesting(tokens, text, diags))
    return nullptr;

  PipeParser parser(&tokens);
  parser.removeErrorListeners();
  // SLL with bail-out parses nearly every valid file; only a failure pays for LL.
  auto bail = std::make_shared<antlr4::BailErrorStrategy>();
  parser.setErrorHandler(bail);
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  PipeParser::FileContext *tree = nullptr;
  try {
    tree = parser.file();
  } catch (const antlr4::ParseCancellationException &) {
    tokens.seek(0);
    parser.reset();
    auto recovering = std::make_shared<SyntaxErrorStrategy>(diags, text);
    parser.setErrorHandler(recovering);
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::LL);
    tree = parser.file();
  }
  if (diags.errorCount() != errorsBefore)
    return nullptr;

  AstBuilder builder(diags, text);
  std::unique_ptr<ast::Schedule> schedule = builder.build(tree);
  if (diags.errorCount() != errorsBefore)
    return nullptr;
  return schedule;
}

} // namespace pipec
