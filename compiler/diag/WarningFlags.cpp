#include "diag/WarningFlags.h"

#include "llvm/ADT/SmallVector.h"

namespace pipec {

namespace {

const DiagKindInfo *findKind(llvm::StringRef name, DiagKind &kind) {
  llvm::ArrayRef<DiagKindInfo> kinds = allDiagKinds();
  for (size_t i = 0; i < kinds.size(); ++i)
    if (name == kinds[i].name) {
      kind = static_cast<DiagKind>(i);
      return &kinds[i];
    }
  return nullptr;
}

void set(std::vector<bool> &flags, DiagKind kind, bool value) {
  auto index = static_cast<size_t>(kind);
  if (flags.size() <= index)
    flags.resize(allDiagKinds().size());
  flags[index] = value;
}

std::string unknownWarning(llvm::StringRef flag, llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef, 16> warnings;
  for (const DiagKindInfo &info : allDiagKinds())
    if (info.severity == Severity::Warning)
      warnings.push_back(info.name);
  std::string flagText = "-W" + flag.str() + ": ";
  DiagKind kind;
  if (findKind(name, kind))
    return flagText + "'" + name.str() + "' is an error, not a warning; only warnings can be "
                                         "turned off or made errors";
  std::string message = flagText + "unknown warning '" + name.str() + "'";
  if (std::string guess = closestMatch(name, warnings); !guess.empty())
    message += "; did you mean '" + guess + "'?";
  return message;
}

} // namespace

bool WarningFlags::apply(llvm::StringRef flag, std::string &error) {
  if (flag == "error" || flag == "no-error") {
    werror = flag == "error";
    return true;
  }
  llvm::StringRef name = flag;
  bool errorForm = name.consume_front("error=");
  bool noErrorForm = !errorForm && name.consume_front("no-error=");
  bool noForm = !errorForm && !noErrorForm && name.consume_front("no-");
  DiagKind kind;
  const DiagKindInfo *info = findKind(name, kind);
  if (!info || info->severity != Severity::Warning) {
    error = unknownWarning(flag, name);
    return false;
  }
  if (noErrorForm) {
    set(policy.asError, kind, false);
    set(policy.notWerror, kind, true);
    return true;
  }
  set(policy.disabled, kind, noForm);
  if (errorForm) {
    set(policy.asError, kind, true);
    set(policy.notWerror, kind, false);
  }
  return true;
}

} // namespace pipec
