// The canonical layout of a token stream (FmtTokens.h): the rules of `pipec fmt`.
//
//   - one statement per line, indented two spaces per open block;
//   - a block stays on one line (`for i in 0..n { F; B; }`) when it was written
//     on one line, holds no line comment and fits in kMaxColumns; else it is
//     expanded, `{` ending its line and `}` on a line of its own; `} else {`;
//   - a line break the author put inside a statement is kept, and the next line
//     indented four more spaces; blank lines shrink to one, none after `{` or
//     before `}`;
//   - one space around binary operators, `=`, `->`, `&`, `?`/`:` and after `,`;
//     none around `..`, inside brackets, after a unary `-`/`!`, between a name
//     and its `(`, before `:` of a flow;
//   - comments stay where they are: a line comment ending a line keeps its gap
//     (so hand-aligned comments stay aligned), others start their own line.
// The rules look only at tokens, so a new declaration needs no new rule.
#pragma once

#include "formatter/FmtTokens.h"

#include <string>
#include <vector>

namespace pipec::formatter {

constexpr unsigned kMaxColumns = 100;

// The formatted text, ending in one newline ("" for no tokens).
std::string layoutTokens(const std::vector<Token> &tokens);

} // namespace pipec::formatter
