#include "driver/Compilation.h"

#include "sema/NameResolver.h"
#include "syntax/Parser.h"

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

bool Compilation::load() {
  return timed("load", [&] {
    auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path_, /*IsText=*/true);
    if (!buffer) {
      diags_.report(DiagKind::FileNotReadable,
                    "cannot read '" + path_ + "': " + buffer.getError().message());
      return false;
    }
    buffer_ = sources_.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    return true;
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
