// libFuzzer target: any bytes through the torch-csv reader alone, with the op
// limit `pipec import` uses by default. The import target spends most of its time
// inferring and writing schedules; this one spends it all on the reader, where
// untrusted bytes first arrive: cells, quoting, line ends, huge numbers.
#include "interop/TorchCsvReader.h"

#include "diag/DiagnosticRenderer.h"
#include "elab/Elaborator.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace pipec;
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  llvm::StringRef csv(reinterpret_cast<const char *>(data), size);
  unsigned buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(csv, "fuzz.csv"), llvm::SMLoc());
  readTorchCsv(buffer, diags, ElabLimits().maxOps);
  renderText(diags, llvm::nulls(), false); // every location must render
  return 0;
}
