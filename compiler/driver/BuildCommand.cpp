// `pipec build FILE --target cpu|cuda -o EXE`: checks the schedule, writes the
// program (codegen/CpuEmitter or codegen/CudaEmitter) into a fresh temporary
// directory, and compiles and links it against the runtime with the toolchain
// driver/BuildTools finds (the system's C++ compiler, or nvcc for sm_90), run
// directly (no shell, so no quoting problems with paths).
// Missing tools are usage errors (exit 2); a compiler that fails is an error
// (exit 1) and its output is printed.
#include "driver/Commands.h"
#include "driver/Reporting.h"

#include "codegen/CpuEmitter.h"
#include "codegen/CudaEmitter.h"
#include "codegen/StreamLowering.h"
#include "driver/BuildTools.h"

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

} // namespace

int runBuild(const std::string &file, const BuildArgs &build, const CommonArgs &args) {
  // A program runs only what the checks proved.
  Compilation compilation(file);
  bool ok = compilation.runAll(args.elab, args.checks);
  int status = finish(compilation, args);
  if (!ok || status != kExitClean)
    return status != kExitClean ? status : int(kExitErrors);

  // An I/O error of ours (exit 2), not a linker failure (exit 1).
  llvm::StringRef outputDir = llvm::sys::path::parent_path(build.output);
  if (!outputDir.empty() && !llvm::sys::fs::is_directory(outputDir)) {
    error() << "cannot write '" << build.output << "': no directory '" << outputDir << "'\n";
    return kExitUsage;
  }

  Toolchain toolchain;
  if (!findToolchain(build.target, toolchain))
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
  llvm::StringRef stem = llvm::sys::path::stem(file);
  llvm::SmallString<256> source(sourceDir);
  llvm::sys::path::append(source, (stem.empty() || stem == "-" ? "program" : stem) +
                                       toolchain.sourceExtension);
  if (!writeOutputFile(std::string(source), [&](llvm::raw_ostream &out) {
        const ScheduleIR &ir = *compilation.ir();
        if (build.target == BuildTarget::Cuda)
          emitCudaProgram(ir, *compilation.report(), streamPlanCosts(ir, args.costs),
                          compilation.path(), out);
        else
          emitCpuProgram(ir, *compilation.report(), compilation.path(), out);
      }))
    return kExitUsage;

  std::vector<std::string> command = toolchain.compiler;
  command.insert(command.end(), toolchain.flags.begin(), toolchain.flags.end());
  command.push_back(std::string(source));
  command.insert(command.end(), toolchain.libraries.begin(), toolchain.libraries.end());
  command.push_back("-o");
  command.push_back(build.output);

  llvm::SmallString<128> log(scratch.path);
  llvm::sys::path::append(log, "compiler-output.txt");
  std::vector<llvm::StringRef> argv(command.begin(), command.end());
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(log),
                                                 llvm::StringRef(log)};
  std::string message;
  bool failedToStart = false;
  int result = llvm::sys::ExecuteAndWait(command[0], argv, llvm::None, redirects, 0, 0, &message,
                                         &failedToStart);
  auto output = llvm::MemoryBuffer::getFile(log, /*IsText=*/true);
  if (output && !(*output)->getBuffer().empty())
    llvm::errs() << (*output)->getBuffer();
  if (failedToStart) {
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
