#include "fmt/Formatter.h"

#include "fmt/FmtTokens.h"
#include "fmt/Layout.h"

#include "emit/IRPrinter.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace pipec::fmt {

namespace {

// The elaborated ops at the default parameters as `emit --target ir` prints
// them, or nothing when the source does not get that far.
std::optional<std::string> elaboratedOps(llvm::StringRef name, llvm::StringRef source) {
  std::unique_ptr<Compilation> compilation = Compilation::fromText(name.str(), source);
  if (!compilation->runFrontEnd(ElabOptions()))
    return std::nullopt;
  std::string ops;
  llvm::raw_string_ostream out(ops);
  printIR(*compilation->ir(), out);
  return out.str();
}

} // namespace

FormatResult formatSource(llvm::StringRef name, llvm::StringRef source) {
  FormatResult result;
  result.compilation = Compilation::fromText(name.str(), source);
  if (!result.compilation->load() || !result.compilation->parse()) {
    result.status = FormatResult::Rejected;
    return result;
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
  // Only a source whose schedule elaborates has ops to compare; the token check
  // above covers the rest.
  if (std::optional<std::string> before = elaboratedOps(name, source)) {
    std::optional<std::string> formatted = elaboratedOps(name, result.text);
    if (!formatted || *formatted != *before) {
      result.status = FormatResult::Unsafe;
      result.problem = "the formatted schedule elaborates to different ops";
    }
  }
  return result;
}

} // namespace pipec::fmt
