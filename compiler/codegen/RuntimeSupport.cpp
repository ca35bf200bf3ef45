#include "codegen/RuntimeSupport.h"

namespace pipec {

bool checkRuntimeSupport(const ScheduleIR &ir, const char *what, DiagnosticEngine &diags) {
  if (ir.microbatchSizes.empty() || !ir.source || !ir.source->sizes)
    return true;
  diags.report(DiagKind::RuntimeUnsupported, ir.source->sizes->range,
               std::string("schedule '") + ir.name + "' declares micro-batch sizes, which " +
                   what + " cannot express: every micro-batch there has the same size")
      .note("'pipec check' and 'pipec sim' take the sizes into account; remove 'sizes' to "
            "build a program of equal micro-batches");
  return false;
}

} // namespace pipec
