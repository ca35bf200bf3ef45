// `pipec import --from torch-csv FILE.csv [-o OUT.pipe]`: reads PyTorch's
// compute-only schedule CSV strictly and writes it as an explicit .pipe file.
// Nothing is written when the CSV has errors, nor when the written schedule
// would not pass pipec's own front end (`check` reads what import writes).
#include "driver/Commands.h"
#include "support/InputFile.h"
#include "driver/Reporting.h"

#include "diag/DiagnosticRenderer.h"
#include "interop/PipeWriter.h"
#include "interop/TorchCsvReader.h"
#include "interop/TorchImport.h"
#include "interop/TorchLossOrder.h"
#include "sema/NameResolver.h"
#include "syntax/Parser.h"

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

// Runs the written schedule through the front end, as `check` would. The
// import's own checks make this pass; should one be missing, the user sees the
// front end's errors on the text it was about to write instead of a file that
// pipec rejects.
bool elaboratesCleanly(const std::string &text, const CommonArgs &args) {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  unsigned id = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(text, "<imported schedule>"), llvm::SMLoc());
  std::unique_ptr<ast::Schedule> ast = parseSchedule(id, diags);
  bool ok = ast && resolveNames(*ast, diags) && elaborate(*ast, args.elab, diags) &&
            !diags.hasErrors();
  if (!ok) {
    renderText(diags, llvm::errs(), args.color);
    llvm::errs() << "pipec: error: the imported schedule does not pass pipec's front end; "
                    "nothing is written\n";
  }
  return ok;
}

} // namespace

int runImport(const std::string &file, const std::string &output, int64_t microbatches,
              const CommonArgs &args) {
  if (args.format != DiagFormat::Text && output == "-") {
    llvm::errs() << "pipec: error: --format other than text prints diagnostics on standard "
                    "output; write the schedule elsewhere with -o FILE.pipe\n";
    return kExitUsage;
  }
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  diags.setErrorLimit(args.errorLimit);
  diags.setWarningPolicy(args.warnings);
  std::string text, error;
  if (std::unique_ptr<llvm::MemoryBuffer> buffer = readInputFile(file, error)) {
    unsigned id = sources.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    std::optional<ImportedSchedule> schedule;
    if (std::optional<TorchCsv> csv = readTorchCsv(id, diags, args.elab.limits.maxOps)) {
      schedule = inferSchedule(*csv, args.elab.limits, diags);
      if (schedule) // the order came from PyTorch, or is going there
        checkTorchLossOrder(*csv, diags);
    }
    // --microbatches N: the schedule's M as the user states it; the CSV's own
    // micro-batches must fit, and those it leaves out are check's to report.
    if (schedule && microbatches > 0) {
      if (microbatches < schedule->numMicrobatches) {
        llvm::errs() << "pipec: error: --microbatches " << microbatches << ": the CSV runs micro-batch "
                     << schedule->numMicrobatches - 1 << "\n";
        return kExitUsage;
      }
      schedule->numMicrobatches = microbatches;
      schedule->flows.back().end = microbatches;
    }
    llvm::raw_string_ostream out(text);
    if (schedule &&
        !writePipe(*schedule, scheduleNameFor(file == "-" ? "stdin" : file),
                   file == "-" ? "<stdin>" : llvm::sys::path::filename(file), diags, out,
                   /*compact=*/true))
      text.clear();
    out.flush();
    // Import writes only what check reads: its own input cap included.
    if (text.size() > kMaxInputBytes) {
      diags.report(DiagKind::ImportTooLarge,
                   "the imported schedule would be " + std::to_string(text.size() >> 20) +
                       " MiB, larger than the " + std::to_string(kMaxInputBytes >> 20) +
                       " MiB pipec reads as an input file")
          .note("split the pipeline, or import it in parts with fewer ranks");
      text.clear();
    }
  } else {
    diags.report(DiagKind::FileNotReadable, "cannot read '" + file + "': " + error);
  }
  int status = report(file, diags, args);
  if (text.empty() || status != kExitClean)
    return status;
  if (!elaboratesCleanly(text, args))
    return kExitErrors;

  if (!writeOutputFile(output, [&](llvm::raw_ostream &out) { out << text; }))
    return kExitUsage;
  return kExitClean;
}

} // namespace pipec
