#include "frontend/FlagNames.h"

#include "syntax/CostNames.h"

#include "llvm/ADT/STLExtras.h"

namespace pipec {

int stripKindPrefix(llvm::StringRef &text) {
  if (text.consume_front("param:"))
    return 1;
  if (text.consume_front("cost:"))
    return 2;
  return 0;
}

bool checkFlagNames(const ast::Schedule &schedule, llvm::ArrayRef<FlagName> names,
                    DiagnosticEngine &diags) {
  bool ok = true;
  for (const FlagName &use : names) {
    if (use.explicitKind || !llvm::is_contained(costNames(), use.name))
      continue;
    const ast::Param *param = nullptr;
    for (const ast::Param &p : schedule.params)
      if (p.var.name == use.name)
        param = &p;
    if (!param)
      continue;
    ok = false;
    diags.report(DiagKind::AmbiguousName,
                 use.flag + ": '" + use.name + "' names both parameter '" + use.name +
                     "' of schedule '" + schedule.name + "' and the cost '" + use.name +
                     "'; this flag would set the " + (use.asCost ? "cost" : "parameter"))
        .note(param->var.range, "the parameter is declared here")
        .note("write 'param:" + use.name + "' for the parameter or 'cost:" + use.name +
              "' for the cost (in -D, --cost and --sweep alike), or rename the parameter");
  }
  return ok;
}

} // namespace pipec
