// `pipec import --from torch-csv`: turns the actions read from a PyTorch CSV
// into an explicit schedule: topology, a placement derived from where each
// stage's ops run, and one op list per rank.
//
// Placement. Every (stage, micro-batch) must run all its ops on one rank.
// When every stage lives on exactly one rank there is one placement. When a
// stage lives on several ranks (bidirectional schedules such as DualPipe or
// Chimera, one copy per direction), micro-batches are grouped into flows:
// maximal runs of consecutive micro-batches that place every stage on the
// same ranks. A rank's chunks are numbered by the first flow that uses them,
// then in stage order (chunk 0 holds the rank's lowest stage), so the shipped
// schedules import with the chunk numbers they were written with, and a row that
// runs a later stage first does not renumber its chunks. PyTorch's notation names
// stages, not chunks: a rank that held one stage in two chunks (two copies on
// one rank) imports with one chunk for it.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/Elaborator.h"
#include "elab/ScheduleIR.h"
#include "interop/TorchCsvReader.h"

#include <optional>
#include <string>
#include <vector>

namespace pipec {

struct ImportedOp {
  ast::OpKind kind;
  PairRole pair;
  int32_t chunk;
  int64_t microbatch; // global id
  bool backwardWrittenFirst = false; // on a pair's First (forward): written (B;F)
};

struct ImportedFlow {
  int64_t begin, end;           // micro-batches [begin, end)
  std::vector<Slot> stageSlots; // stage -> slot
  llvm::SMRange lastStageAction; // an action of its last stage, to locate errors at
};

struct ImportedSchedule {
  int64_t numRanks = 0, numStages = 0, numMicrobatches = 0, copies = 1;
  std::vector<ImportedFlow> flows;
  std::vector<std::vector<ImportedOp>> ranks;
};

// Reports CsvPlacementConflict, EmptyCsvSchedule or OpLimitExceeded (the
// schedule's minimum size against `limits`) and returns nullopt when the CSV
// has no schedule pipec can express.
std::optional<ImportedSchedule> inferSchedule(const TorchCsv &csv, const ElabLimits &limits,
                                              DiagnosticEngine &diags);

} // namespace pipec
