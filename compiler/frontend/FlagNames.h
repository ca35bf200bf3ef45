// Command-line names that could mean a schedule parameter or a cost.
//
// `-D`, `--cost` and `--sweep` take NAME=VALUE. A schedule may call a parameter
// what the cost model calls a cost (`W`, `F`, `p2p`...): then `--sweep W=1,2`
// would silently sweep the weight-gradient cost and leave the parameter alone.
// Such a name is refused, naming both meanings; `param:W` or `cost:W` says which.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/Elaborator.h"
#include "syntax/AST.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace pipec {

// Strips a leading `param:` or `cost:` from a flag's text. Returns the kind it
// named (0 none, 1 param, 2 cost) and leaves the rest in `text`.
int stripKindPrefix(llvm::StringRef &text);

// Reports [AmbiguousName] for each name that is both a cost and a parameter of
// `schedule` and was not written with a prefix. False if it reported.
bool checkFlagNames(const ast::Schedule &schedule, llvm::ArrayRef<FlagName> names,
                    DiagnosticEngine &diags);

} // namespace pipec
