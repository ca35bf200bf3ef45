// `def` definitions and their expansion (internal to syntax/).
//
// A definition is a macro over the AST: `def f(a, b) = E;` for an expression,
// `def g(n) { stmts }` for a sequence of ops. A call is replaced, while the file is
// built, by a copy of the body in which each parameter is a copy of its argument.
// Expansion is hygienic: the body may read only its parameters and its own lets
// and loop variables, which are renamed `g.name` in the copy, so nothing the
// caller declares can be captured and nothing the body declares leaks. Later
// phases (names, elaboration, checks, fmt's op comparison) see only ordinary AST.
//
// Because a definition can call only definitions declared before it, there is
// no recursion; expansion is still bounded in size and depth, since each level
// can multiply the one below.
#pragma once

#include "diag/Diagnostics.h"
#include "syntax/AST.h"

#include "llvm/ADT/StringMap.h"

#include <memory>
#include <string>
#include <vector>

namespace pipec {

struct Definition {
  std::string name;
  ast::SMRange nameRange;
  std::vector<std::string> params;
  ast::ExprPtr expr; // `def f(...) = E;`
  ast::Block ops;    // `def g(...) { ... }` when expr is null
  bool broken = false; // its body was refused: calls expand to nothing, silently
  bool isExpr() const { return expr != nullptr; }
};

// Every definition visible to a file: its own and its imports', in one namespace.
class DefinitionTable {
public:
  static constexpr uint64_t kMaxExpandedNodes = 1000000; // ~70 MB of AST; 4M exhausted 2 GB under ASan (fuzz-smoke)
  static constexpr int kMaxExpandedDepth = 1024;

  const Definition *find(llvm::StringRef name) const {
    auto it = byName_.find(name);
    return it == byName_.end() ? nullptr : defs_[it->second].get();
  }
  // Checks the body's names (reporting a name it may not read) and adds it.
  // Returns false, after reporting, when the name is taken.
  bool add(std::unique_ptr<Definition> def, DiagnosticEngine &diags);

  // Where a parse stands, to forget what it added if it starts again.
  struct Mark {
    size_t defs;
    uint64_t nodes;
    bool overflowReported;
  };
  Mark mark() const { return {defs_.size(), expandedNodes_, overflowReported_}; }
  void rollback(Mark mark) {
    expandedNodes_ = mark.nodes;
    overflowReported_ = mark.overflowReported;
    while (defs_.size() > mark.defs) {
      byName_.erase(defs_.back()->name);
      defs_.pop_back();
    }
  }

  // The expansion of a call; null after an error (reported at `call`).
  ast::ExprPtr expandExpr(const Definition &def, std::vector<ast::ExprPtr> args,
                          ast::SMRange call, DiagnosticEngine &diags);
  ast::StmtPtr expandOps(const Definition &def, std::vector<ast::ExprPtr> args,
                         ast::SMRange call, DiagnosticEngine &diags);

private:
  bool checkArity(const Definition &def, size_t given, ast::SMRange call,
                  DiagnosticEngine &diags) const;

  void reportOverflow(const Definition &def, ast::SMRange call, DiagnosticEngine &diags);

  std::vector<std::unique_ptr<Definition>> defs_;
  llvm::StringMap<size_t> byName_;
  uint64_t expandedNodes_ = 0; // across the file and its imports
  bool overflowReported_ = false;
};

} // namespace pipec
