#include "driver/TorchCsvInput.h"

#include "frontend/InputTranslator.h"
#include "interop/PipeWriter.h"
#include "interop/TorchCsvReader.h"
#include "interop/TorchImport.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace pipec {

namespace {

unsigned translateTorchCsv(llvm::SourceMgr &sources, DiagnosticEngine &diags,
                           const std::string &path, unsigned input) {
  std::optional<TorchCsv> csv = readTorchCsv(input, diags, ElabLimits().maxOps);
  std::optional<ImportedSchedule> schedule;
  if (csv)
    schedule = inferSchedule(*csv, ElabLimits(), diags);
  std::string text;
  llvm::raw_string_ostream out(text);
  if (!schedule ||
      !writePipe(*schedule, scheduleNameFor(path), llvm::sys::path::filename(path), diags, out,
                /*compact=*/false))
    return 0;
  out.flush();
  return sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, path + " (as imported)"), llvm::SMLoc());
}

} // namespace

void registerTorchCsvInput() { registerInputTranslator(".csv", translateTorchCsv); }

} // namespace pipec
