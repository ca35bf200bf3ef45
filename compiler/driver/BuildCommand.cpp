// `pipec build FILE --target cpu|cuda -o EXE`: checks the schedule, writes the
// program (codegen/CpuEmitter or codegen/CudaEmitter) into a fresh temporary
// directory, and compiles and links it against the runtime with the toolchain
// driver/BuildTools finds (the system's C++ compiler, or nvcc for sm_90), run
// directly (no shell, so no quoting problems with paths).
// Missing tools and an output path that cannot be written are usage errors
// (exit 2, checked before anything runs); a compiler that fails is an error
// (exit 1) and its output is printed. The generated source is named from a
// sanitised stem of the schedule's file name: the name reaches the compiler's
// line markers, where a newline would start a preprocessor directive.
// --stage-source files (driver/StageSources) are compiled alongside and linked
// in as objects.
#include "driver/Commands.h"
#include "codegen/RuntimeSupport.h"
#include "driver/Reporting.h"

#include "driver/BuildTools.h"
#include "driver/EmitProgram.h"
#include "driver/StageSources.h"
#include "support/SafeText.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace pipec {

namespace {

llvm::raw_ostream &error() { return llvm::errs() << "pipec: error: "; }

// Removes the temporary directory however the build ends.
struct TemporaryDirectory {
  llvm::SmallString<128> path;
  ~TemporaryDirectory() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

// An executable path the linker could not write is our I/O error, found before
// the checks and the compiler run: a directory, a device (/dev/full), a
// missing or read-only directory.
bool canWriteExecutable(const std::string &output) {
  namespace fs = llvm::sys::fs;
  fs::file_status status;
  if (!fs::status(output, status)) {
    if (status.type() == fs::file_type::directory_file) {
      error() << "cannot write '" << output << "': it is a directory\n";
      return false;
    }
    if (status.type() != fs::file_type::regular_file) {
      error() << "cannot write '" << output << "': not a regular file\n";
      return false;
    }
    if (!fs::can_write(output)) {
      error() << "cannot write '" << output << "': permission denied\n";
      return false;
    }
    return true;
  }
  llvm::StringRef outputDir = llvm::sys::path::parent_path(output);
  if (!outputDir.empty() && !fs::is_directory(outputDir)) {
    error() << "cannot write '" << output << "': no directory '" << outputDir << "'\n";
    return false;
  }
  if (!fs::can_write(outputDir.empty() ? "." : outputDir)) {
    error() << "cannot write '" << output << "': the directory is not writable\n";
    return false;
  }
  return true;
}

} // namespace

int runBuild(const std::string &file, const BuildArgs &build, const CommonArgs &args) {
  if (!canWriteExecutable(build.output))
    return kExitUsage;
  if (!stageSourcesReadable(build.stageSources)) // --stage-source
    return kExitUsage;

  // A program runs only what the checks proved.
  Compilation compilation(file);
  compilation.diags().setErrorLimit(args.errorLimit);
  compilation.diags().setWarningPolicy(args.warnings);
  bool ok = compilation.runAll(args.elab, args.checks) &&
            checkRuntimeSupport(*compilation.ir(),
                                build.target == BuildTarget::Cuda ? RuntimeTarget::CudaProgram
                                                                  : RuntimeTarget::CpuProgram,
                                compilation.diags());
  int status = finish(compilation, args);
  if (!ok || status != kExitClean)
    return status != kExitClean ? status : int(kExitErrors);

  Toolchain toolchain;
  if (!findToolchain(build.target, toolchain))
    return kExitUsage;
  if (build.torchStages && !addTorchStages(toolchain))
    return kExitUsage;

  TemporaryDirectory scratch;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("pipec-build", scratch.path)) {
    error() << "cannot create a temporary directory: " << ec.message() << "\n";
    return kExitUsage;
  }
  std::string sourceDir = std::string(scratch.path);
  if (!build.keepSource.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(build.keepSource)) {
      error() << "cannot create '" << build.keepSource << "': " << ec.message() << "\n";
      return kExitUsage;
    }
    sourceDir = build.keepSource;
  }
  llvm::SmallString<256> source(sourceDir);
  llvm::sys::path::append(source, fileNameSafe(llvm::sys::path::stem(file), "program") +
                                      toolchain.sourceExtension);
  if (!writeOutputFile(std::string(source), [&](llvm::raw_ostream &out) {
        emitProgram(compilation, build.target, args, out);
      }))
    return kExitUsage;

  // The user's stages (--stage-source), compiled first so their errors come alone.
  std::vector<std::string> stageObjects;
  if (int status = userStageObjects(toolchain, build.stageSources, std::string(scratch.path), stageObjects))
    return status;

  std::vector<std::string> command = toolchain.compiler;
  command.insert(command.end(), toolchain.flags.begin(), toolchain.flags.end());
  command.push_back(std::string(source));
  command.insert(command.end(), stageObjects.begin(), stageObjects.end());
  command.insert(command.end(), toolchain.libraries.begin(), toolchain.libraries.end());
  command.push_back("-o");
  command.push_back(build.output);

  llvm::SmallString<128> log(scratch.path);
  llvm::sys::path::append(log, "compiler-output.txt");
  CommandRun run = runCompilerCommand(command, std::string(log));
  const int result = run.status;
  const std::string &message = run.message;
  if (run.failedToStart) {
    error() << "cannot run the C++ compiler '" << command[0] << "': " << message << "\n";
    return kExitUsage;
  }
  if (result != 0) {
    std::string commandLine;
    for (const std::string &word : command)
      commandLine += (commandLine.empty() ? "" : " ") + word;
    error() << "the C++ compiler failed"
            << (result > 0 ? " with exit status " + std::to_string(result) : ": " + message)
            << "; the command was:\n  " << commandLine << "\n";
    if (build.keepSource.empty())
      llvm::errs() << "pipec: note: rerun with --keep-source DIR to keep the generated C++\n";
    return kExitErrors;
  }
  return kExitClean;
}

} // namespace pipec
