#include "driver/BuildTools.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#ifndef PIPEC_RUNTIME_INCLUDE_DIR
#error "compiler/CMakeLists.txt defines PIPEC_RUNTIME_INCLUDE_DIR for this file"
#endif
#ifndef PIPEC_RUNTIME_LIBRARY
#error "compiler/CMakeLists.txt defines PIPEC_RUNTIME_LIBRARY for this file"
#endif
// Empty when this build had no CUDA toolkit.
#ifndef PIPEC_RUNTIME_CUDA_LIBRARY
#define PIPEC_RUNTIME_CUDA_LIBRARY ""
#endif
#ifndef PIPEC_NCCL_LIBRARY
#define PIPEC_NCCL_LIBRARY ""
#endif
// Empty when this build found no LibTorch (runtime/torch/LibTorch.cmake).
#ifndef PIPEC_RUNTIME_TORCH_LIBRARY
#define PIPEC_RUNTIME_TORCH_LIBRARY ""
#define PIPEC_TORCH_LIBRARIES ""
#define PIPEC_TORCH_LIBRARY_DIR ""
#endif

namespace pipec {

namespace {

llvm::raw_ostream &error() { return llvm::errs() << "pipec: error: "; }

llvm::Optional<std::string> env(const char *name) {
  llvm::Optional<std::string> value = llvm::sys::Process::GetEnv(name);
  return value && !value->empty() ? value : llvm::None;
}

std::string join(llvm::StringRef first, llvm::StringRef second, llvm::StringRef third = "") {
  llvm::SmallString<256> path(first);
  llvm::sys::path::append(path, second, third);
  return std::string(path);
}

// A path must be executable; a bare name is looked up on PATH. Empty when not found.
std::string findProgram(llvm::StringRef name) {
  if (name.contains('/'))
    return llvm::sys::fs::can_execute(name) ? name.str() : std::string();
  llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name);
  return path ? *path : std::string();
}

// `value` as a program followed by arguments ("ccache g++ -m64").
bool programFromVariable(const char *what, const char *variable, const std::string &value,
                         std::vector<std::string> &command) {
  llvm::SmallVector<llvm::StringRef, 4> words;
  llvm::StringRef(value).split(words, ' ', -1, /*KeepEmpty=*/false);
  std::string program = words.empty() ? std::string() : findProgram(words[0]);
  if (program.empty()) {
    error() << "cannot find the " << what << " '" << value << "' that $" << variable << " names\n";
    return false;
  }
  command.push_back(program);
  for (size_t i = 1; i < words.size(); ++i)
    command.push_back(words[i].str());
  return true;
}

bool findCxx(std::vector<std::string> &command) {
  if (llvm::Optional<std::string> cxx = env("CXX"))
    return programFromVariable("C++ compiler", "CXX", *cxx, command);
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

bool findNvcc(std::vector<std::string> &command) {
  if (llvm::Optional<std::string> nvcc = env("NVCC"))
    return programFromVariable("CUDA compiler", "NVCC", *nvcc, command);
  std::vector<std::string> candidates;
  if (llvm::Optional<std::string> home = env("CUDA_HOME"))
    candidates.push_back(join(*home, "bin", "nvcc"));
  candidates.push_back("nvcc");
  candidates.push_back("/usr/local/cuda/bin/nvcc");
  for (const std::string &candidate : candidates) {
    std::string program = findProgram(candidate);
    if (!program.empty()) {
      command.push_back(program);
      return true;
    }
  }
  error() << "cannot find nvcc: set $NVCC or $CUDA_HOME, or put nvcc on PATH\n";
  return false;
}

bool requireFiles(const std::vector<std::string> &paths, const char *origin) {
  bool ok = true;
  for (const std::string &path : paths) {
    if (llvm::sys::fs::exists(path))
      continue;
    error() << "the runtime file '" << path << "' (from " << origin << ") does not exist\n";
    ok = false;
  }
  return ok;
}

// The runtime's include directory and static libraries (pipert, then pipert_cuda).
bool findRuntime(bool cuda, std::string &include, std::vector<std::string> &libraries) {
  llvm::Optional<std::string> root = env("PIPEC_RUNTIME_DIR");
  const char *origin = root ? "$PIPEC_RUNTIME_DIR" : "the build tree pipec was configured in";
  std::string core, gpu;
  if (root) {
    include = join(*root, "include");
    core = join(*root, "lib", "libpipert.a");
    gpu = join(*root, "lib", "libpipert_cuda.a");
  } else {
    include = PIPEC_RUNTIME_INCLUDE_DIR;
    core = PIPEC_RUNTIME_LIBRARY;
    gpu = PIPEC_RUNTIME_CUDA_LIBRARY;
    if (cuda && gpu.empty()) {
      error() << "this pipec was built without the CUDA runtime (no CUDA toolkit when it was "
                 "configured); set $PIPEC_RUNTIME_DIR to a runtime built with CUDA\n";
      return false;
    }
  }
  std::vector<std::string> required = {join(include, "pipert", "Program.h"), core};
  if (cuda)
    required.insert(required.begin() + 1, gpu);
  if (!requireFiles(required, origin)) {
    llvm::errs() << "pipec: note: build the runtime (ninja pipert" << (cuda ? " pipert_cuda" : "")
                 << "), or set $PIPEC_RUNTIME_DIR to a directory holding include/pipert/Program.h"
                 << (cuda ? ", lib/libpipert_cuda.a" : "") << " and lib/libpipert.a\n";
    return false;
  }
  if (cuda)
    libraries.push_back(gpu); // before pipert: it uses pipert's reference and data
  libraries.push_back(core);
  return true;
}

// NCCL by full path (a Python wheel has libnccl.so.2 but no libnccl.so), with
// an rpath to its directory: it may live outside the CUDA toolkit.
bool addNccl(std::vector<std::string> &libraries) {
  std::string library;
  if (llvm::Optional<std::string> home = env("NCCL_HOME")) {
    for (const char *name : {"libnccl.so", "libnccl.so.2"})
      if (library.empty() && llvm::sys::fs::exists(join(*home, "lib", name)))
        library = join(*home, "lib", name);
    if (library.empty()) {
      error() << "no lib/libnccl.so or lib/libnccl.so.2 in $NCCL_HOME '" << *home << "'\n";
      return false;
    }
  } else {
    library = PIPEC_NCCL_LIBRARY;
  }
  if (library.empty()) {
    libraries.push_back("-lnccl");
    return true;
  }
  libraries.push_back(library);
  libraries.push_back("-Xlinker");
  libraries.push_back("-rpath=" + std::string(llvm::sys::path::parent_path(library)));
  return true;
}

} // namespace

bool findToolchain(BuildTarget target, Toolchain &toolchain) {
  bool cuda = target == BuildTarget::Cuda;
  bool haveCompiler = cuda ? findNvcc(toolchain.compiler) : findCxx(toolchain.compiler);
  std::string include;
  if (!findRuntime(cuda, include, toolchain.libraries) || !haveCompiler)
    return false;
  toolchain.flags = {"-std=c++17", "-O2", "-I" + include};
  if (cuda) {
    // The program is host C++ (encoded tables and a main()): as a .cpp file
    // nvcc hands it straight to the host compiler, without a device pass.
    toolchain.sourceExtension = ".cpp";
    toolchain.flags.push_back("-arch=sm_90");
    for (const char *library : {"-lcublas", "-lcudart"})
      toolchain.libraries.push_back(library);
    if (!addNccl(toolchain.libraries))
      return false;
    toolchain.libraries.push_back("-Xcompiler");
    toolchain.libraries.push_back("-pthread");
  } else {
    toolchain.libraries.push_back("-pthread");
  }
  return true;
}

bool addTorchStages(Toolchain &toolchain) {
  std::string adapter = PIPEC_RUNTIME_TORCH_LIBRARY;
  if (adapter.empty()) {
    error() << "--stages torchscript: this pipec was built without LibTorch; run ./setup.sh --torch "
               "and rebuild\n";
    return false;
  }
  llvm::SmallVector<llvm::StringRef, 2> torchLibraries;
  llvm::StringRef(PIPEC_TORCH_LIBRARIES).split(torchLibraries, ':', -1, /*KeepEmpty=*/false);
  std::vector<std::string> required = {adapter};
  required.insert(required.end(), torchLibraries.begin(), torchLibraries.end());
  if (!requireFiles(required, "the build tree pipec was configured in")) {
    llvm::errs() << "pipec: note: build the adapter (ninja pipert_torch), or run ./setup.sh --torch "
                    "and rebuild\n";
    return false;
  }
  std::vector<std::string> &libs = toolchain.libraries;
  libs.insert(libs.begin(), {"-Wl,--whole-archive", adapter, "-Wl,--no-whole-archive"});
  libs.insert(libs.end(), torchLibraries.begin(), torchLibraries.end());
  libs.push_back("-Wl,-rpath," + std::string(PIPEC_TORCH_LIBRARY_DIR));
  return true;
}

CommandRun runCompilerCommand(const std::vector<std::string> &command, const std::string &log) {
  std::vector<llvm::StringRef> argv(command.begin(), command.end());
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(log), llvm::StringRef(log)};
  CommandRun run;
  run.status = llvm::sys::ExecuteAndWait(command[0], argv, llvm::None, redirects, 0, 0, &run.message,
                                         &run.failedToStart);
  auto output = llvm::MemoryBuffer::getFile(log, /*IsText=*/true);
  if (output && !(*output)->getBuffer().empty())
    llvm::errs() << (*output)->getBuffer();
  return run;
}

} // namespace pipec
