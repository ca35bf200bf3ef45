#include "synth/SynthText.h"

#include "diag/DiagnosticRenderer.h"

#include "llvm/Support/raw_ostream.h"


namespace pipec::synth {

std::unique_ptr<Compilation> checkText(const std::string &name, const std::string &text,
                                       const CheckOptions &options, std::string &error) {
  auto compilation = Compilation::fromText(name, text);
  if (compilation->runAll(ElabOptions(), options) && !compilation->diags().hasErrors())
    return compilation;
  llvm::raw_string_ostream out(error);
  renderText(compilation->diags(), out, false);
  return nullptr;
}

} // namespace pipec::synth
