// `pipec build FILE --target cpu -o EXE`: checks the schedule, writes the CPU
// program (codegen/CpuEmitter) into a fresh temporary directory, and compiles
// and links it against the runtime with the system's C++ compiler, run directly
// (no shell, so no quoting problems with paths).
//
// Where things come from, each overridable so that a build tree, an install and
// CI all work:
//   - the C++ compiler: $CXX (a name or a path, optionally followed by
//     arguments, as in "ccache g++"), else c++, g++ or clang++ on PATH;
//   - the runtime: $PIPEC_RUNTIME_DIR (holding include/pipert/Program.h and
//     lib/libpipert.a), else the build tree pipec was configured in.
// Missing tools are usage errors (exit 2); a compiler that fails is an error
// (exit 1) and its output is printed.
#include "driver/Commands.h"
#include "driver/Reporting.h"

#include "codegen/CpuEmitter.h"

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

#ifndef PIPEC_RUNTIME_INCLUDE_DIR
#error "compiler/CMakeLists.txt defines PIPEC_RUNTIME_INCLUDE_DIR for this file"
#endif
#ifndef PIPEC_RUNTIME_LIBRARY
#error "compiler/CMakeLists.txt defines PIPEC_RUNTIME_LIBRARY for this file"
#endif

namespace pipec {

namespace {

llvm::raw_ostream &error() { return llvm::errs() << "pipec: error: "; }

// Resolves a program named by $CXX or a default: a path must be executable; a
// bare name is looked up on PATH. Empty when not found.
std::string findProgram(llvm::StringRef name) {
  if (name.contains('/'))
    return llvm::sys::fs::can_execute(name) ? name.str() : std::string();
  llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name);
  return path ? *path : std::string();
}

// The compiler command's first words: the program, then any arguments $CXX gave.
bool findCompiler(std::vector<std::string> &command) {
  if (llvm::Optional<std::string> cxx = llvm::sys::Process::GetEnv("CXX")) {
    llvm::SmallVector<llvm::StringRef, 4> words;
    llvm::StringRef(*cxx).split(words, ' ', -1, /*KeepEmpty=*/false);
    std::string program = words.empty() ? std::string() : findProgram(words[0]);
    if (program.empty()) {
      error() << "cannot find the C++ compiler '" << *cxx << "' that $CXX names\n";
      return false;
    }
    command.push_back(program);
    for (size_t i = 1; i < words.size(); ++i)
      command.push_back(words[i].str());
    return true;
  }
  for (const char *name : {"c++", "g++", "clang++"}) {
    std::string program = findProgram(name);
    if (!program.empty()) {
      command.push_back(program);
      return true;
    }
  }
  error() << "cannot find a C++ compiler: set $CXX, or put c++, g++ or clang++ on PATH\n";
  return false;
}

// The runtime's include directory and static library.
bool findRuntime(std::string &include, std::string &library) {
  llvm::Optional<std::string> root = llvm::sys::Process::GetEnv("PIPEC_RUNTIME_DIR");
  const char *origin = root ? "$PIPEC_RUNTIME_DIR" : "the build tree pipec was configured in";
  if (root) {
    llvm::SmallString<256> path(*root);
    llvm::sys::path::append(path, "include");
    include = std::string(path);
    path = *root;
    llvm::sys::path::append(path, "lib", "libpipert.a");
    library = std::string(path);
  } else {
    include = PIPEC_RUNTIME_INCLUDE_DIR;
    library = PIPEC_RUNTIME_LIBRARY;
  }
  llvm::SmallString<256> header(include);
  llvm::sys::path::append(header, "pipert", "Program.h");
  bool ok = true;
  for (const std::string &path : {std::string(header), library}) {
    if (llvm::sys::fs::exists(path))
      continue;
    error() << "the runtime file '" << path << "' (from " << origin << ") does not exist\n";
    ok = false;
  }
  if (!ok)
    llvm::errs() << "pipec: note: build the runtime (ninja pipert), or set $PIPEC_RUNTIME_DIR "
                    "to a directory holding include/pipert/Program.h and lib/libpipert.a\n";
  return ok;
}

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
  if (build.target == BuildTarget::Cuda) {
    error() << "the CUDA backend is not built yet; use --target cpu\n";
    return kExitUsage;
  }

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

  std::vector<std::string> command;
  std::string include, library;
  bool haveCompiler = findCompiler(command);
  if (!findRuntime(include, library) || !haveCompiler)
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
  llvm::sys::path::append(source, (stem.empty() || stem == "-" ? "program" : stem) + ".cpp");
  if (!writeOutputFile(std::string(source), [&](llvm::raw_ostream &out) {
        emitCpuProgram(*compilation.ir(), *compilation.report(), compilation.path(), out);
      }))
    return kExitUsage;

  for (const char *flag : {"-std=c++17", "-O2"})
    command.push_back(flag);
  command.push_back("-I" + include);
  command.push_back(std::string(source));
  command.push_back(library);
  for (const char *flag : {"-pthread", "-o"})
    command.push_back(flag);
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
