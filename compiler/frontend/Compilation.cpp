#include "frontend/Compilation.h"

#include "sema/NameResolver.h"
#include "syntax/Parser.h"

#include "frontend/FlagNames.h"
#include "frontend/InputTranslator.h"
#include "support/InputFile.h"

#include "llvm/Support/MemoryBuffer.h"

#include <chrono>

namespace pipec {

template <typename Fn> bool Compilation::timed(const char *pass, Fn fn) {
  auto start = std::chrono::steady_clock::now();
  bool ok = fn();
  std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
  times_.push_back({pass, elapsed.count()});
  return ok;
}

std::unique_ptr<Compilation> Compilation::fromText(std::string name, llvm::StringRef text) {
  auto compilation = std::make_unique<Compilation>(name);
  compilation->buffer_ = compilation->sources_.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
  return compilation;
}

bool Compilation::load() {
  if (buffer_ != 0)
    return true;
  return timed("load", [&] {
    std::string error;
    std::unique_ptr<llvm::MemoryBuffer> buffer = readInputFile(path_, error);
    if (!buffer) {
      diags_.report(DiagKind::FileNotReadable, "cannot read '" + path_ + "': " + error);
      return false;
    }
    buffer_ = sources_.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    // Another format where a .pipe is expected (`pipec check x.csv`): its
    // translator's .pipe text is what the later phases see.
    if (InputTranslator translate = inputTranslatorFor(path_))
      buffer_ = translate(sources_, diags_, path_, buffer_);
    return buffer_ != 0;
  });
}


bool Compilation::parse() {
  return timed("parse", [&] {
    ast_ = parseSchedule(buffer_, diags_);
    return ast_ != nullptr;
  });
}

bool Compilation::resolve() {
  return timed("resolve", [&] { return resolveNames(*ast_, diags_); });
}

bool Compilation::checkFlagNames(llvm::ArrayRef<FlagName> names) {
  return pipec::checkFlagNames(*ast_, names, diags_);
}

bool Compilation::buildDomain(llvm::ArrayRef<ParamDefine> defines, uint64_t maxPoints) {
  // Untimed: it only enumerates values; each point's elaboration is the work.
  domain_ = pipec::buildDomain(*ast_, defines, maxPoints, diags_);
  return domain_.has_value();
}

bool Compilation::elaborate(const ElabOptions &options) {
  return timed("elaborate", [&] {
    ir_ = pipec::elaborate(*ast_, options, diags_);
    return ir_.has_value();
  });
}

bool Compilation::check(const CheckOptions &options) {
  return timed("check", [&] {
    report_ = runChecks(*ir_, options, diags_);
    return report_->ok;
  });
}

} // namespace pipec
