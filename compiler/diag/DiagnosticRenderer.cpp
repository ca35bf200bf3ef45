// Text rendering on top of llvm::SourceMgr, which draws the caret, ranges and fix-its.
#include "diag/DiagnosticRenderer.h"

namespace pipec {

static llvm::SourceMgr::DiagKind toLLVM(Severity severity) {
  switch (severity) {
  case Severity::Error: return llvm::SourceMgr::DK_Error;
  case Severity::Warning: return llvm::SourceMgr::DK_Warning;
  case Severity::Note: return llvm::SourceMgr::DK_Note;
  }
  return llvm::SourceMgr::DK_Error;
}

static void printOne(llvm::SourceMgr &sm, llvm::raw_ostream &out, bool color, llvm::SMRange at,
                     Severity severity, const std::string &message,
                     llvm::ArrayRef<llvm::SMFixIt> fixits) {
  if (!at.Start.isValid()) {
    // No location (command-line problems): "pipec: error: ..." like a driver.
    llvm::SMDiagnostic diag(sm, llvm::SMLoc(), "", -1, -1, toLLVM(severity), message, "", {},
                            {});
    // Errors without a place read as the driver's ("pipec: error: ..."); notes as "note: ...".
    diag.print(severity == Severity::Note ? "" : "pipec", out, color, /*ShowKindLabel=*/true);
    return;
  }
  llvm::SmallVector<llvm::SMRange, 1> ranges;
  if (at.End.isValid() && at.End.getPointer() > at.Start.getPointer())
    ranges.push_back(at);
  sm.PrintMessage(out, at.Start, toLLVM(severity), message, ranges, fixits, color);
}

void renderText(const DiagnosticEngine &engine, llvm::raw_ostream &out, bool color) {
  llvm::SourceMgr &sm = engine.sources();
  for (const Diagnostic &d : engine.diagnostics()) {
    std::string text = d.message + " [" + diagInfo(d.kind).name + "]";
    printOne(sm, out, color, d.range, d.severity, text, d.fixits);
    for (const DiagNote &n : d.notes)
      printOne(sm, out, color, n.range, Severity::Note, n.message, {});
    if (d.repeats > 0)
      printOne(sm, out, color, {}, Severity::Note,
               "the same problem occurs " + std::to_string(d.repeats) +
                   " more time(s) at this location",
               {});
  }
}

} // namespace pipec
