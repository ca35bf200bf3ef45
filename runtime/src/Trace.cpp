// traceJson and writeTrace (see pipert/Trace.h).
#include "pipert/Trace.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <utility>

namespace pipert {

namespace {

// Each micro-batch's index within its flow. The tables hold global ids and no
// flows; a flow is a range of ids with one placement, so consecutive ids whose
// forwards run on the same (rank, chunk) slots are taken as one flow.
std::vector<int32_t> flowIndices(const Program &program) {
  using Slots = std::vector<std::pair<int32_t, int32_t>>;
  std::vector<Slots> placement(std::max(program.numMicrobatches, 0),
                               Slots(std::max(program.numStages, 0), {-1, -1}));
  for (int r = 0; r < program.numRanks; ++r)
    for (uint32_t i = 0; i < program.ranks[r].numOps; ++i) {
      const ProgramOp &op = program.ranks[r].ops[i];
      if (op.kind == OpCode::F && op.microbatch >= 0 && op.microbatch < program.numMicrobatches &&
          op.stage >= 0 && op.stage < program.numStages)
        placement[op.microbatch][op.stage] = {r, op.chunk};
    }
  std::vector<int32_t> index(placement.size());
  int32_t begin = 0;
  for (int32_t m = 0; m < int32_t(placement.size()); ++m) {
    if (m > 0 && placement[m] != placement[m - 1])
      begin = m;
    index[m] = m - begin;
  }
  return index;
}

std::string label(const ProgramOp &op, const std::vector<int32_t> &flowIndex) {
  int32_t m = op.microbatch >= 0 && op.microbatch < int32_t(flowIndex.size())
                  ? flowIndex[op.microbatch]
                  : op.microbatch;
  return opCodeName(op.kind) + std::to_string(op.chunk) + "." + std::to_string(m);
}

struct Step {
  int rank;
  uint32_t first, count; // ops
  double start, end;
};

void append(std::string &out, const char *format, ...) __attribute__((format(printf, 2, 3)));
void append(std::string &out, const char *format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  out.append(buffer, size_t(std::clamp(n, 0, int(sizeof buffer) - 1)));
}

} // namespace

std::string opLabel(const Program &program, int rank, uint32_t op) {
  return label(program.ranks[rank].ops[op], flowIndices(program));
}

std::string traceJson(const Program &program, const std::vector<OpTiming> &timings) {
  std::vector<int32_t> flowIndex = flowIndices(program);
  // Steps as the simulator has them: an overlap pair is one step, whether the
  // executor timed it as a whole (CPU) or its halves apart (CUDA streams).
  std::vector<Step> steps;
  std::vector<std::vector<int64_t>> stepOf(program.numRanks); // op -> step, -1: untimed
  for (int r = 0; r < program.numRanks; ++r)
    stepOf[r].assign(program.ranks[r].numOps, -1);
  for (const OpTiming &t : timings) {
    if (t.rank < 0 || t.rank >= program.numRanks || t.op >= program.ranks[t.rank].numOps)
      continue;
    const RankTable &table = program.ranks[t.rank];
    bool secondHalf = t.op > 0 && table.ops[t.op - 1].pairedWithNext;
    uint32_t first = secondHalf ? t.op - 1 : t.op;
    int64_t &id = stepOf[t.rank][first];
    if (id < 0) {
      uint32_t count = table.ops[first].pairedWithNext && first + 1 < table.numOps ? 2 : 1;
      id = int64_t(steps.size());
      steps.push_back({t.rank, first, count, t.startMicros, t.endMicros});
      if (count == 2)
        stepOf[t.rank][first + 1] = id;
    } else {
      steps[id].start = std::min(steps[id].start, t.startMicros);
      steps[id].end = std::max(steps[id].end, t.endMicros);
    }
    if (secondHalf)
      stepOf[t.rank][t.op] = id;
  }

  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  std::vector<bool> timed(program.numRanks, false);
  for (const Step &s : steps)
    timed[s.rank] = true;
  for (int r = 0; r < program.numRanks; ++r)
    if (timed[r]) {
      append(out, "{\"ph\": \"M\", \"pid\": %d, \"name\": \"process_name\", \"args\": {\"name\": \"rank %d\"}},\n", r, r);
      append(out, "{\"ph\": \"M\", \"pid\": %d, \"tid\": 0, \"name\": \"thread_name\", \"args\": {\"name\": \"compute\"}},\n", r);
    }
  for (const Step &s : steps) {
    const ProgramOp *ops = program.ranks[s.rank].ops;
    std::string name = s.count == 2 ? "FB(" + label(ops[s.first], flowIndex) + "|" +
                                          label(ops[s.first + 1], flowIndex) + ")"
                                    : label(ops[s.first], flowIndex);
    append(out, "{\"ph\": \"X\", \"pid\": %d, \"tid\": 0, \"name\": \"%s\", \"cat\": \"compute\", \"ts\": %.3f, \"dur\": %.3f},\n",
           s.rank, name.c_str(), s.start, s.end - s.start);
  }
  // A message leaves when its op ends (for an overlap pair, maybe before the
  // pair's step ends) and the consumer cannot end before it arrives: the arrow
  // starts inside the producer's slice at the latest time both allow, and ends
  // inside the consumer's slice no earlier than it started.
  auto stepAt = [&](int32_t rank, uint32_t op) -> const Step * {
    if (rank < 0 || rank >= program.numRanks || op >= stepOf[rank].size() || stepOf[rank][op] < 0)
      return nullptr;
    return &steps[size_t(stepOf[rank][op])];
  };
  for (uint32_t id = 0; id < program.numMessages; ++id) {
    const ProgramMessage &m = program.messages[id];
    const Step *producer = stepAt(m.from, m.producerOp), *consumer = stepAt(m.to, m.consumerOp);
    double sent = 0;
    if (producer) {
      sent = consumer ? std::min(producer->end, consumer->end) : producer->end;
      sent = std::max(producer->start, sent - 0.001);
      append(out, "{\"ph\": \"s\", \"id\": %u, \"pid\": %d, \"tid\": 0, \"name\": \"p2p\", \"cat\": \"p2p\", \"ts\": %.3f},\n",
             id, m.from, sent);
    }
    if (consumer) {
      double ts = producer ? std::clamp(sent, consumer->start, consumer->end) : consumer->start;
      append(out, "{\"ph\": \"f\", \"bp\": \"e\", \"id\": %u, \"pid\": %d, \"tid\": 0, \"name\": \"p2p\", \"cat\": \"p2p\", \"ts\": %.3f},\n",
             id, m.to, ts);
    }
  }
  if (out.size() >= 2 && out.compare(out.size() - 2, 2, ",\n") == 0)
    out.erase(out.size() - 2, 1);
  out += "]}\n";
  return out;
}

bool writeTrace(const std::string &path, const Program &program, const std::vector<OpTiming> &timings) {
  std::string json = traceJson(program, timings);
  auto failed = [&] {
    std::fprintf(stderr, "pipert: error: cannot write trace '%s': %s\n", path.c_str(), std::strerror(errno));
    return false;
  };
  errno = 0;
  // Opened non-blocking: a FIFO nobody reads is an error now (ENXIO), not a
  // write that waits forever; then blocking again, for fwrite.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0)
    return failed();
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::FILE *out = ::fdopen(fd, "w");
  if (!out) {
    ::close(fd);
    return failed();
  }
  bool written = std::fwrite(json.data(), 1, json.size(), out) == json.size() && std::fflush(out) == 0;
  int writeErrno = errno;
  if (std::fclose(out) != 0 || !written) {
    if (!written)
      errno = writeErrno;
    return failed();
  }
  return true;
}

} // namespace pipert
