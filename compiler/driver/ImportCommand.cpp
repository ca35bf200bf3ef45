// `pipec import --from torch-csv FILE.csv [-o OUT.pipe]`: reads PyTorch's
// compute-only schedule CSV strictly and writes it as an explicit .pipe file.
// Nothing is written when the CSV has errors.
#include "driver/Commands.h"
#include "driver/InputFile.h"
#include "driver/Reporting.h"

#include "diag/DiagnosticRenderer.h"
#include "interop/PipeWriter.h"
#include "interop/TorchCsvReader.h"
#include "interop/TorchImport.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace pipec {

namespace {

// Prints the diagnostics in the requested format; returns the exit status.
int report(const std::string &file, const DiagnosticEngine &diags, const CommonArgs &args) {
  if (args.format == DiagFormat::Text) {
    renderText(diags, llvm::errs(), args.color);
  } else {
    FileDiagnostics all[] = {{file, &diags}};
    renderLint(all, args);
  }
  return exitStatus(diags, args);
}

} // namespace

int runImport(const std::string &file, const std::string &output, const CommonArgs &args) {
  if (args.format != DiagFormat::Text && output == "-") {
    llvm::errs() << "pipec: error: --format other than text prints diagnostics on standard "
                    "output; write the schedule elsewhere with -o FILE.pipe\n";
    return kExitUsage;
  }
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  std::optional<ImportedSchedule> schedule;
  std::string error;
  if (std::unique_ptr<llvm::MemoryBuffer> buffer = readInputFile(file, error)) {
    unsigned id = sources.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    if (std::optional<TorchCsv> csv = readTorchCsv(id, diags))
      schedule = inferSchedule(*csv, diags);
  } else {
    diags.report(DiagKind::FileNotReadable, "cannot read '" + file + "': " + error);
  }
  int status = report(file, diags, args);
  if (!schedule || status != kExitClean)
    return status;

  bool written = writeOutputFile(output, [&](llvm::raw_ostream &out) {
    writePipe(*schedule, scheduleNameFor(file == "-" ? "stdin" : file),
              file == "-" ? "<stdin>" : llvm::sys::path::filename(file), out);
  });
  if (!written)
    return kExitUsage;
  return kExitClean;
}

} // namespace pipec
