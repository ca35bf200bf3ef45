// The user's stage sources of `pipec build` (see StageSources.h). Each is
// compiled on its own, so a failure names the file, and run directly (no
// shell), as BuildCommand runs the program's compile.
#include "driver/StageSources.h"

#include "support/SafeText.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

namespace pipec {

namespace {

llvm::raw_ostream &error() { return llvm::errs() << "pipec: error: "; }

std::string joined(const std::vector<std::string> &words) {
  std::string line;
  for (const std::string &word : words)
    line += (line.empty() ? "" : " ") + word;
  return line;
}

} // namespace

bool stageSourcesReadable(const std::vector<std::string> &sources) {
  namespace fs = llvm::sys::fs;
  for (const std::string &source : sources) {
    fs::file_status status;
    if (fs::status(source, status)) {
      error() << "cannot read the stage source '" << source << "': no such file\n";
      return false;
    }
    if (status.type() != fs::file_type::regular_file) {
      error() << "cannot read the stage source '" << source << "': not a regular file\n";
      return false;
    }
  }
  return true;
}

int userStageObjects(const Toolchain &toolchain, const std::vector<std::string> &sources,
                     const std::string &scratchDir, std::vector<std::string> &objects) {
  for (size_t i = 0; i < sources.size(); ++i) {
    // Numbered: two sources may share a file name in different directories.
    llvm::SmallString<256> object(scratchDir);
    llvm::sys::path::append(object, "stage" + std::to_string(i) + "-" +
                                        fileNameSafe(llvm::sys::path::stem(sources[i]), "source") + ".o");
    std::vector<std::string> command = toolchain.compiler;
    command.insert(command.end(), toolchain.flags.begin(), toolchain.flags.end());
    command.push_back("-c");
    command.push_back(sources[i]);
    command.push_back("-o");
    command.push_back(std::string(object));

    llvm::SmallString<256> log(scratchDir);
    llvm::sys::path::append(log, "stage-source-output.txt");
    CommandRun run = runCompilerCommand(command, std::string(log));
    const int result = run.status;
    const std::string &message = run.message;
    if (run.failedToStart) {
      error() << "cannot run the C++ compiler '" << command[0] << "': " << message << "\n";
      return kExitUsage;
    }
    if (result != 0) {
      error() << "the stage source '" << sources[i] << "' does not compile (the C++ compiler failed"
              << (result > 0 ? " with exit status " + std::to_string(result) : ": " + message)
              << "); the command was:\n  " << joined(command) << "\n";
      return kExitErrors;
    }
    objects.push_back(std::string(object));
  }
  return kExitClean;
}

} // namespace pipec
