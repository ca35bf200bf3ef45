// `pipec lsp`: a Language Server (LSP 3.17) on standard input and output, for
// editors: diagnostics as `pipec check` reports them, hover, go to definition,
// formatting as `pipec fmt` does it (compiler/lsp/).
#include "driver/Commands.h"

#include "lsp/Server.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

namespace pipec {

int runLsp(uint64_t memoryBudget) {
  lsp::Transport transport(stdin, llvm::outs());
  int status = lsp::Server(transport, memoryBudget).run();
  // The reader thread may be blocked on standard input and the analysis thread
  // in the middle of an elaboration; neither can be interrupted and neither has
  // anything to save, so the process ends here rather than waiting for them.
  llvm::outs().flush();
  std::fflush(stderr);
  std::_Exit(status);
}

} // namespace pipec
