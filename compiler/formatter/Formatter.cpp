#include "formatter/Formatter.h"

#include "formatter/FmtTokens.h"
#include "formatter/CanonicalLayout.h"

#include "elab/IRPrinter.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <optional>

namespace pipec::formatter {

namespace {

// The elaborated ops (at the default parameters) as `emit --target ir` prints them.
std::string irText(const ScheduleIR &ir) {
  std::string ops;
  llvm::raw_string_ostream out(ops);
  printIR(ir, out);
  return out.str();
}

// Problems that leave no trustworthy token stream or parse: such a file is
// not formatted. The parser's other findings (a missing `ranks`, an unknown op)
// are about meaning, and a file with them is formatted like any other.
bool blocksFormatting(DiagKind kind) {
  switch (kind) {
  case DiagKind::SyntaxError:
  case DiagKind::ExpectedSemicolon:
  case DiagKind::UnexpectedCharacter:
  case DiagKind::UnterminatedString:
  case DiagKind::UnterminatedComment:
  case DiagKind::InvalidUTF8:
  case DiagKind::NestingTooDeep:
    return true;
  default:
    return false;
  }
}

} // namespace

FormatResult formatSource(llvm::StringRef name, llvm::StringRef source) {
  FormatResult result;
  result.compilation = Compilation::fromText(name.str(), source);
  // The same error limit as every command (a line of junk must not print megabytes);
  // a file that reaches it is not formatted, since a syntax error past the limit
  // would go unseen.
  result.compilation->diags().setErrorLimit(limits::kErrorsShown);
  // The ops to compare with, from the same run that looks for syntax errors.
  std::optional<std::string> before;
  if (result.compilation->runFrontEnd(ElabOptions())) {
    before = irText(*result.compilation->ir());
  } else if (!result.compilation->ast()) {
    const auto &found = result.compilation->diags().diagnostics();
    if (result.compilation->diags().stopped() ||
        std::any_of(found.begin(), found.end(),
                    [](const Diagnostic &d) { return blocksFormatting(d.kind); })) {
      result.status = FormatResult::Rejected;
      return result;
    }
  }
  result.compilation.reset(); // memory for what follows, on the largest inputs

  std::vector<Token> tokens;
  std::string error;
  if (!lexForFormat(source, tokens, error)) {
    result.status = FormatResult::Unsafe;
    result.problem = "the source parses but does not lex: " + error;
    return result;
  }
  result.text = layoutTokens(tokens);
  std::string signature = tokenSignature(tokens);
  tokens = std::vector<Token>();

  std::vector<Token> after;
  if (!lexForFormat(result.text, after, error) || signature != tokenSignature(after)) {
    result.status = FormatResult::Unsafe;
    result.problem = "the formatted text has different tokens";
    return result;
  }
  after = std::vector<Token>();
  // Only a source whose schedule elaborates has ops to compare; the token check
  // above covers the rest.
  if (before) {
    auto formatted = Compilation::fromText(name.str(), result.text);
    if (!formatted->runFrontEnd(ElabOptions()) || irText(*formatted->ir()) != *before) {
      result.status = FormatResult::Unsafe;
      result.problem = "the formatted schedule elaborates to different ops";
    }
  }
  return result;
}

} // namespace pipec::formatter
