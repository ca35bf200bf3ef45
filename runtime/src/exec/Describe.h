// How the CPU executor names an op and a message in its errors and in the
// watchdog's report ("F of stage 1, micro-batch 0 (op 2)").
#pragma once

#include "pipert/Program.h"

#include <string>

namespace pipert {

inline std::string describeOp(const Program &program, int rank, uint32_t i) {
  const ProgramOp &op = program.ranks[rank].ops[i];
  return std::string(opCodeName(op.kind)) + " of stage " + std::to_string(op.stage) +
         ", micro-batch " + std::to_string(op.microbatch) + " (op " + std::to_string(i) + ")";
}

inline std::string describeMessage(const Program &program, uint32_t id) {
  const ProgramMessage &m = program.messages[id];
  return std::string(messageKindName(m.gradient)) + " of stage " +
         std::to_string(m.stage) + ", micro-batch " + std::to_string(m.microbatch) + " from rank " +
         std::to_string(m.from);
}

} // namespace pipert
