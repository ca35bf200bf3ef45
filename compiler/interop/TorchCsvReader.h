// A strict reader for PyTorch's compute-only schedule CSV
// (torch.distributed.pipelining: one row per rank, one action per cell).
//
// Accepted cells: <stage><F|B|I|W><micro-batch> with decimal ids (0F0, 3I1),
// an overlap pair (<action>;<action>)OVERLAP_F_B joining one forward and one
// backward (B or I), and empty cells, which are PyTorch's idle slots and are
// skipped. Spaces around a cell or an action are ignored, as PyTorch strips
// them; rows may end in "\r\n" (what Python's csv module writes).
//
// Everything else is reported as a MalformedCsvCell diagnostic located at the
// offending character (line = rank + 1, column = byte in the line), unlike
// PyTorch, which ignores trailing junk such as "0F0x" and rejects
// communication actions only at run time. A blank line at the end of the file
// is refused too (CsvTrailingBlankLine): Python's csv module reads it as an empty
// row, PyTorch's loader as one more rank, and the file then fails to load on
// the ranks that have actions. An idle last rank is written as a row of empty
// cells (","), which both readers take as a rank with no actions.
#pragma once

#include "diag/Diagnostics.h"
#include "syntax/AST.h"

#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipec {

struct TorchAction {
  ast::OpKind kind;
  int64_t stage;       // global stage id
  int64_t microbatch;  // global micro-batch id
  llvm::SMRange range; // the action's text
};

// One non-empty cell: an action, or an overlap pair (forward first).
struct TorchCell {
  TorchAction first;
  std::optional<TorchAction> second;
  llvm::SMRange range;
  bool backwardWrittenFirst = false; // a pair written (B;F): kept so writers can repeat it
};

struct TorchCsv {
  std::vector<std::vector<TorchCell>> rows; // row r: rank r's cells in order
  std::string path;                         // the file it came from
};

// Reads buffer `buffer` of the engine's SourceMgr. Reports every malformed
// cell (up to kMaxReportedCells, then stops reading); returns nullopt if there
// was any. Stops with TopologyOutOfRange at a row beyond pipec's rank limit
// and with OpLimitExceeded at the action beyond `maxActions`, before holding
// a file of any size in memory.
std::optional<TorchCsv> readTorchCsv(unsigned buffer, DiagnosticEngine &diags,
                                     uint64_t maxActions = UINT64_MAX);

constexpr unsigned kMaxReportedCells = 100;

} // namespace pipec
