// The -W flags: which warnings pipec reports, and which it reports as errors.
//
//   -W<Name>           report the warning (the default for every warning today)
//   -Wno-<Name>        do not report it
//   -Werror=<Name>     report it as an error
//   -Wno-error=<Name>  keep it a warning that does not fail the run under --werror
//   -Werror            the same as --werror; -Wno-error undoes it
//
// Flags apply in command-line order, so a later flag wins (-Wno-X -WX reports X).
#pragma once

#include "diag/Diagnostics.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace pipec {

struct WarningFlags {
  WarningPolicy policy;
  bool werror = false; // every warning that is reported fails the run

  // Applies one flag, written without its "-W". Returns false with `error` set
  // (a usage error) when the flag names no warning.
  bool apply(llvm::StringRef flag, std::string &error);
};

} // namespace pipec
