// The step time the schedule would have if every op took exactly the time it
// was measured to take and nothing else cost anything: each rank runs its steps
// in order, a step starts when the rank is free and the messages it needs were
// produced (the compiler's simulator, with measured costs and free transport).
// Measured over replayed step time shows what the runtime itself adds.
#pragma once

#include "exec/PipelineRun.h"

#include <algorithm>
#include <vector>

namespace pipert {

inline double replayedMillis(const Program &program, const std::vector<OpTiming> &timings) {
  // Each timed step's duration, by (rank, first op).
  std::vector<std::vector<double>> duration(program.numRanks);
  for (int r = 0; r < program.numRanks; ++r)
    duration[r].assign(program.ranks[r].numOps, 0.0);
  for (const OpTiming &t : timings)
    duration[t.rank][t.op] = (t.endMicros - t.startMicros) / 1000.0;

  // Steps in dependency order: repeat passes until every rank is done (each pass
  // advances at least one step of a schedule the compiler proved deadlock-free).
  std::vector<uint32_t> next(program.numRanks, 0);
  std::vector<std::vector<double>> end(program.numRanks);
  for (int r = 0; r < program.numRanks; ++r)
    end[r].assign(program.ranks[r].numOps, -1.0);
  std::vector<std::vector<int64_t>> incoming(program.numRanks);
  for (int r = 0; r < program.numRanks; ++r)
    incoming[r].assign(program.ranks[r].numOps, -1);
  for (uint32_t id = 0; id < program.numMessages; ++id)
    incoming[program.messages[id].to][program.messages[id].consumerOp] = id;
  double makespan = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < program.numRanks; ++r) {
      const RankTable &table = program.ranks[r];
      while (next[r] < table.numOps) {
        uint32_t i = next[r];
        uint32_t count = table.ops[i].pairedWithNext && i + 1 < table.numOps ? 2 : 1;
        double start = i > 0 ? end[r][i - 1] : 0.0;
        bool ready = true;
        for (uint32_t k = i; k < i + count; ++k) {
          if (incoming[r][k] < 0)
            continue;
          const ProgramMessage &m = program.messages[incoming[r][k]];
          double produced = end[m.from][m.producerOp];
          if (produced < 0)
            ready = false;
          start = std::max(start, produced);
        }
        if (!ready)
          break;
        for (uint32_t k = i; k < i + count; ++k)
          end[r][k] = start + duration[r][i];
        makespan = std::max(makespan, end[r][i]);
        next[r] += count;
        progress = true;
      }
    }
  }
  return makespan;
}

} // namespace pipert
