// What `pipec build` runs: the compiler command and the runtime files for a
// backend, found the same way for every target so a build tree, an install and
// CI all work. Each lookup prints its own error and returns false.
//   cpu : $CXX (a name or a path, optionally with arguments, as in "ccache
//         g++"), else c++, g++ or clang++ on PATH; the runtime from
//         $PIPEC_RUNTIME_DIR (include/, lib/libpipert.a), else this build tree.
//   cuda: nvcc from $NVCC, else $CUDA_HOME/bin, else PATH, else
//         /usr/local/cuda/bin; the runtime as for cpu plus lib/libpipert_cuda.a;
//         NCCL from $NCCL_HOME/lib, else where this build found it.
#pragma once

#include "driver/Commands.h"

#include <string>
#include <vector>

namespace pipec {

struct Toolchain {
  std::vector<std::string> compiler; // program and its leading arguments
  std::vector<std::string> flags;    // before the source
  std::vector<std::string> libraries; // after the source, in link order
  const char *sourceExtension = ".cpp";
};

bool findToolchain(BuildTarget target, Toolchain &toolchain);

// --stages torchscript: links the LibTorch stage adapter whole (its provider
// registers itself at start-up) before the runtime, then LibTorch, with an
// rpath to LibTorch's directory so the program runs without LD_LIBRARY_PATH.
// Both as this build found them; without LibTorch in this build, an error
// (run ./setup.sh --torch and rebuild).
bool addTorchStages(Toolchain &toolchain);

// One run of a compiler command: its output (both streams, through the file
// `log`) is echoed to stderr; `failedToStart` with `message` when it could not
// be started, else `status` is its exit status (negative: killed, see message).
struct CommandRun {
  int status = 0;
  bool failedToStart = false;
  std::string message;
};
CommandRun runCompilerCommand(const std::vector<std::string> &command, const std::string &log);

} // namespace pipec
