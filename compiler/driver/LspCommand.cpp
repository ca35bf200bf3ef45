// `pipec lsp`: a Language Server (LSP 3.17) on standard input and output, for
// editors: diagnostics as `pipec check` reports them, hover, go to definition,
// formatting as `pipec fmt` does it (compiler/lsp/).
#include "driver/Commands.h"

#include "lsp/Server.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec {

int runLsp() {
  lsp::Transport transport(stdin, llvm::outs());
  return lsp::Server(transport).run();
}

} // namespace pipec
