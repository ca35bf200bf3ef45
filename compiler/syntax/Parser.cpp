// Drives ANTLR: UTF-8 check, lexing, parsing (fast SLL first, full LL with error
// recovery only when SLL fails), then the AST builder.
#include "syntax/Parser.h"

#include "syntax/AstBuilder.h"
#include "syntax/CompactToken.h"
#include "syntax/SourceText.h"
#include "syntax/SyntaxErrors.h"

#include "PipeLexer.h"
#include "PipeParser.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
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

// The lexer's input: the source decoded to UTF-32 in a buffer of exactly its size.
// ANTLR's own decoding grows its buffer as it goes and peaks at about 20 bytes per
// input byte; this one is 4. The source is valid UTF-8 (checkUtf8).
class DecodedInput : public antlr4::ANTLRInputStream {
public:
  explicit DecodedInput(llvm::StringRef utf8) {
    size_t codePoints = llvm::count_if(utf8, [](char c) { return (c & 0xC0) != 0x80; });
    _data.resize(codePoints);
    const llvm::UTF8 *from = reinterpret_cast<const llvm::UTF8 *>(utf8.begin());
    llvm::UTF32 *to = reinterpret_cast<llvm::UTF32 *>(&_data[0]);
    llvm::ConvertUTF8toUTF32(&from, reinterpret_cast<const llvm::UTF8 *>(utf8.end()), &to,
                             to + codePoints, llvm::strictConversion);
  }
};

// Tokens the lexer keeps off the parser's channel because they are malformed.
static void reportMalformedTokens(antlr4::CommonTokenStream &tokens, const SourceText &text,
                                  DiagnosticEngine &diags) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    antlr4::Token *token = tokens.get(i);
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
constexpr size_t kMaxRecoveryTokens = 2000000;

static bool checkNesting(antlr4::CommonTokenStream &tokens, const SourceText &text,
                         DiagnosticEngine &diags) {
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
  size_t previous = antlr4::Token::INVALID_TYPE; // the type of the last visible token
  for (size_t i = 0; i < tokens.size(); ++i) { // not getTokens(): that copies the list
    antlr4::Token *token = tokens.get(i);
    if (token->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
      continue;
    size_t type = token->getType();
    size_t before = previous;
    previous = type;
    if (before == PipeLexer::RBRACE && type != PipeLexer::ELSE) {
      chained -= chainAt.back(); // the statement before ended: so did its chain
      chainAt.back() = 0;
    }
    if (type == PipeLexer::IF && before == PipeLexer::ELSE) {
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

// Parses the file a declaration at a time, and a rank program a statement at a
// time, building each piece's AST at once and then freeing its parse tree: a
// whole-file tree costs hundreds of bytes per input byte. SLL with bail-out:
// throws ParseCancellationException at anything it cannot parse.
static std::unique_ptr<ast::Schedule> parseInPieces(PipeParser &parser,
                                                    antlr4::CommonTokenStream &tokens,
                                                    AstBuilder &builder, const SourceText &text,
                                                    bool library, DiagnosticEngine &staged) {
  auto is = [&](const char *punctuation) { return tokens.LT(1)->getText() == punctuation; };
  auto expect = [&](size_t type, const char *punctuation = nullptr) {
    antlr4::Token *token = tokens.LT(1);
    if (punctuation ? token->getText() != punctuation : token->getType() != type)
      throw antlr4::ParseCancellationException();
    tokens.consume();
    return token;
  };
  auto freeTree = [&] { parser.getTreeTracker().reset(); };
  auto spanning = [&](antlr4::Token *first, antlr4::Token *last) {
    return text.rangeOf(first->getStartIndex(), last->getStopIndex());
  };

  while (tokens.LA(1) == PipeLexer::IMPORT || tokens.LA(1) == PipeLexer::DEF) {
    builder.addPreamble(parser.preamble());
    freeTree();
  }
  if (library || tokens.LA(1) == antlr4::Token::EOF) {
    antlr4::Token *next = tokens.LT(1);
    llvm::SMRange at = text.rangeOf(next->getStartIndex(), next->getStartIndex());
    if (library && next->getType() == PipeLexer::SCHEDULE)
      staged.report(DiagKind::ImportedSchedule, at,
                    "an imported file holds only imports and definitions, but this one "
                    "declares a schedule")
          .note("move the definitions both schedules share into a file of their own");
    else if (next->getType() != antlr4::Token::EOF)
      throw antlr4::ParseCancellationException();
    else if (!library)
      staged.report(DiagKind::MissingSchedule, at, "this file declares no schedule")
          .note("a file that holds only definitions is imported by one that declares "
                "'schedule NAME(...) { ... }'");
    return nullptr;
  }
  antlr4::Token *keyword = expect(PipeLexer::SCHEDULE);
  antlr4::Token *name = expect(PipeLexer::ID);
  expect(0, "(");
  std::vector<PipeParser::ParamContext *> params;
  while (!is(")")) {
    params.push_back(parser.param());
    if (!is(","))
      break;
    tokens.consume();
  }
  expect(0, ")");
  expect(PipeLexer::LBRACE);
  std::unique_ptr<ast::Schedule> schedule = builder.begin(name, params);
  freeTree();

  while (tokens.LA(1) != PipeLexer::RBRACE && tokens.LA(1) != antlr4::Token::EOF) {
    if (tokens.LA(1) != PipeLexer::RANK) {
      builder.addDecl(*schedule, parser.decl());
      freeTree();
      continue;
    }
    antlr4::Token *rank = expect(PipeLexer::RANK);
    ast::RankProgram program = builder.beginRankProgram(rank, parser.rankHead());
    freeTree();
    expect(PipeLexer::LBRACE);
    while (tokens.LA(1) != PipeLexer::RBRACE && tokens.LA(1) != antlr4::Token::EOF) {
      if (ast::StmtPtr stmt = builder.buildStmt(parser.stmt()))
        program.body.push_back(std::move(stmt));
      freeTree();
    }
    program.range = spanning(rank, expect(PipeLexer::RBRACE));
    schedule->rankPrograms.push_back(std::move(program));
  }
  antlr4::Token *closing = expect(PipeLexer::RBRACE);
  if (tokens.LA(1) != antlr4::Token::EOF)
    throw antlr4::ParseCancellationException();
  builder.finish(*schedule, spanning(keyword, closing), closing);
  return schedule;
}

// Hands what `from` collected to `to`, in order, as if reported there. Reports
// past `from`'s error limit were only counted: they are counted again.
static void replay(const DiagnosticEngine &from, DiagnosticEngine &to,
                   llvm::SMRange importedAt = {}) {
  unsigned errors = 0;
  for (const Diagnostic &staged : from.diagnostics()) {
    if (staged.kind == DiagKind::TooManyErrors)
      continue; // `to` says so itself when it passes its limit
    errors += staged.severity == Severity::Error;
    Diagnostic &d = to.report(staged.kind, staged.range, staged.message);
    d.notes = staged.notes;
    d.fixits = staged.fixits;
    d.repeats = staged.repeats;
    // Found while reading an imported file: say where it was imported (a file
    // imported by an imported file gets one note per level, innermost first).
    if (importedAt.Start.isValid())
      d.note(importedAt, "in the file imported here");
  }
  for (; errors < from.errorCount(); ++errors)
    to.report(DiagKind::TooManyErrors, {}, {});
}

namespace {

// What the files being parsed share: the definitions of all of them, the chain of
// imports being followed (to name a cycle), and the files already read.
struct ImportState {
  static constexpr size_t kMaxDepth = 16;
  static constexpr size_t kMaxFiles = 256;
  DefinitionTable defs;
  std::vector<std::string> chain;             // canonical paths, outermost first
  llvm::StringMap<unsigned> loaded;           // canonical path -> buffer
  std::vector<std::string> done;              // imported completely already

  // A parse that gives up and starts again first forgets what it added.
  struct Mark {
    DefinitionTable::Mark defs;
    size_t done;
  };
  Mark mark() const { return {defs.mark(), done.size()}; }
  void rollback(Mark m) {
    defs.rollback(m.defs);
    done.resize(m.done);
  }
};

std::unique_ptr<ast::Schedule> parseFile(unsigned bufferId, DiagnosticEngine &diags,
                                         ImportState &state, bool library);

std::string canonical(llvm::StringRef path) {
  llvm::SmallString<256> real;
  if (!llvm::sys::fs::real_path(path, real))
    return std::string(real);
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  llvm::sys::path::remove_dots(absolute, true);
  return std::string(absolute);
}

// `import "path";` from buffer `from`: the path is relative to that file's folder.
void importFile(const std::string &written, llvm::SMRange at, unsigned from,
                DiagnosticEngine &diags, ImportState &state) {
  llvm::StringRef importer = diags.sources().getMemoryBuffer(from)->getBufferIdentifier();
  llvm::SmallString<256> path;
  if (llvm::sys::path::is_absolute(written) || importer == "-" || importer.empty() ||
      importer == "<stdin>")
    path = written;
  else {
    path = llvm::sys::path::parent_path(importer);
    llvm::sys::path::append(path, written);
  }
  std::string key = canonical(path);
  for (size_t i = 0; i < state.chain.size(); ++i)
    if (state.chain[i] == key) {
      std::string cycle;
      for (size_t j = i; j < state.chain.size(); ++j)
        cycle += llvm::sys::path::filename(state.chain[j]).str() + " -> ";
      diags.report(DiagKind::ImportCycle, at,
                   "import cycle: " + cycle + llvm::sys::path::filename(key).str())
          .note("a file cannot import itself, directly or through others");
      return;
    }
  if (llvm::is_contained(state.done, key))
    return; // imported already (by another file): its definitions are in the table
  if (state.chain.size() >= ImportState::kMaxDepth || state.loaded.size() >= ImportState::kMaxFiles) {
    diags.report(DiagKind::ImportTooDeep, at,
                 "imports nest more than " + std::to_string(ImportState::kMaxDepth) +
                     " deep or reach more than " + std::to_string(ImportState::kMaxFiles) +
                     " files here");
    return;
  }
  unsigned buffer;
  auto found = state.loaded.find(key);
  if (found != state.loaded.end()) {
    buffer = found->second;
  } else {
    constexpr uint64_t kMaxBytes = 12u << 20; // the limit for an input file
    uint64_t size = 0;
    if (!llvm::sys::fs::file_size(path, size) && size > kMaxBytes) {
      diags.report(DiagKind::ImportNotFound, at,
                   "cannot import '" + written + "': larger than the 12 MiB limit");
      return;
    }
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
        llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!file || llvm::sys::fs::is_directory(path)) {
      diags.report(DiagKind::ImportNotFound, at,
                   "cannot import '" + written + "': " +
                       (file ? std::string("it is a directory") : file.getError().message()))
          .note("an import's path is relative to the folder of the file that imports it (" +
                std::string(path.str()) + ")");
      return;
    }
    buffer = diags.sources().AddNewSourceBuffer(std::move(*file), at.Start);
    state.loaded[key] = buffer;
  }
  state.chain.push_back(key);
  // Its findings are passed on with a note at this import, whatever reported them.
  DiagnosticEngine imported(diags.sources());
  imported.setErrorLimit(diags.errorLimit());
  parseFile(buffer, imported, state, /*library=*/true);
  replay(imported, diags, at);
  state.chain.pop_back();
  state.done.push_back(key);
}

std::unique_ptr<ast::Schedule> parseFile(unsigned bufferId, DiagnosticEngine &diags,
                                         ImportState &state, bool library) {
  llvm::StringRef source = diags.sources().getMemoryBuffer(bufferId)->getBuffer();
  if (!checkUtf8(source, diags))
    return nullptr;
  SourceText text(source);
  unsigned errorsBefore = diags.errorCount();

  DecodedInput input(source);
  CompactLexer lexer(&input);
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
  // The builder's findings wait until the whole file has parsed: a file with a
  // syntax error reports only that, as the whole-file parse below does.
  antlr4::Token *stuck = nullptr; // where the piecewise parse gave up
  for (auto mode : {antlr4::atn::PredictionMode::SLL, antlr4::atn::PredictionMode::LL}) {
    tokens.seek(0);
    parser.reset();
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(mode);
    DiagnosticEngine staged(diags.sources());
    staged.setErrorLimit(diags.errorLimit());
    AstBuilder builder(staged, text, state.defs, [&](const std::string &path, llvm::SMRange at) {
      importFile(path, at, bufferId, staged, state);
    });
    ImportState::Mark mark = state.mark();
    try {
      std::unique_ptr<ast::Schedule> schedule =
          parseInPieces(parser, tokens, builder, text, library, staged);
      replay(staged, diags);
      if (diags.errorCount() != errorsBefore)
        return nullptr;
      return schedule;
    } catch (const antlr4::ParseCancellationException &) {
      stuck = tokens.LT(1);
      state.rollback(mark);
    }
  }

  // The file has a syntax error. Recovering from it, to report each error with
  // what was expected, needs the whole file's parse tree: about 300 bytes a
  // token. Past kMaxRecoveryTokens that could exhaust memory, so the first error
  // is reported where the parse stopped, and no more.
  if (tokens.size() > kMaxRecoveryTokens) {
    diags.report(DiagKind::SyntaxError,
                 text.rangeOf(stuck->getStartIndex(), stuck->getStartIndex()),
                 "syntax error at or just after this point (in a file of " +
                     std::to_string(tokens.size()) + " tokens only the first is reported)");
    return nullptr;
  }

  // Error recovery and full LL need the whole file's tree.
  tokens.seek(0);
  parser.reset();
  auto recovering = std::make_shared<SyntaxErrorStrategy>(diags, text);
  parser.setErrorHandler(recovering);
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::LL);
  if (library) {
    // Only its imports and definitions: the `file` rule would ask for a schedule.
    // A syntax error in them is all that is reported (nothing is imported).
    while (tokens.LA(1) != antlr4::Token::EOF) {
      size_t before = tokens.index();
      parser.preamble();
      if (tokens.index() == before)
        tokens.consume(); // recovery made no progress: skip the token it is stuck on
    }
    recovering->finish(&parser);
    return nullptr;
  }
  PipeParser::FileContext *tree = parser.file();
  recovering->finish(&parser);
  if (diags.errorCount() != errorsBefore)
    return nullptr;

  AstBuilder builder(diags, text, state.defs, [&](const std::string &path, llvm::SMRange at) {
    importFile(path, at, bufferId, diags, state);
  });
  std::unique_ptr<ast::Schedule> schedule = builder.build(tree);
  if (diags.errorCount() != errorsBefore)
    return nullptr;
  return schedule;
}

} // namespace

std::unique_ptr<ast::Schedule> parseSchedule(unsigned bufferId, DiagnosticEngine &diags) {
  ImportState state;
  return parseFile(bufferId, diags, state, /*library=*/false);
}

bool parseRangeText(unsigned bufferId, size_t offset, ast::ExprPtr &lo, ast::ExprPtr &hi,
                    DiagnosticEngine &diags) {
  llvm::StringRef source =
      diags.sources().getMemoryBuffer(bufferId)->getBuffer().drop_front(offset);
  if (!checkUtf8(source, diags))
    return false;
  SourceText text(source);
  unsigned errorsBefore = diags.errorCount();
  DecodedInput input(source);
  CompactLexer lexer(&input);
  LexerErrorListener lexerErrors(diags, text);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&lexerErrors);
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  reportMalformedTokens(tokens, text, diags);
  if (diags.errorCount() != errorsBefore || !checkNesting(tokens, text, diags))
    return false;
  PipeParser parser(&tokens);
  parser.removeErrorListeners();
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  PipeParser::RangeContext *range = nullptr;
  try {
    range = parser.range();
  } catch (const antlr4::ParseCancellationException &) {
    range = nullptr;
  }
  if (!range || tokens.LA(1) != antlr4::Token::EOF) {
    antlr4::Token *stuck = tokens.LT(1);
    size_t at = stuck->getStartIndex(); // SourceText clamps EOF's index
    diags.report(DiagKind::SyntaxError, text.rangeOf(at, at),
                 "expected a half-open range 'A..B' (bounds may use parameters)");
    return false;
  }
  DefinitionTable none;
  AstBuilder builder(diags, text, none);
  builder.buildRange(range, lo, hi);
  return diags.errorCount() == errorsBefore;
}

} // namespace pipec
