#include "synth/SynthText.h"

#include "diag/DiagnosticRenderer.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>

namespace pipec::synth {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

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
