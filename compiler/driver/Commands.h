// The pipec subcommands. Each takes parsed arguments and returns the exit status:
// 0 clean, 1 errors (or warnings under --werror), 2 usage or I/O errors.
#pragma once

#include "elab/Elaborator.h"

#include <string>
#include <vector>

namespace pipec {

enum ExitStatus { kExitClean = 0, kExitErrors = 1, kExitUsage = 2 };

struct CommonArgs {
  ElabOptions elab;
  bool werror = false;
  bool timePasses = false;
  bool color = false;
};

enum class EmitTarget { IR, AST };

int runCheck(const std::vector<std::string> &files, const CommonArgs &args);
int runEmit(const std::string &file, EmitTarget target, const std::string &output,
            const CommonArgs &args);

} // namespace pipec
