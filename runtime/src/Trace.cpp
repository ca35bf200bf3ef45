// writeTrace (see pipert/Trace.h).
#include "pipert/Trace.h"

#include <cstdio>

namespace pipert {

bool writeTrace(const std::string &path, const Program &program, const std::vector<OpTiming> &timings) {
  std::FILE *out = std::fopen(path.c_str(), "w");
  if (!out) {
    std::fprintf(stderr, "pipert: error: cannot write trace '%s'\n", path.c_str());
    return false;
  }
  static const char *kNames[] = {"F", "B", "I", "W"};
  std::fprintf(out, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  for (int r = 0; r < program.numRanks; ++r)
    std::fprintf(out, "{\"ph\": \"M\", \"pid\": %d, \"name\": \"process_name\", \"args\": {\"name\": \"rank %d\"}},\n", r, r);
  for (size_t k = 0; k < timings.size(); ++k) {
    const OpTiming &t = timings[k];
    const ProgramOp *ops = program.ranks[t.rank].ops;
    const ProgramOp &op = ops[t.op];
    char name[96];
    std::snprintf(name, sizeof name, "%s%d.s%d.mb%d%s", kNames[int(op.kind)], op.chunk, op.stage,
                  op.microbatch, op.pairedWithNext ? " (pair)" : "");
    std::fprintf(out, "{\"ph\": \"X\", \"pid\": %d, \"tid\": 0, \"name\": \"%s\", \"ts\": %.3f, \"dur\": %.3f}%s\n",
                 t.rank, name, t.startMicros, t.endMicros - t.startMicros,
                 k + 1 < timings.size() ? "," : "");
  }
  std::fprintf(out, "]}\n");
  return std::fclose(out) == 0;
}

} // namespace pipert
