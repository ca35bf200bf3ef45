#include "TestSupport.h"

#include "diag/DiagnosticRenderer.h"
#include "emit/IRPrinter.h"
#include "sema/NameResolver.h"
#include "syntax/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace pipec::test {

bool Compiled::has(DiagKind kind) const {
  for (const Diagnostic &d : diags.diagnostics())
    if (d.kind == kind)
      return true;
  return false;
}

std::string Compiled::renderedDiagnostics() const {
  std::string text;
  llvm::raw_string_ostream out(text);
  renderText(diags, out, false);
  return out.str();
}

std::string Compiled::ir_text() const {
  std::string text;
  llvm::raw_string_ostream out(text);
  if (ir)
    printIR(*ir, out);
  return out.str();
}

std::unique_ptr<Compiled> compile(const std::string &source, const ElabOptions &options) {
  auto c = std::make_unique<Compiled>();
  unsigned buffer = c->sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "test.pipe"), llvm::SMLoc());
  c->ast = parseSchedule(buffer, c->diags);
  if (c->ast && resolveNames(*c->ast, c->diags))
    c->ir = elaborate(*c->ast, options, c->diags);
  return c;
}

std::string withBody(const std::string &body, int P, int M) {
  return "schedule t(P = " + std::to_string(P) + ", M = " + std::to_string(M) +
         ") {\n  ranks P; stages P; microbatches M;\n  place stage s -> rank s;\n  rank r {\n" +
         body + "\n  }\n}\n";
}

} // namespace pipec::test
