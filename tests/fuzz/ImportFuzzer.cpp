// libFuzzer target: any bytes as a PyTorch CSV through `pipec import` (the
// reader, the inference of topology and placement, the writer), and then the
// written .pipe file through the front end. Import may refuse; what it writes
// must elaborate without an error, or the target aborts: the fuzzer hunts for
// files that import writes and pipec rejects.
#include "elab/Elaborator.h"
#include "interop/PipeWriter.h"
#include "interop/TorchCsvReader.h"
#include "interop/TorchImport.h"
#include "sema/NameResolver.h"
#include "syntax/Parser.h"

#include "diag/DiagnosticRenderer.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace pipec;
  ElabLimits limits;
  limits.maxOps = 20000;
  limits.maxIterations = 200000;

  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  llvm::StringRef csv(reinterpret_cast<const char *>(data), size);
  unsigned buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(csv, "fuzz\n.csv"), llvm::SMLoc());
  std::optional<ImportedSchedule> schedule;
  if (std::optional<TorchCsv> read = readTorchCsv(buffer, diags, limits.maxOps))
    schedule = inferSchedule(*read, limits, diags);
  renderText(diags, llvm::nulls(), false);
  std::string text;
  llvm::raw_string_ostream out(text);
  if (!schedule || !writePipe(*schedule, "fuzz", "fuzz\n\xff.csv", diags, out,
                                      /*compact=*/true))
    return 0;
  out.flush();

  llvm::SourceMgr pipeSources;
  DiagnosticEngine pipeDiags(pipeSources);
  unsigned pipe = pipeSources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "imported.pipe"), llvm::SMLoc());
  std::unique_ptr<ast::Schedule> ast = parseSchedule(pipe, pipeDiags);
  ElabOptions options;
  options.limits = limits;
  if (!ast || !resolveNames(*ast, pipeDiags) || !elaborate(*ast, options, pipeDiags) ||
      pipeDiags.hasErrors()) {
    renderText(pipeDiags, llvm::errs(), false);
    llvm::errs() << "import wrote a schedule pipec rejects:\n" << text;
    std::abort();
  }
  return 0;
}
