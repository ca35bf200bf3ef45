// `pipec emit --target ast`: the AST as an indented tree, each node with its
// line:col, so golden tests can pin both structure and source locations.
#pragma once

#include "syntax/AST.h"

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace pipec {

void dumpAST(const ast::Schedule &schedule, const llvm::SourceMgr &sources, llvm::raw_ostream &out);

} // namespace pipec
